"""The WSD evaluation framework of Raganato et al. (2017): sentences, target instances and gold
WordNet 3.0 sense keys, for the word sense disambiguation probe (paper §5.3, Table 5).

Each data set is ``<name>/<name>.data.xml`` (``corpus/text/sentence`` holding ``wf`` words and
``instance`` targets, each with ``lemma`` and a universal ``pos``: NOUN, VERB, ADJ, ADV) and
``<name>/<name>.gold.key.txt`` (``instance_id sensekey [sensekey ...]``: an instance may have
several correct senses; the official scorer counts an answer correct when it is any of them).

SemCor, the paper's training corpus, is not in the mirror; :data:`DEFAULT_TRAIN` /
:data:`DEFAULT_TEST` are the documented fallback split (the older Senseval sets train, the
SemEval sets test), and any data set in the same format (SemCor at a configured path) can take
the training side.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from ..io import InputError, iter_lines

# The paper's Table 5 "ALL" pools four of Raganato et al.'s five sets and leaves SemEval-2007 out
# (its WordNet first-sense 65.9 is that pool); Table 5's ``paper_pool_f1`` pools our test sets alike.
PAPER_POOL_LEAVES_OUT = ("semeval2007",)

DATASETS = ("senseval2", "senseval3", "semeval2007", "semeval2013", "semeval2015")
DEFAULT_TRAIN = ("senseval2", "senseval3")
DEFAULT_TEST = ("semeval2007", "semeval2013", "semeval2015")
POS = ("NOUN", "VERB", "ADJ", "ADV")          # the targets' universal POS tags


@dataclass(frozen=True)
class Instance:
    """One target word: where it is, its lemma and POS, and its gold sense keys."""

    id: str
    sentence: int            # index into the data set's sentences
    token: int               # index into that sentence's tokens: the target's first word
    lemma: str
    pos: str                 # one of POS
    senses: tuple[str, ...]  # gold WordNet 3.0 sense keys, at least one
    n_words: int = 1         # a multi-word target ("made up", "greenhouse gases") spans several tokens


@dataclass(frozen=True)
class WSDDataset:
    name: str
    sentences: list[list[str]]
    instances: list[Instance]


def read_gold_keys(path: str | Path) -> dict[str, tuple[str, ...]]:
    """``instance id -> sense keys`` of a ``*.gold.key.txt`` file.

    Raises:
        InputError: a line without a sense key, or an instance listed twice (naming the line).
    """
    gold: dict[str, tuple[str, ...]] = {}
    for number, line in iter_lines(path):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 2 or any("%" not in key for key in fields[1:]):
            raise InputError(path, "expected 'instance_id sensekey [sensekey ...]' with WordNet "
                             "sense keys (lemma%ss_type:...)", line=number)
        if fields[0] in gold:
            raise InputError(path, f"instance {fields[0]} listed twice", line=number)
        gold[fields[0]] = tuple(key.lower() for key in fields[1:])
    return gold


def read_wsd_dataset(directory: str | Path, name: str | None = None) -> WSDDataset:
    """The sentences and gold-annotated instances of one data set directory.

    Args:
        directory: ``.../<name>`` holding ``<name>.data.xml`` and ``<name>.gold.key.txt``.
        name: the file stem; by default the stem of the directory's one ``*.data.xml``, else the
            directory's name.

    Raises:
        InputError: a missing or malformed file (naming it), an instance without a lemma, with a POS
            outside :data:`POS` or without a gold key, or a gold key for no instance.
    """
    directory = Path(directory)
    if name is None:        # Raganato's SemCor: SemCor/semcor.data.xml; the test sets: name/name.data.xml
        stems = [p.name[:-len(".data.xml")] for p in directory.glob("*.data.xml")]
        name = stems[0] if len(stems) == 1 else directory.name
    xml_path, gold_path = directory / f"{name}.data.xml", directory / f"{name}.gold.key.txt"
    if not xml_path.is_file():
        raise InputError(xml_path, "file not found (a WSD data set: <name>.data.xml)")
    gold = read_gold_keys(gold_path)
    try:
        root = ElementTree.parse(xml_path).getroot()
    except ElementTree.ParseError as err:
        raise InputError(xml_path, f"not valid XML ({err})") from None
    sentences: list[list[str]] = []
    instances: list[Instance] = []
    for sentence in root.iter("sentence"):
        tokens: list[str] = []
        for node in sentence:
            if node.tag not in ("wf", "instance"):
                continue
            words = (node.text or "").split()      # a multi-word expression becomes its words
            if not words:
                raise InputError(xml_path, f"an empty word in sentence {sentence.get('id')}")
            if node.tag == "instance":
                key = node.get("id", "")
                lemma, pos = node.get("lemma", ""), node.get("pos", "")
                if not lemma or pos not in POS:
                    raise InputError(xml_path, f"instance {key!r}: needs a lemma and a POS in {POS}, "
                                     f"got lemma={lemma!r} pos={pos!r}")
                if key not in gold:
                    raise InputError(gold_path, f"no gold sense for instance {key!r} of {xml_path.name}")
                instances.append(Instance(key, len(sentences), len(tokens), lemma.lower(), pos, gold.pop(key),
                                          len(words)))
            tokens.extend(words)
        if tokens:
            sentences.append(tokens)
    if gold:
        raise InputError(gold_path, f"{len(gold)} gold key(s) for instances not in {xml_path.name}, "
                         f"e.g. {next(iter(gold))!r}")
    return WSDDataset(name, sentences, instances)
