"""Task ``squad``: SQuAD, Clark and Gardner's reader, BiDAF + self-attention (``elmo_repro/tasks/squad/``).

The model of its params section ``tasks.squad`` and its declaration. Torch-free: the params schema
and the stage registry read it without the task's code.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from ..declaration import Prepare, TaskDeclaration, TrainerConfig, VectorsPath
from ..strict import Strict


ArticleTitle = Annotated[str, Field(min_length=1)]


class SquadDataConfig(Strict):
    """Where SQuAD's parts come from (stage ``prepare_squad``)."""

    source: Literal["dev", "official"]                   # dev: the mirror's dev file split by article;
                                                         # official: the train and dev files
    selection: list[ArticleTitle] = Field(min_length=1)  # articles of the selection part (the runs' "dev"),
                                                         # from the dev file (dev) or the train file (official)
    report: list[ArticleTitle]                           # source dev: articles of the report part (the runs'
                                                         # "test"); official: empty (the dev file is reported)
    max_train_questions: int = Field(ge=0)               # 0 = all; else whole paragraphs, round-robin over
                                                         # the training articles, until the next would exceed it

    @model_validator(mode="after")
    def _check(self) -> "SquadDataConfig":
        if self.source == "dev" and not self.report:
            raise ValueError("report: source dev needs the report part's article titles")
        if self.source == "official" and self.report:
            raise ValueError("report: source official reports the official dev file; leave report empty")
        twice = sorted(set(self.selection) & set(self.report))
        if twice:
            raise ValueError(f"selection and report both name {', '.join(twice)}")
        return self


class SquadModelConfig(Strict):
    """Clark and Gardner's reader (tasks/squad/model.py)."""

    freeze_embeddings: bool                              # document-qa keeps GloVe fixed
    char_embedding_dim: int = Field(ge=1)
    char_filters: int = Field(ge=1)
    char_kernel: int = Field(ge=1)
    hidden: int = Field(ge=1)                            # GRU units per direction (document-qa: 90)
    dropout: float = Field(ge=0, lt=1)                   # variational dropout (document-qa: 0.2)
    max_span_tokens: int = Field(ge=1)                   # decoding: end < start + this (document-qa: 17)


class SquadConfig(Strict):
    vectors: VectorsPath
    data: SquadDataConfig
    trainer: TrainerConfig
    model: SquadModelConfig


DECLARATION = TaskDeclaration(
    name="squad", title="SQuAD", metric="f1", placement="both",
    data_dir="data/squad", features_dir="data/features/squad",
    prepare=Prepare("prepare_squad", ("squad_v1.1",), ("data", "tasks.squad.data"),
                    ("results/metrics/squad_data.json",)),
    config=SquadConfig, fields=("question", "context"),
    caption=('SQuAD v1.1 F1 as the official script, on the report part, selected on the selection part (the '
             "profile's `tasks.squad.data`: the tiny profile splits the official dev file by article: 16 "
             'articles reported, 4 for selection, the other 28 for training; the paper reports the hidden test '
             'set)'),
    floor_caption="SQuAD: Rajpurkar et al.'s sliding window over in-sentence spans",
    secondary=(("em", "exact match"),),
    order=4)
