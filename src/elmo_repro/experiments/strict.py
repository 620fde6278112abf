"""The base of every params model: a strict, frozen pydantic mapping (its own file, so the task
declarations and the run specs both import it without importing each other)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """A params mapping: unknown keys and wrong types are errors (the key path names them)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
