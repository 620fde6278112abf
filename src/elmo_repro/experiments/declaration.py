"""What a downstream task's declaration is made of (:mod:`elmo_repro.experiments.tasks` holds one
per task): :class:`TaskDeclaration`, the :class:`Prepare` stage it names, and the trainer's settings
every task's params section shares (:class:`TrainerConfig`). Imports only pydantic (no torch), so
rendering ``dvc.yaml`` and checking params stay fast.
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
    grad_clip: float = Field(gt=0)                       # gradient clip: the global norm's bound, or
    grad_clip_kind: Literal["norm", "value"] = "norm"    # with "value" each element's (allennlp grad_clipping)
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


# --- the declarations -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepare:
    """The stage that writes a task's examples (``stages.prepare --task <name>``)."""

    stage: str                                  # stage name, prepare_<corpus>
    inputs: tuple[str, ...]                     # paths under the data mirror it reads
    params: tuple[str, ...] = ("data",)         # params sections it reads
    metrics: tuple[str, ...] = ()               # metrics files it writes (kept in git)
    sources: tuple[str, ...] = ()               # repository files it reads (data that ships with the code)


@dataclass(frozen=True)
class TaskDeclaration:
    """One downstream task of the paper's Table 1, as data.

    ``placement`` is where the paper adds ELMo (§3.3; ``paper`` placements of an ELMo spec resolve
    to it: NER, SRL and coreference at the input; SST-5's BCN at the input and the integrator's
    output; SNLI's ESIM at the input and the input-encoding biLSTM's output, before the soft
    alignment; SQuAD's reader at the input and after the first, shared GRU, before the bidirectional
    attention, document-qa's append_before_atten); ``metric`` the primary metric (a run's
    ``metrics.json`` holds ``dev_<metric>`` and ``test_<metric>``); ``fields`` the examples' token
    lists the biLM embeds, each on its own.
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
    # Table 1's caption: how the row is measured (split, metric, selection, data), and the floor as
    # "<name>: <what it predicts>" (rows with the same floor after the name are named together)
    caption: str = ""
    floor_caption: str = ""
    secondary: tuple[tuple[str, str], ...] = ()  # other metrics beside the row: (metrics key, label)
    order: int = 0                              # place among the tasks: the DAG's, the caption's (the
                                                # paper's rows keep paper/table1.csv's order)

