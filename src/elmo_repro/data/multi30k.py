"""Multi30k Task 1, English -> German (Elliott et al. 2016), the translation data of the CoVe
baseline (McCann et al. 2017 trained their smallest MT-LSTM on it; paper §5.3, Tables 5 and 6).

Read from ``multi30k/raw/{train,val,test_2016_flickr}.{en,de}.gz``: one raw, cased sentence per line,
the two languages parallel by line. The model trains on cased text tokenized with the 1B Word-style
(Moses-like) tokenizer of :mod:`elmo_repro.data.lm_corpus` on both sides; its German output is
detokenized and scored against the raw references (:mod:`elmo_repro.cove.bleu`). The ``tok/``
files are lower-cased and are not used.

Multi30k's English captions are Flickr30k's, and so are SNLI's premises: a training pair whose
English sentence is, by the contamination check's key, an SNLI dev or test sentence is dropped
(:func:`drop_held_out_pairs`), so no SNLI evaluation sentence is a CoVe training input.
"""

from __future__ import annotations

import gzip
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ..io import InputError
from .contamination import sentence_key
from .lm_corpus import tokenize

SPLIT_FILES = {"train": "train", "val": "val", "test": "test_2016_flickr"}
SIZES = {"train": 29_000, "val": 1_014, "test": 1_000}           # pairs, the data set's README

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"


@dataclass(frozen=True)
class Pair:
    line: int                # 1-based line in both files
    source: list[str]        # English tokens
    target: list[str]        # German tokens
    reference: str           # the raw German line (BLEU's reference)


def _lines(path: Path) -> list[str]:
    if not path.is_file():
        raise InputError(path, "file not found (Multi30k raw/<split>.<lang>.gz)")
    try:
        return gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()
    except (OSError, EOFError) as err:
        raise InputError(path, f"not a valid gzip file ({err})") from None
    except UnicodeDecodeError as err:
        raise InputError(path, f"not valid UTF-8 (byte {err.start})") from None


def read_pairs(directory: str | Path, split: str) -> list[Pair]:
    """The tokenized pairs of one split of ``multi30k/raw``.

    Raises:
        InputError: a missing or invalid file, files of different lengths, or an empty line on
            either side (naming the file and line).
        KeyError: a split outside ``train``, ``val``, ``test``.
    """
    stem = SPLIT_FILES[split]
    en_path, de_path = Path(directory) / f"{stem}.en.gz", Path(directory) / f"{stem}.de.gz"
    english, german = _lines(en_path), _lines(de_path)
    if len(english) != len(german):
        raise InputError(de_path, f"{len(german)} lines, but {en_path.name} has {len(english)}: not parallel")
    pairs = []
    for number, (en, de) in enumerate(zip(english, german), start=1):
        for path, text in ((en_path, en), (de_path, de)):
            if not text.strip():
                raise InputError(path, "an empty sentence", line=number)
        pairs.append(Pair(number, tokenize(en), tokenize(de), " ".join(de.split())))
    return pairs


def drop_held_out_pairs(pairs: Sequence[Pair], held_out: Iterable[Sequence[str]]) -> tuple[list[Pair], int]:
    """``pairs`` without those whose English sentence has the key of a held-out sentence, and how
    many were dropped (the SNLI dev and test sentences; :func:`~elmo_repro.data.contamination.sentence_key`)."""
    keys = {sentence_key(tokens) for tokens in held_out} - {""}
    kept = [pair for pair in pairs if sentence_key(pair.source) not in keys]
    return kept, len(pairs) - len(kept)


def build_vocabulary(sentences: Iterable[Sequence[str]], min_count: int) -> list[str]:
    """The target vocabulary: ``<pad> <unk> <s> </s>``, then every word seen at least ``min_count``
    times, by descending count (ties alphabetical)."""
    counts = Counter(word for sentence in sentences for word in sentence)
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return [PAD, UNK, BOS, EOS] + words
