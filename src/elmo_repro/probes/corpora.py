"""The probes' corpora and layer files, as the params name them (``probes`` section).

* WSD (Table 5): the data set directories of ``probes.wsd.train`` and ``.test``, under the data
  mirror, each holding ``<name>.data.xml`` and ``<name>.gold.key.txt`` (Raganato et al. 2017).
* POS (Table 6): the trees of ``probes.pos.treebank`` (under the mirror), split by WSJ document
  number (``probes.pos.split``); the biLM reads the words as running text spells them.
* Layer files: stage ``probe_features@<source>`` writes ``data/features/probes/<source>/``
  (``wsd/<data set>.hdf5``, ``ptb.hdf5``) in the biLM features' layout, every layer of the source.
  Probe layers are numbered as the paper numbers them: the biLM's 0 is the char CNN, 1 and 2 its
  biLSTM layers; CoVe's 1 and 2 are the MT-LSTM's layers (its file holds no layer 0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..data.ptb_pos import TaggedSentence, bilm_word, iter_tagged_trees, split_documents
from ..data.wsd import WSDDataset, read_wsd_dataset
from ..elmo.features import read_all
from ..io import InputError

FEATURES_DIR = Path("data/features/probes")
FIRST_LAYER = {"bilm": 0, "cove": 1}          # the layer number of a source's file index 0
LAYER_NAMES = {"bilm": {0: "char layer"}, "cove": {}}


def probe_source(params: dict[str, Any], source: str) -> dict[str, Any]:
    """The ``probes.sources`` entry of ``source`` (``model``, ``layers``).

    Raises:
        InputError: no such entry (naming params.yaml and the key path).
    """
    entry = params["probes"]["sources"].get(source)
    if entry is None:
        raise InputError("params.yaml", f"probes.sources: no entry {source!r} (defined: "
                         f"{', '.join(params['probes']['sources'])})")
    return entry


def layer_name(source: str, layer: int) -> str:
    """``biLM char layer``, ``biLM layer 2``, ``CoVe layer 1``."""
    title = {"bilm": "biLM", "cove": "CoVe"}[source]
    return f"{title} {LAYER_NAMES[source].get(layer, f'layer {layer}')}"


def wsd_datasets(params: dict[str, Any], part: str) -> dict[str, WSDDataset]:
    """The ``train`` or ``test`` data sets of ``probes.wsd``, by name, in the params' order."""
    mirror = Path(params["data"]["mirror"])
    sets = [read_wsd_dataset(mirror / directory) for directory in params["probes"]["wsd"][part]]
    return {dataset.name: dataset for dataset in sets}


def pos_trees(params: dict[str, Any]) -> list[TaggedSentence]:
    """Every sentence (no trace tokens) of ``probes.pos.treebank``, in the treebank's order: the
    order of ``ptb.hdf5``."""
    return list(iter_tagged_trees(Path(params["data"]["mirror"]) / params["probes"]["pos"]["treebank"]))


def pos_split(params: dict[str, Any], trees: list[TaggedSentence]) -> dict[str, list[int]]:
    """The indices into ``trees`` of each split (``train``, ``dev``, ``test``), by document number.

    Raises:
        ValueError: a document in no split.
    """
    where = {id(tree): i for i, tree in enumerate(trees)}
    split = {name: tuple(bounds) for name, bounds in params["probes"]["pos"]["split"].items()}
    return {name: [where[id(tree)] for tree in part] for name, part in split_documents(trees, split).items()}


def pos_words(sentence: TaggedSentence) -> list[str]:
    return [bilm_word(word) for word in sentence.words]


def answers_by_id(datasets: dict[str, WSDDataset], answers: dict[str, list]) -> dict[str, dict[str, str | None]]:
    """Per test set ``{instance id: sense key or None}`` (the scorer's answer file, as JSON)."""
    return {name: dict(zip((i.id for i in datasets[name].instances), keys)) for name, keys in answers.items()}


def correct_bits(datasets: dict[str, WSDDataset], answers: dict[str, list]) -> dict[str, str]:
    """Per test set a string of ``1`` (the answer is a gold key) and ``0``, one per instance in
    order: what a paired significance test between two rows needs, without the answers."""
    return {name: "".join("1" if key in i.senses else "0" for key, i in zip(keys, datasets[name].instances))
            for name, keys in answers.items()}


def tag_ids(trees: list[TaggedSentence], split: dict[str, list[int]], tags: list[str]) -> dict[str, torch.Tensor]:
    """Per split ``(n_tokens,)`` int64 tag ids; a tag outside ``tags`` gets ``len(tags)`` (never
    predicted: an error)."""
    index = {tag: i for i, tag in enumerate(tags)}
    return {name: torch.tensor([index.get(t, len(tags)) for i in rows for t in trees[i].tags], dtype=torch.long)
            for name, rows in split.items()}


def wsd_feature_path(source: str, dataset: str) -> Path:
    return FEATURES_DIR / source / "wsd" / f"{dataset}.hdf5"


def ptb_feature_path(source: str) -> Path:
    return FEATURES_DIR / source / "ptb.hdf5"


def read_layer(path: str | Path, source: str, layer: int) -> list[torch.Tensor]:
    """One layer of every sentence of a layer file, float32, each ``(n_tokens, dim)``.

    Raises:
        ValueError: a layer the file does not hold (naming the file and the layers it has).
        InputError: a missing or unreadable file.
    """
    sentences = read_all(path)
    index = layer - FIRST_LAYER[source]
    available = sentences[0].shape[0] if sentences else 0
    if not 0 <= index < available:
        first = FIRST_LAYER[source]
        raise ValueError(f"{path}: {source} layer {layer} is not in the file (it holds layers "
                         f"{first} .. {first + available - 1})")
    return [torch.from_numpy(s[index].astype("float32")) for s in sentences]
