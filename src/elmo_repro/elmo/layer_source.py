"""Where a run's biLM layers come from: a cached HDF5 feature file (here), or the frozen biLM
live (:mod:`.live_layers`).

Both give, for a list of text ids, one (L+1, T_i, D) array per text (``batch``), plus ``n_layers``
and ``dim``, so a task's collation and the ELMo injection cannot tell them apart. A split's texts
are its unique token sequences (:mod:`elmo_repro.data.examples`), each embedded once; an example
points at one text per token field (SNLI: premise and hypothesis, a task's ``fields``), or at a
list of texts (coreference: a document's sentences), and :class:`ExampleLayers` gives a task's
collation one ``{field: (L+1, T_i, D)}`` mapping per example (a list of arrays for a list of
texts), reading each text of a batch once.
:class:`CachedLayers` reads lazily (one open file, one dataset per example on demand), so memory
does not grow with the data set. On the same input the two agree to within the float16 rounding of
the cache (``tests/unit/test_layer_source.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import h5py
import numpy as np

from ..io import InputError

INDEX_KEY = "sentence_to_index"


def feature_path(features_dir: str | Path, split: str) -> Path:
    """The feature file of one split's texts: ``<features_dir>/<split>.hdf5``."""
    return Path(features_dir) / f"{split}.hdf5"


class CachedLayers:
    """A feature file in allennlp's ``elmo --all`` layout (:mod:`elmo_repro.elmo.features`).

    Args:
        path: the HDF5 file; datasets ``"0"`` .. ``"N-1"``, each (L+1, T, D).
        expected: the number of examples the file must hold (None: not checked).

    Raises:
        InputError: a missing or unreadable file, keys that are not 0..N-1, or not ``expected`` of them.
    """

    def __init__(self, path: str | Path, expected: int | None = None):
        self.path = Path(path)
        if not self.path.is_file():
            raise InputError(self.path, "feature file not found")
        try:
            self._handle = h5py.File(self.path, "r")
            keys = set(self._handle.keys()) - {INDEX_KEY}
            n = len(keys)
            if n == 0 or keys != {str(i) for i in range(n)}:
                raise InputError(self.path, "sentence keys are not the indices 0..N-1")
            first = self._handle["0"]
        except OSError as err:
            raise InputError(self.path, f"unreadable HDF5 feature file ({err})") from None
        if expected is not None and n != expected:
            raise InputError(self.path, f"holds {n} sentences, the split has {expected}")
        self.n_examples = n
        self.n_layers, self.dim = int(first.shape[0]), int(first.shape[2])

    def __len__(self) -> int:
        return self.n_examples

    def batch(self, indices: Sequence[int]) -> list[np.ndarray]:
        """The stored layers (e.g. float16) of the given examples, each (L+1, T_i, D)."""
        try:
            return [self._handle[str(i)][()] for i in indices]
        except KeyError as err:
            raise InputError(self.path, f"no sentence {err}") from None

    def close(self) -> None:
        self._handle.close()


class ExampleLayers:
    """A split's examples over the layers of its texts.

    Args:
        source: the texts' layers (:class:`CachedLayers` or ``LiveLayers``), indexed by text id.
        text_ids: per example, ``{field: text id or list of text ids}`` (the examples' ``text_ids``).
        fields: the token fields a batch gets, in order.

    Raises:
        ValueError: no field, an example without one of ``fields``, or a text id the source does
            not hold (naming the example index and, for a feature file, its path).
    """

    def __init__(self, source: "CachedLayers", text_ids: Sequence[dict[str, int | list[int]]], fields: Sequence[str]):
        if not fields:
            raise ValueError("ExampleLayers needs at least one field")
        where = f" of {source.path}" if hasattr(source, "path") else ""
        for i, ids in enumerate(text_ids):
            for field in fields:
                text_id = ids.get(field) if isinstance(ids, dict) else None
                listed = text_id if isinstance(text_id, list) and text_id else [text_id]
                if not all(isinstance(t, int) and 0 <= t < len(source) for t in listed):
                    raise ValueError(f"example {i}: {field} refers to text {text_id!r}, not one of the "
                                     f"{len(source)} texts{where}")
        self.source, self.fields = source, tuple(fields)
        self.text_ids = [{field: ids[field] for field in fields} for ids in text_ids]
        self.n_layers, self.dim, self.n_examples = source.n_layers, source.dim, len(self.text_ids)

    def __len__(self) -> int:
        return self.n_examples

    def batch(self, indices: Sequence[int]) -> list[dict[str, np.ndarray]]:
        """Per example, ``{field: (L+1, T_i, D)}`` (a list of them for a field of several texts) in
        the source's dtype; a text the batch shares is read once (the examples then share its
        array: read-only)."""
        def listed(text_id: int | list[int]) -> list[int]:
            return text_id if isinstance(text_id, list) else [text_id]

        wanted = sorted({t for i in indices for field in self.fields for t in listed(self.text_ids[i][field])})
        arrays = dict(zip(wanted, self.source.batch(wanted)))
        return [{field: [arrays[t] for t in ids] if isinstance(ids, list) else arrays[ids]
                 for field, ids in ((f, self.text_ids[i][f]) for f in self.fields)} for i in indices]

    def close(self) -> None:
        self.source.close()


def cached_example_layers(features_dir: str | Path, split: str, examples: Sequence[dict],
                          fields: Sequence[str]) -> ExampleLayers:
    """The cached layers of a split's examples (their ``text_ids``) from ``<split>.hdf5``.

    Raises:
        InputError: a missing or malformed feature file (as :class:`CachedLayers`).
        ValueError: an example's text id the file does not hold (as :class:`ExampleLayers`).
    """
    return ExampleLayers(CachedLayers(feature_path(features_dir, split)),
                         [example["text_ids"] for example in examples], fields)
