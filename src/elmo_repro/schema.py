"""The schema of ``params.yaml``: one strict pydantic model per section.

An unknown key, a wrong type, an out-of-domain number, an unknown task, ELMo spec or placement,
or a ``runs`` section that no longer matches ``tables``/``elmo_specs`` fails at once, naming the
key path::

    params.yaml: tasks.ner.model.lstm_layer: unknown key; did you mean lstm_layers?

Adding a task = adding its model to :data:`TASK_SCHEMAS`; adding a table = adding its model to
:data:`TABLE_SCHEMAS`. This module imports only pydantic, the standard library, :mod:`.io` and
:mod:`.experiments.specs` (no torch, numpy or h5py), so a bad file fails in well under a second.
"""

from __future__ import annotations

import difflib
import re
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError,
                      create_model, model_validator)

from .experiments.specs import (BILMS, NO_ELMO, TASKS, ElmoSpec, RunSpec, Strict, TableRuns, render_elmo_features,
                                render_finetune_tasks, render_runs)
from .io import InputError

# Names the data code accepts, repeated here so validation never imports it (the unit tests check
# that they match data.lm_corpus.SOURCES / HELDOUT and data.eval_text.SPLITS).
LM_SOURCES = ("lm1b_dev", "brown", "abc", "lm1b_train")
HELDOUT_TEXTS = ("lm1b_test_sections", "lm1b_heldout_00000")
EVAL_SPLITS = ("conll2003_testa", "conll2003_testb", "sst5_dev", "sst5_test", "snli_dev", "snli_test",
               "squad_dev", "conll2005_dev", "conll2005_test_wsj", "conll2005_test_brown", "litbank",
               "wsd_senseval2", "wsd_senseval3", "wsd_semeval2007", "wsd_semeval2013", "wsd_semeval2015",
               "ptb_wsj_sample", "multi30k_val", "multi30k_test")
REFRESH = "python -m workflow.profile --refresh"


def _distinct(name: str, values: list) -> None:
    repeated = sorted({str(v) for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"{name}: listed twice: {', '.join(repeated)}")


# --- data ---------------------------------------------------------------------------------------

class DataSection(Strict):
    mirror: str = Field(min_length=1)                    # a directory laid out like shared/data


class LmDataSection(Strict):
    train_sources: list[Literal[LM_SOURCES]] = Field(min_length=1)  # concatenated as the biLM text
    heldout: Literal[HELDOUT_TEXTS]                      # the perplexity text
    heldout_max_tokens: int = Field(ge=0)                # tokens excl. </S>; 0 = all

    @model_validator(mode="after")
    def _check(self) -> "LmDataSection":
        _distinct("train_sources", self.train_sources)
        return self


class ContaminationSection(Strict):
    min_words: int = Field(ge=1)                         # shorter shared sentences are not leaks
    splits: list[Literal[EVAL_SPLITS]]                   # evaluation splits kept out of training text

    @model_validator(mode="after")
    def _check(self) -> "ContaminationSection":
        _distinct("splits", self.splits)
        return self


class VocabSection(Strict):
    min_count: int = Field(ge=1)                         # rarer training tokens map to <UNK>
    max_size: int = Field(ge=0)                          # types incl. <S> </S> <UNK>; 0 = no cap


# --- biLM (bilm-tf options.json layout, see bilm.model.BiLMConfig.from_options) ------------------

CnnFilter = Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=2, max_length=2)]


class CharEmbedding(Strict):
    dim: int = Field(ge=1)                               # character embedding size


class CharCnnConfig(Strict):
    activation: Literal["relu", "tanh"]
    embedding: CharEmbedding
    filters: list[CnnFilter] = Field(min_length=1)       # [[width, number of filters], ...]
    max_characters_per_token: int = Field(ge=3)          # character slots incl. begin/end of word
    n_characters: int = Field(ge=262)                    # ids 0..261 occur (data.character_ids)
    n_highway: int = Field(ge=0)

    @model_validator(mode="after")
    def _check(self) -> "CharCnnConfig":
        too_wide = [width for width, _ in self.filters if width > self.max_characters_per_token]
        if too_wide:
            raise ValueError(f"filters: widths {too_wide} exceed max_characters_per_token="
                             f"{self.max_characters_per_token}")
        return self


