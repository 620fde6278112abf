"""Every downstream task declared once: what the params schema, the run specs, the stage registry,
the tables and :func:`elmo_repro.tasks.base.get_task` know of a task without importing its code.

A declaration names the task, its row in the paper's Table 1 (title, primary metric), where the
paper adds ELMo (§3.3), how its examples are prepared from the data mirror (stage, mirror inputs,
params sections, metrics) and where they and their cached biLM layers live, and the pydantic model
of its ``tasks.<name>`` params section. A new task is its declaration here plus its package
``elmo_repro.tasks.<name>`` (reader, model, metric). This module imports only pydantic (no torch),
so rendering ``dvc.yaml`` and checking params stay fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from .strict import Strict


# --- the trainer's settings (training.trainer), shared by every task ------------------------------

class OptimizerConfig(Strict):
    name: Literal["adam", "adadelta", "sgd"]
    lr: float = Field(gt=0)
    weight_decay: float = Field(default=0.0, ge=0)
    momentum: float | None = Field(default=None, ge=0)   # sgd only
    rho: float | None = Field(default=None, gt=0, lt=1)  # adadelta only

    @model_validator(mode="after")
    def _check(self) -> "OptimizerConfig":
        for key, name in (("momentum", "sgd"), ("rho", "adadelta")):
            if getattr(self, key) is not None and self.name != name:
                raise ValueError(f"{key}: only for name: {name}")
        return self


class PlateauConfig(Strict):
    """Halve (``factor``) the learning rate when the dev metric has not improved for ``patience``
    epochs (torch ReduceLROnPlateau, mode max; ESIM's allennlp schedule: 0.5, 0)."""

    factor: float = Field(gt=0, lt=1)
    patience: int = Field(ge=0)


class TrainerConfig(Strict):
    """``tasks.<task>.trainer`` (training.trainer)."""

    epochs: int = Field(ge=1)
    batch_size: int = Field(ge=1)                        # training examples per update
    eval_batch_size: int = Field(ge=1)
    optimizer: OptimizerConfig
    grad_clip: float = Field(gt=0)                       # gradient-norm clip
    max_train_examples: int = Field(ge=0)                # 0 = all
    lr_plateau: PlateauConfig | None = None              # None: a constant learning rate
    ema: float | None = Field(default=None, ge=0, lt=1)  # decay of a weight average used for evaluation
                                                         # (document-qa: 0.999); None: the trained weights
    patience: int | None = Field(default=None, ge=1)     # stop after this many epochs without a better dev
                                                         # metric (allennlp's patience); None: run every epoch
    # a run on a fraction of the training set: "epochs" = the full run's passes (fewer updates),
    # "updates" = each epoch as many updates as a full-data epoch (training.trainer)
    small_data: Literal["epochs", "updates"] = "epochs"


VectorsPath = Annotated[str, Field(min_length=1)]        # a word2vec/GloVe text file


# --- NER: CoNLL-2003 BiLSTM-CRF (tasks/ner) -------------------------------------------------------

class NerModelConfig(Strict):
    char_embedding_dim: int = Field(ge=1)
    char_filters: int = Field(ge=1)
    char_kernel: int = Field(ge=1)                       # characters per convolution window
    lstm_hidden: int = Field(ge=1)                       # per direction
    lstm_layers: int = Field(ge=1)
    dropout: float = Field(ge=0, lt=1)


class NerConfig(Strict):
    vectors: VectorsPath
    trainer: TrainerConfig
    model: NerModelConfig


# --- SST-5: the biattentive classification network (tasks/sst5) -----------------------------------

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


# --- SNLI: ESIM (tasks/snli) ----------------------------------------------------------------------

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


# --- SQuAD: BiDAF + self-attention (tasks/squad) -------------------------------------------------

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


# --- SRL: He et al.'s deep highway BiLSTM (tasks/srl) ---------------------------------------------

class SrlDataConfig(Strict):
    """What stage ``prepare_srl`` reads (``elmo_repro.data.conll2005``)."""

    max_train_sentences: int = Field(ge=0)               # 0 = all 39,832; else the nested cap spread over
                                                         # WSJ 02-21 (data.conll2005.cap_sentences)


class SrlModelConfig(Strict):
    """He et al.'s tagger (tasks/srl/model.py)."""

    predicate_dim: int = Field(ge=1)                     # the predicate indicator's embedding (He et al.: 100)
    lstm_hidden: int = Field(ge=1)                       # per layer (He et al.: 300)
    lstm_layers: int = Field(ge=1)                       # alternating directions (He et al.: 8)
    recurrent_dropout: float = Field(ge=0, lt=1)         # variational, per sequence and layer (0.1)
    embedding_dropout: float = Field(ge=0, lt=1)         # on [word ; predicate] (allennlp-models: 0.1)


class SrlConfig(Strict):
    vectors: VectorsPath
    data: SrlDataConfig
    trainer: TrainerConfig
    model: SrlModelConfig


# --- Coreference: Lee et al.'s end-to-end span ranking (tasks/coref) -------------------------------

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


# --- the declarations -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Prepare:
    """The stage that writes a task's examples from the data mirror."""

    stage: str                                  # stage name = its module in stages/
    inputs: tuple[str, ...]                     # paths under the data mirror it reads
    params: tuple[str, ...] = ("data",)         # params sections it reads
    metrics: tuple[str, ...] = ()               # metrics files it writes (kept in git)


@dataclass(frozen=True)
class TaskDeclaration:
    """One downstream task of the paper's Table 1, as data.

    ``placement`` is where the paper adds ELMo (§3.3; ``paper`` placements of an ELMo spec resolve
    to it); ``metric`` the primary metric (a run's ``metrics.json`` holds ``dev_<metric>`` and
    ``test_<metric>``); ``fields`` the examples' token lists the biLM embeds, each on its own.
    """

    name: str                                   # registry name, the row key of paper/table1.csv
    title: str                                  # the paper's row name
    metric: str
    placement: Literal["input", "output", "both"]
    data_dir: str                               # data/<dir>/<split>.{jsonl,texts.jsonl} (a stage output)
    features_dir: str                           # <features_dir>/<biLM>/<split>.hdf5: each text's layers
    prepare: Prepare
    config: type[Strict]                        # the model of params section tasks.<name>
    fields: tuple[str, ...] = ("tokens",)      # a field may hold a list of texts (a document's sentences)


# Placements as the paper (§3.3): NER at the input; SST-5 (BCN) at the input and the integrator's
# output; SNLI (ESIM) at the input and the input-encoding biLSTM's output, before the soft alignment;
# SQuAD (Clark and Gardner) at the input and after the first (shared) GRU, before the bidirectional
# attention (document-qa's append_before_atten); SRL (He et al.) and coreference (Lee et al.) at the
# input.
TASKS: dict[str, TaskDeclaration] = {task.name: task for task in (
    TaskDeclaration(
        name="ner", title="NER", metric="f1", placement="input",
        data_dir="data/conll2003", features_dir="data/features/conll2003",
        prepare=Prepare("prepare_conll2003", ("conll2003/eng.train", "conll2003/eng.testa", "conll2003/eng.testb")),
        config=NerConfig),
    TaskDeclaration(
        name="sst5", title="SST-5", metric="accuracy", placement="both",
        data_dir="data/sst5", features_dir="data/features/sst5",
        prepare=Prepare("prepare_sst5", ("sst5/trees",), ("data", "tasks.sst5.data"),
                        ("results/metrics/sst5_data.json",)),
        config=Sst5Config),
    TaskDeclaration(
        name="snli", title="SNLI", metric="accuracy", placement="both",
        data_dir="data/snli", features_dir="data/features/snli",
        prepare=Prepare("prepare_snli", ("snli",), ("data", "tasks.snli.data"),
                        ("results/metrics/snli_data.json",)),
        config=SnliConfig, fields=("premise", "hypothesis")),
    TaskDeclaration(
        name="squad", title="SQuAD", metric="f1", placement="both",
        data_dir="data/squad", features_dir="data/features/squad",
        prepare=Prepare("prepare_squad", ("squad_v1.1",), ("data", "tasks.squad.data"),
                        ("results/metrics/squad_data.json",)),
        config=SquadConfig, fields=("question", "context")),
    TaskDeclaration(
        name="srl", title="SRL", metric="f1", placement="input",
        data_dir="data/srl", features_dir="data/features/srl",
        prepare=Prepare("prepare_srl", tuple(f"srl_conll2005/{part}/{kind}" for part in ("train", "devel", "test.wsj",
                                                                                          "test.brown")
                                             for kind in ("words", "props")), ("data", "tasks.srl.data"),
                        ("results/metrics/srl_data.json",)),
        config=SrlConfig),
    TaskDeclaration(
        name="coref", title="Coref", metric="avg_f1", placement="input",
        data_dir="data/coref", features_dir="data/features/coref",
        prepare=Prepare("prepare_coref", ("litbank_coref/conll",), ("data", "tasks.coref.data"),
                        ("results/metrics/coref_data.json",)),
        config=CorefConfig, fields=("sentences",)),
)}
TASK_NAMES = tuple(TASKS)


def declaration(name: str) -> TaskDeclaration:
    """The declaration of task ``name``.

    Raises:
        ValueError: an unknown task (the known ones are listed).
    """
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name]
