"""The params sections of the data, the biLM and its training: one strict model per section
(``data``, ``lm_data``, ``contamination``, ``vocab``, ``bilm``, ``pretrain``, ``finetune``,
``perplexity``, ``bilm_source``, ``features``, ``word_vectors``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from ..experiments.pretraining import FinetuneSection, PretrainSection  # noqa: F401  (sections of Params)
from ..experiments.strict import Strict
from ..experiments.tasks import TASKS

# Names the data code accepts, repeated here so validation never imports it (the unit tests check
# that they match data.lm_corpus.SOURCES / HELDOUT and data.eval_text.SPLITS).
LM_SOURCES = ("lm1b_dev", "brown", "abc", "lm1b_train")
HELDOUT_TEXTS = ("lm1b_test_sections", "lm1b_heldout_00000")
EVAL_SPLITS = ("conll2003_testa", "conll2003_testb", "sst5_dev", "sst5_test", "snli_dev", "snli_test",
               "squad_dev", "conll2005_dev", "conll2005_test_wsj", "conll2005_test_brown", "litbank",
               "wsd_senseval2", "wsd_senseval3", "wsd_semeval2007", "wsd_semeval2013", "wsd_semeval2015",
               "ptb_wsj_sample", "multi30k_val", "multi30k_test")


def distinct(name: str, values: list) -> None:
    repeated = sorted({str(v) for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"{name}: listed twice: {', '.join(repeated)}")


# --- data ---------------------------------------------------------------------------------------

class DataSection(Strict):
    mirror: str = Field(min_length=1)                    # a directory laid out like shared/data
    # tasks and evaluation splits whose licensed files the mirror lacks, with why (rendered by
    # `python -m workflow.profile NAME --free-data`; workflow/free_data.py): no stage reads them
    left_out: dict[str, str] = {}

    @model_validator(mode="after")
    def _check(self) -> "DataSection":
        unknown = sorted(set(self.left_out) - set(TASKS) - set(EVAL_SPLITS))
        if unknown:
            raise ValueError(f"left_out: {', '.join(unknown)} is neither a task ({', '.join(TASKS)}) nor an "
                             "evaluation split")
        return self


class LmDataSection(Strict):
    train_sources: list[Literal[LM_SOURCES]] = Field(min_length=1)  # concatenated as the biLM text
    heldout: Literal[HELDOUT_TEXTS]                      # the perplexity text
    heldout_max_tokens: int = Field(ge=0)                # tokens excl. </S>; 0 = all
    shard_tokens: int = Field(ge=1)                      # most tokens of a training-text shard

    @model_validator(mode="after")
    def _check(self) -> "LmDataSection":
        distinct("train_sources", self.train_sources)
        return self


class ContaminationSection(Strict):
    min_words: int = Field(ge=1)                         # shorter shared sentences are not leaks
    splits: list[Literal[EVAL_SPLITS]]                   # evaluation splits kept out of training text

    @model_validator(mode="after")
    def _check(self) -> "ContaminationSection":
        distinct("splits", self.splits)
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


class PerplexitySection(Strict):
    batch_size: int = Field(ge=1)                        # sentences per batch


class BilmSourceSection(Strict):
    path: str = Field(min_length=1)                      # trained here, or a released options.json + weights.hdf5


class StageResources(Strict):
    gpu: int = Field(default=0, ge=0)                    # GPUs (SLURM gres); only stages with a device path
    mem_mb: int = Field(ge=1)
    runtime: int = Field(ge=1)                           # minutes (SLURM time limit)


class ComputeSection(Strict):
    """How each stage runs (workflow/registry.py ``stage_resources``, ``compute_args``): the command
    that starts it (its launcher, ``--device cuda`` where it holds a GPU, ``--precision``) and what
    Snakemake's SLURM profile asks for. DVC sees the command; the resources are Snakemake's."""

    launcher: dict[str, str] = {}                        # stage -> runs `-m stages.<module>`; default python
    partitions: dict[Literal["cpu", "gpu"], str] = {}    # SLURM partition of stages without / with GPUs
    resources: dict[str, StageResources]                 # per stage (family) or module name; `default`
    precision: dict[str, Literal["fp32", "bf16"]] = {}   # per stage (family) or module name; default fp32

    @model_validator(mode="after")
    def _check(self) -> "ComputeSection":
        if "default" not in self.resources:
            raise ValueError("resources: give a `default` entry (the stages not listed)")
        return self


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