class LstmConfig(Strict):
    dim: int = Field(ge=1)                               # LSTM cells per layer
    projection_dim: int = Field(ge=1)                    # projection (and token embedding) size
    n_layers: int = Field(ge=1)
    cell_clip: float | None = Field(gt=0)                # null = no clipping
    proj_clip: float | None = Field(gt=0)                # null = no clipping
    use_skip_connections: bool


class BilmSection(Strict):
    char_cnn: CharCnnConfig
    lstm: LstmConfig
    dropout: float = Field(ge=0, lt=1)


class PretrainSection(Strict):
    seed: int = Field(ge=0)
    token_budget: int = Field(ge=0)                      # target tokens per direction; used when epochs is 0
    epochs: float = Field(ge=0)                          # > 0: passes over the training text instead
    batch_size: int = Field(ge=1)                        # sequences per rank
    unroll_steps: int = Field(ge=1)                      # tokens per sequence (truncated BPTT)
    n_negative_samples: int = Field(ge=1)                # sampled-softmax negatives per batch
    learning_rate: float = Field(gt=0)                   # Adagrad
    initial_accumulator: float = Field(ge=0)             # Adagrad
    grad_clip: float = Field(gt=0)                       # global gradient-norm clip
    softmax_bias_init: Literal["zeros", "unigram"]
    precision: Literal["fp32", "bf16"]                   # bf16: autocast, CUDA only
    checkpoint_every: int = Field(ge=1)                  # batches
    log_every: int = Field(ge=1)                         # batches

    @model_validator(mode="after")
    def _check(self) -> "PretrainSection":
        if self.epochs == 0 and self.token_budget == 0:
            raise ValueError("token_budget: must be > 0 when epochs is 0 (or set epochs)")
        return self


class FinetuneSection(Strict):                           # domain fine-tuning (paper §3.4); else as pretrain
    epochs: float = Field(ge=0)                          # passes over the task's training text (paper: ~1)
    token_budget: int = Field(ge=0)                      # target tokens per direction; used when epochs is 0
    checkpoint_every: int = Field(ge=1)                  # batches
    log_every: int = Field(ge=1)                         # batches

    @model_validator(mode="after")
    def _check(self) -> "FinetuneSection":
        if self.epochs == 0 and self.token_budget == 0:
            raise ValueError("token_budget: must be > 0 when epochs is 0 (or set epochs)")
        return self


class PerplexitySection(Strict):
    batch_size: int = Field(ge=1)                        # sentences per batch


class BilmSourceSection(Strict):
    path: str = Field(min_length=1)                      # trained here, or a released options.json + weights.hdf5


class FeaturesSection(Strict):
    dtype: Literal["float16", "float32"]                 # storage dtype of the HDF5 features
    batch_size: int = Field(ge=1)                        # sentences per biLM batch


class WordVectorsSection(Strict):                        # gensim word2vec
    dim: int = Field(ge=1)
    window: int = Field(ge=1)
    min_count: int = Field(ge=1)
    epochs: int = Field(ge=1)
    sg: int = Field(ge=0, le=1)                          # 1 = skip-gram, 0 = CBOW
    seed: int = Field(ge=0)


# --- CoVe and the probes (paper §5.3) ------------------------------------------------------------

class CoveDataConfig(Strict):
    max_train_pairs: int = Field(ge=0)                   # 0 = all decontaminated training pairs


class CoveModelConfig(Strict):                           # elmo_repro.cove.model.CoVeConfig
    hidden: int = Field(ge=1)                            # per encoder direction
    layers: int = Field(ge=1)
    target_dim: int = Field(ge=1)
    dropout: float = Field(ge=0, lt=1)


class CoveTrainerConfig(Strict):                         # elmo_repro.cove.train.CoVeTrainConfig
    epochs: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0)
    grad_clip: float = Field(gt=0)
    min_count: int = Field(ge=1)
    max_length: int = Field(ge=1)
    beam_size: int = Field(ge=1)
    seed: int = Field(ge=0)


