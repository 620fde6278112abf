"""The params sections of CoVe and the per-layer probes (paper §5.3, Tables 4-6): ``cove`` and
``probes``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from ..experiments.strict import Strict
from .sections import WordVectorsSection, distinct



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
        distinct("layers", self.layers)
        if min(self.layers) < 0:
            raise ValueError("layers: a layer index is >= 0")
        return self


class WsdProbeConfig(Strict):
    train: list[str] = Field(min_length=1)               # data set directories under the mirror
    test: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> "WsdProbeConfig":
        distinct("train + test", self.train + self.test)   # never a test instance in training
        return self


def _document_range(value: list[int]) -> list[int]:
    if len(value) != 2 or not 0 <= value[0] <= value[1]:
        raise ValueError(f"expected [first, last] WSJ document numbers, first <= last, got {value}")
    return value


class PosProbeConfig(Strict):
    treebank: str = Field(min_length=1)                  # under the mirror: a zip or a directory of wsj_*.mrg
    split: dict[Literal["train", "dev", "test"], Annotated[list[int], AfterValidator(_document_range)]]
    seeds: list[int] = Field(min_length=1)
    max_epochs: int = Field(ge=1)                        # the most passes; a probe still improving is †
    patience: int = Field(ge=1)                          # stop after this many epochs without a better dev
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0)

    @model_validator(mode="after")
    def _check(self) -> "PosProbeConfig":
        distinct("seeds", self.seeds)
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
