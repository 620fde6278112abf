"""Task ``snli``: SNLI, ESIM (its code: ``elmo_repro/tasks/snli/``).

The model of its params section ``tasks.snli`` and its declaration. Torch-free: the params schema
and the stage registry read it without the task's code.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..declaration import Prepare, TaskDeclaration, TrainerConfig, VectorsPath
from ..strict import Strict


class SnliDataConfig(Strict):
    train_from: Literal["dev", "official"]               # dev: the mirror's dev minus a selection slice
    selection_premises: int = Field(ge=1)                # premises of the selection slice (train_from: dev)


class EsimModelConfig(Strict):
    """ESIM (tasks/snli/model.py)."""

    freeze_embeddings: bool
    dropout: float = Field(ge=0, lt=1)
    encoder_hidden: int = Field(ge=1)                    # per direction
    projection_dim: int = Field(ge=1)
    inference_hidden: int = Field(ge=1)
    output_hidden: int = Field(ge=1)


class SnliConfig(Strict):
    vectors: VectorsPath
    data: SnliDataConfig
    trainer: TrainerConfig
    model: EsimModelConfig


DECLARATION = TaskDeclaration(
    name="snli", title="SNLI", metric="accuracy", placement="both",
    data_dir="data/snli", features_dir="data/features/snli",
    prepare=Prepare("prepare_snli", ("snli",), ("data", "tasks.snli.data"),
                    ("results/metrics/snli_data.json",)),
    config=SnliConfig, fields=("premise", "hypothesis"),
    caption=("SNLI accuracy on test, selected on a slice of SNLI dev (the profile's `tasks.snli.data`; without "
             'the training split, the tiny profile trains on the rest of SNLI dev)'),
    floor_caption="SNLI: the training set's majority class",
    order=3)