class CoveSection(Strict):
    word_vectors: WordVectorsSection                     # stage cove_vectors (word2vec on the LM text)
    data: CoveDataConfig
    vectors: str = Field(min_length=1)                   # word2vec text format
    standardize_vectors: bool                            # per dimension mean 0, std 1 (a fixed map)
    model: CoveModelConfig
    trainer: CoveTrainerConfig


class ProbeSource(Strict):
    model: str = Field(min_length=1)                     # the biLM or CoVe directory
    layers: list[int] = Field(min_length=1)              # biLM: 0 (char CNN) .. n_layers; CoVe: 1 .. layers

    @model_validator(mode="after")
    def _check(self) -> "ProbeSource":
        _distinct("layers", self.layers)
        if min(self.layers) < 0:
            raise ValueError("layers: a layer index is >= 0")
        return self


class WsdProbeConfig(Strict):
    train: list[str] = Field(min_length=1)               # data set directories under the mirror
    test: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> "WsdProbeConfig":
        _distinct("train + test", self.train + self.test)   # never a test instance in training
        return self


def _document_range(value: list[int]) -> list[int]:
    if len(value) != 2 or not 0 <= value[0] <= value[1]:
        raise ValueError(f"expected [first, last] WSJ document numbers, first <= last, got {value}")
    return value


class PosProbeConfig(Strict):
    treebank: str = Field(min_length=1)                  # under the mirror: a zip or a directory of wsj_*.mrg
    split: dict[Literal["train", "dev", "test"], Annotated[list[int], AfterValidator(_document_range)]]
    seeds: list[int] = Field(min_length=1)
    epochs: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0)

    @model_validator(mode="after")
    def _check(self) -> "PosProbeConfig":
        _distinct("seeds", self.seeds)
        if set(self.split) != {"train", "dev", "test"}:
            raise ValueError("split: needs train, dev and test")
        ranges = sorted(self.split.values())
        if any(a[1] >= b[0] for a, b in zip(ranges, ranges[1:])):
            raise ValueError(f"split: the document ranges overlap: {self.split}")
        return self


class NeighboursConfig(Strict):
    queries: list[str] = Field(min_length=1)
    vectors: str = Field(min_length=1)                   # static word vectors, word2vec text format
    corpus: str = Field(min_length=1)                    # one tokenized sentence per line
    max_sentences: int = Field(ge=2)
    examples: int = Field(ge=1)
    k: int = Field(ge=1)
    layer: int = Field(ge=0)


class ProbesSection(Strict):
    wordnet: str = Field(min_length=1)                   # WordNet 3.0 dict/ directory
    sources: dict[Literal["bilm", "cove"], ProbeSource] = Field(min_length=1)
    wsd: WsdProbeConfig
    pos: PosProbeConfig
    neighbours: NeighboursConfig


# --- tasks ----------------------------------------------------------------------------------------

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


VectorsPath = Annotated[str, Field(min_length=1)]        # a word2vec/GloVe text file


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


TASK_SCHEMAS: dict[str, type[Strict]] = {"ner": NerConfig, "sst5": Sst5Config,   # one per TASKS
                                         "snli": SnliConfig}
TasksSection = create_model("TasksSection", __base__=Strict,
                            **{task: (schema, ...) for task, schema in TASK_SCHEMAS.items()})


# --- ELMo specs, tables, runs ---------------------------------------------------------------------

def _spec_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name == NO_ELMO:
        raise ValueError(f"not a valid ELMo spec name: use letters, digits and _ (it goes into run ids), "
                         f"not {NO_ELMO!r}")
    return name


ElmoSpecsSection = dict[Annotated[str, AfterValidator(_spec_name)], ElmoSpec]


class ElmoFeaturesEntry(Strict):                         # rendered from the runs (workflow.profile)
    task: str
    bilm: Literal[BILMS]
    model: str                                           # the biLM's directory
    data: str                                            # the task's prepared examples
    out: str                                             # the cached layers


class FinetuneTaskEntry(Strict):                         # rendered from the runs (workflow.profile)
    data: str
    out: str                                             # the fine-tuned biLM's directory


ElmoFeaturesSection = dict[str, ElmoFeaturesEntry]
FinetuneTasksSection = dict[str, FinetuneTaskEntry]


