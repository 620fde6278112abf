"""Task ``coref``: coreference, Lee et al.'s end-to-end span ranking (its code: ``elmo_repro/tasks/coref/``).

The model of its params section ``tasks.coref`` and its declaration. Torch-free: the params schema
and the stage registry read it without the task's code.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from ..declaration import Prepare, TaskDeclaration, TrainerConfig, VectorsPath
from ..strict import Strict


class CorefDataConfig(Strict):
    """What stage ``prepare_coref`` reads: LitBank split by document (the mirror's 100 documents,
    sorted by name, the dev and test documents evenly spaced over them), or CoNLL-2012 OntoNotes."""

    source: Literal["litbank", "ontonotes"]
    ontonotes_dir: str | None = None                     # source ontonotes: {train,dev,test}.english.v4_gold_conll
    dev_documents: int = Field(ge=1)                     # litbank: the selection part
    test_documents: int = Field(ge=1)                    # litbank: the report part (issue 26: about 20)
    max_train_documents: int = Field(ge=0)               # 0 = all the others

    @model_validator(mode="after")
    def _check(self) -> "CorefDataConfig":
        if (self.source == "ontonotes") != (self.ontonotes_dir is not None):
            raise ValueError("ontonotes_dir: set exactly when source is ontonotes")
        return self


class CorefModelConfig(Strict):
    """Lee et al.'s model (tasks/coref/model.py; e2e-coref's experiments.conf in the comments)."""

    char_embedding_dim: int = Field(ge=1)                # 8
    char_filters: int = Field(ge=1)                      # 50 per kernel width
    char_kernels: list[Annotated[int, Field(ge=1)]] = Field(min_length=1)   # [3, 4, 5]
    lstm_hidden: int = Field(ge=1)                       # per direction (200)
    lstm_layers: int = Field(ge=1)                       # 1
    feature_dim: int = Field(ge=1)                       # span width and distance embeddings (20)
    ffnn_depth: int = Field(ge=0)                        # hidden layers of the scorers (2)
    ffnn_size: int = Field(ge=1)                         # 150
    dropout: float = Field(ge=0, lt=1)                   # 0.2
    lexical_dropout: float = Field(ge=0, lt=1)           # on the token embeddings (0.5)
    max_width: int = Field(ge=1)                         # span width in tokens (10)
    mention_ratio: float = Field(gt=0)                   # spans kept per document token (0.4)
    max_antecedents: int = Field(ge=1)                   # K, in training and evaluation (250)
    max_training_sentences: int = Field(ge=1)            # a training document's random window (50)


class CorefConfig(Strict):
    vectors: VectorsPath
    data: CorefDataConfig
    trainer: TrainerConfig
    model: CorefModelConfig


DECLARATION = TaskDeclaration(
    name="coref", title="Coref", metric="avg_f1", placement="input",
    data_dir="data/coref", features_dir="data/features/coref",
    prepare=Prepare("prepare_coref", ("litbank_coref/conll",), ("data", "tasks.coref.data"),
                    ("results/metrics/coref_data.json",)),
    config=CorefConfig, fields=("sentences",),
    caption=("coreference average F1 of MUC, B³ and CEAFφ4 (the CoNLL scorer v8.01's semantics) on LitBank "
             'fiction, 20 test documents, selected on 10, trained on the other 70 (a fixed split by document, '
             '`results/metrics/coref_data.json`), singletons removed from the key as OntoNotes has none (the '
             "scores with them beside; the paper's numbers are on CoNLL-2012 OntoNotes)"),
    floor_caption=('coreference: names clustered by identical string, first-person pronouns together, he/she'
                   ' to the nearest name before them'),
    secondary=(("muc_f1", "MUC F1"), ("b3_f1", "B³ F1"), ("ceafe_f1", "CEAFφ4 F1"),
               ("singletons_avg_f1", "average F1 with singletons in the key")),
    order=6)
