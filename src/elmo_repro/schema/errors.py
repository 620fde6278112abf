"""The error engine of the params check: every pydantic error of a params mapping as
``(key path, problem)``, worded for people (unknown keys with "did you mean", YAML pitfalls), and
one :class:`~elmo_repro.io.InputError` that names the file and lists them all."""

from __future__ import annotations

import difflib
import re
import types
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from ..io import InputError

# What an unknown key at a key path is called in the message (an unknown task lists the known ones).
KINDS = {("tasks",): "task", ("tables",): "table", (): "section"}


def raise_problems(source: str | Path, problems: list[tuple[str, str]]) -> None:
    if problems:
        lines = [f"{path}: {problem}" if path else problem for path, problem in problems]
        raise InputError(source, f"\n{source}: ".join(lines))


def _adapter(tp: Any) -> TypeAdapter:
    is_model = isinstance(tp, type) and issubclass(tp, BaseModel)
    return TypeAdapter(tp) if is_model else TypeAdapter(tp, config=ConfigDict(strict=True))


def problems_of(tp: Any, value: Any, prefix: tuple) -> list[tuple[str, str]]:
    """``(key path, problem)`` for every schema violation of ``value`` (validated as ``tp``)."""
    try:
        _adapter(tp).validate_python(value)
    except ValidationError as err:
        return [_describe(tp, prefix, error) for error in err.errors(include_url=False)]
    return []


def _describe(root: Any, prefix: tuple, error: dict) -> tuple[str, str]:
    loc, kind, value = tuple(error["loc"]), error["type"], error.get("input")
    if kind == "extra_forbidden":
        where = prefix + loc[:-1]
        problem = unknown_key(loc[-1], _keys_at(root, loc[:-1]), KINDS.get(where, "key"))
    elif kind == "missing":
        problem = f"missing {KINDS.get(prefix + loc[:-1], 'key')}"
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        problem = f"expected a mapping, got {_show(value)}"
    elif kind == "value_error":
        problem = str(error["ctx"]["error"])
        if loc and loc[-1] == "[key]":
            loc = loc[:-1]
        else:   # the models' own checks start with the field they concern: "layer: ..."
            match = re.fullmatch(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*): (.+)", problem, re.S)
            if match:
                loc, problem = loc + tuple(match[1].split(".")), match[2]
    else:
        problem = f"{error['msg']} (got {_show(value)})"
        if kind == "literal_error" and isinstance(value, str):
            close = difflib.get_close_matches(value, re.findall(r"'([^']*)'", error["ctx"]["expected"]), n=1)
            problem += f"; did you mean {close[0]}?" if close else ""
        if kind == "float_type" and isinstance(value, str) and _is_number(value):
            problem += "; YAML reads a number without a dot (1e-3) as text: write 1.0e-3"
    return _path(prefix + loc), problem


def unknown_key(key: Any, allowed: list[str], kind: str) -> str:
    """``unknown key; did you mean X?``; an unknown section, task or table also lists the known ones."""
    close = difflib.get_close_matches(str(key), allowed, n=1)
    known = f"{'allowed' if kind == 'key' else 'known'}: {', '.join(allowed)}"
    if close:
        return f"unknown {kind}; did you mean {close[0]}?" + (f" ({known})" if kind != "key" else "")
    return f"unknown {kind}; {known}" if allowed else f"unknown {kind}"


def _keys_at(tp: Any, loc: tuple) -> list[str]:
    """The keys a mapping at ``loc`` (relative to type ``tp``) may hold, for "did you mean"."""
    for part in (*loc, None):
        while get_origin(tp) is Annotated or get_origin(tp) in (Union, types.UnionType):
            tp = next(arg for arg in get_args(tp) if arg is not type(None))
        if part is None:
            break
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if part not in tp.model_fields:
                return []
            tp = tp.model_fields[part].annotation
        elif get_origin(tp) in (dict, list):
            tp = get_args(tp)[-1]
        else:
            return []
    return list(tp.model_fields) if isinstance(tp, type) and issubclass(tp, BaseModel) else []


def _path(loc: tuple) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path


def _show(value: Any) -> str:
    text = repr(value)
    if len(text) <= 40:
        return text
    return {dict: "a mapping", list: "a list"}.get(type(value), type(value).__name__)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