class TableSpec(Strict):
    runs: TableRuns                                      # the runs the table reads

    @model_validator(mode="after")
    def _check(self) -> "TableSpec":
        for task in self.runs.tasks:
            if task not in TASKS:
                raise ValueError(f"runs.tasks: unknown task {task!r}; known: {', '.join(TASKS)}")
        return self


class Table1Spec(TableSpec):
    elmo: str                                            # the +ELMo column's spec
    control: str | None                                  # the char-layer control's spec; null = none

    @model_validator(mode="after")
    def _listed(self) -> "Table1Spec":
        for key in ("elmo", "control"):
            name = getattr(self, key)
            if name == NO_ELMO:
                raise ValueError(f"{key}: must name an ELMo spec, not {NO_ELMO!r}")
            if name is not None and name not in self.runs.elmo:
                raise ValueError(f"{key}: {name!r} is not listed in runs.elmo")
        return self


class FinetuningTableSpec(Strict):
    """The fine-tuning table: per task the dev text's perplexity under the base and the fine-tuned
    biLM; with ``runs``, also the task metric of ``finetuned`` against ``base`` (two ELMo specs
    that differ in ``bilm``)."""

    runs: TableRuns | None = None
    finetuned: str | None = None
    base: str | None = None

    @model_validator(mode="after")
    def _check(self) -> "FinetuningTableSpec":
        if (self.runs is None) != (self.finetuned is None) or (self.runs is None) != (self.base is None):
            raise ValueError("runs, finetuned and base: give all three (the comparison) or none (perplexities only)")
        if self.runs is not None:
            for key in ("finetuned", "base"):
                if getattr(self, key) not in self.runs.elmo:
                    raise ValueError(f"{key}: {getattr(self, key)!r} is not listed in runs.elmo")
        return self


TABLE_SCHEMAS: dict[str, type] = {"table1": Table1Spec, "finetuning": FinetuningTableSpec}
TablesSection = create_model("TablesSection", __base__=Strict,   # every table is optional
                             **{table: (schema, None) for table, schema in TABLE_SCHEMAS.items()})

RunsSection = dict[str, dict[str, RunSpec]]              # {family: {run id: run spec}}, rendered


class Params(Strict):
    profile: str = Field(min_length=1)
    data: DataSection
    lm_data: LmDataSection
    contamination: ContaminationSection
    vocab: VocabSection
    bilm: BilmSection
    pretrain: PretrainSection
    finetune: FinetuneSection
    perplexity: PerplexitySection
    bilm_source: BilmSourceSection
    features: FeaturesSection
    word_vectors: WordVectorsSection
    cove: CoveSection
    probes: ProbesSection
    tasks: TasksSection
    elmo_specs: ElmoSpecsSection
    tables: TablesSection
    runs: RunsSection
    elmo_features: ElmoFeaturesSection
    finetune_tasks: FinetuneTasksSection


SECTIONS = tuple(Params.model_fields)
_KINDS = {("tasks",): "task", ("tables",): "table", (): "section"}   # what an unknown key there is


# --- validation -----------------------------------------------------------------------------------

def validate_params(params: Any, source: str | Path = "params.yaml") -> None:
    """Check a whole parameter mapping against the schema and the cross-section rules.

    Raises:
        InputError: naming ``source`` and, one line per problem, ``<key.path>: <problem>``.
    """
    problems = _problems(Params, params, ())
    if not problems:
        problems = _cross_check(params)
    _raise(source, problems)


def validate_section(name: str, value: Any, source: str | Path = "params.yaml") -> None:
    """Check one section (its schema only; the cross-section rules need the whole file)."""
    if name not in Params.model_fields:
        _raise(source, [(name, _unknown_key(name, list(SECTIONS), "section"))])
    field = Params.model_fields[name]
    annotation = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
    _raise(source, _problems(annotation, value, (name,)))


def _raise(source: str | Path, problems: list[tuple[str, str]]) -> None:
    if problems:
        lines = [f"{path}: {problem}" if path else problem for path, problem in problems]
        raise InputError(source, f"\n{source}: ".join(lines))


def _adapter(tp: Any) -> TypeAdapter:
    is_model = isinstance(tp, type) and issubclass(tp, BaseModel)
    return TypeAdapter(tp) if is_model else TypeAdapter(tp, config=ConfigDict(strict=True))


