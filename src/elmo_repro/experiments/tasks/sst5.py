"""Task ``sst5``: SST-5, the biattentive classification network (its code: ``elmo_repro/tasks/sst5/``).

The model of its params section ``tasks.sst5`` and its declaration. Torch-free: the params schema
and the stage registry read it without the task's code.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from ..declaration import Prepare, TaskDeclaration, TrainerConfig, VectorsPath
from ..strict import Strict


class Sst5DataConfig(Strict):
    phrases: bool                                        # train on every subtree (allennlp use_subtrees)


class BcnModelConfig(Strict):
    """The biattentive classification network (tasks/sst5/model.py)."""

    freeze_embeddings: bool                              # the original keeps GloVe fixed
    embedding_dropout: float = Field(ge=0, lt=1)
    pre_encode_dim: int = Field(ge=1)
    pre_encode_dropout: float = Field(ge=0, lt=1)
    encoder_hidden: int = Field(ge=1)                    # per direction
    integrator_hidden: int = Field(ge=1)
    integrator_dropout: float = Field(ge=0, lt=1)
    output_dims: list[Annotated[int, Field(ge=1)]]       # hidden maxout widths (then one of 5 classes)
    output_pool_size: int = Field(ge=1)
    output_dropout: list[Annotated[float, Field(ge=0, lt=1)]]   # one per maxout layer, the last included

    @model_validator(mode="after")
    def _check(self) -> "BcnModelConfig":
        if len(self.output_dropout) != len(self.output_dims) + 1:
            raise ValueError(f"output_dropout: one rate per maxout layer ({len(self.output_dims) + 1}: "
                             f"the output_dims and the class layer), got {len(self.output_dropout)}")
        return self


class Sst5Config(Strict):
    vectors: VectorsPath
    data: Sst5DataConfig
    trainer: TrainerConfig
    model: BcnModelConfig


DECLARATION = TaskDeclaration(
    name="sst5", title="SST-5", metric="accuracy", placement="both",
    data_dir="data/sst5", features_dir="data/features/sst5",
    prepare=Prepare("prepare_sst5", ("sst5/trees",), ("data", "tasks.sst5.data"),
                    ("results/metrics/sst5_data.json",)),
    config=Sst5Config,
    caption=('SST-5 sentence accuracy on test, selected on dev'),
    floor_caption="SST-5: the training set's majority class",
    order=2)