def _problems(tp: Any, value: Any, prefix: tuple) -> list[tuple[str, str]]:
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
        problem = _unknown_key(loc[-1], _keys_at(root, loc[:-1]), _KINDS.get(where, "key"))
    elif kind == "missing":
        problem = f"missing {_KINDS.get(prefix + loc[:-1], 'key')}"
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


def _unknown_key(key: Any, allowed: list[str], kind: str) -> str:
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


def _cross_check(params: dict) -> list[tuple[str, str]]:
    """Rules across sections: tables name defined ELMo specs; ``runs`` is their rendering."""
    specs = params["elmo_specs"]
    problems = _probe_layer_problems(params)
    for table, spec in params["tables"].items():
        for i, name in enumerate((spec.get("runs") or {}).get("elmo", [])):
            if name != NO_ELMO and name not in specs:
                close = difflib.get_close_matches(name, list(specs), n=1)
                hint = f"did you mean {close[0]}?" if close else f"defined: {', '.join([NO_ELMO, *specs])}"
                problems.append((f"tables.{table}.runs.elmo[{i}]", f"unknown ELMo spec {name!r}; {hint}"))
    if problems:
        return problems
    stale = _first_difference(params["runs"], render_runs(params["tables"], specs))
    if stale:
        return [("runs", f"out of date with tables/elmo_specs; re-render with `{REFRESH}` ({stale})")]
    rendered = {"elmo_features": render_elmo_features(params["runs"], params["bilm_source"]["path"]),
                "finetune_tasks": render_finetune_tasks(params["runs"])}
    return [(name, f"out of date with runs and bilm_source; re-render with `{REFRESH}`")
            for name, value in rendered.items() if params[name] != value]


def _probe_layer_problems(params: dict) -> list[tuple[str, str]]:
    """A probed layer must exist: the biLM's 0 (char CNN) .. lstm.n_layers, CoVe's 1 .. model.layers;
    a run's fixed CoVe layer indexes its feature file: 0 .. model.layers - 1."""
    bounds = {"bilm": (0, params["bilm"]["lstm"]["n_layers"], "bilm.lstm.n_layers"),
              "cove": (1, params["cove"]["model"]["layers"], "cove.model.layers")}
    problems = []
    for source, entry in params["probes"]["sources"].items():
        low, high, key = bounds[source]
        for i, layer in enumerate(entry["layers"]):
            if not low <= layer <= high:
                problems.append((f"probes.sources.{source}.layers[{i}]",
                                 f"layer {layer} is outside the model: {low} .. {high} ({key})"))
    cove_layers = params["cove"]["model"]["layers"]
    for name, spec in params["elmo_specs"].items():       # a run's CoVe layers are its file's 0 .. L-1
        if spec.get("bilm") == "cove" and spec.get("mix") == "fixed" and (spec.get("layer") or 0) >= cove_layers:
            problems.append((f"elmo_specs.{name}.layer", f"CoVe's layers are 0 .. {cove_layers - 1} here (its "
                             "first biLSTM layer is 0: no char layer; cove.model.layers)"))
    neighbours = params["probes"]["neighbours"]["layer"]
    if neighbours > params["bilm"]["lstm"]["n_layers"]:
        problems.append(("probes.neighbours.layer", f"layer {neighbours} is outside the biLM: 0 .. "
                         f"{params['bilm']['lstm']['n_layers']} (bilm.lstm.n_layers)"))
    return problems


def _first_difference(runs: dict, rendered: dict) -> str | None:
    flat = {(fam, rid): spec for fam, items in runs.items() for rid, spec in items.items()}
    want = {(fam, rid): spec for fam, items in rendered.items() for rid, spec in items.items()}
    for key, spec in want.items():
        if key not in flat:
            return f"runs.{key[0]}.{key[1]}: missing"
        if flat[key] != spec:
            return f"runs.{key[0]}.{key[1]}: differs from its rendering"
    for key in flat:
        if key not in want:
            return f"runs.{key[0]}.{key[1]}: no table lists it"
    empty = [fam for fam in runs if fam not in rendered]   # a family left without runs
    return f"runs.{empty[0]}: no table lists it" if empty else None
