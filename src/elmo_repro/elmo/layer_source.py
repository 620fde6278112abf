"""Where a run's biLM layers come from: a cached HDF5 feature file (here), or the frozen biLM
live (:mod:`.live_layers`).

Both give, for a list of example indices, one (L+1, T_i, D) array per example (``batch``), plus
``n_layers`` and ``dim``, so a task's collation and the ELMo injection cannot tell them apart.
An example may hold several token lists (SNLI: premise and hypothesis, a task's ``fields``), each
embedded on its own: :class:`ExampleLayers` joins one source per field and gives a task's
collation one ``{field: (L+1, T_i, D)}`` mapping per example.
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


def feature_path(features_dir: str | Path, split: str, field: str = "tokens") -> Path:
    """The feature file of one split and field: ``<split>.hdf5`` for a task's single ``tokens``
    field (allennlp's one file per text), ``<split>.<field>.hdf5`` otherwise."""
    name = f"{split}.hdf5" if field == "tokens" else f"{split}.{field}.hdf5"
    return Path(features_dir) / name


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
    """One layer source per field of a task's examples, indexed alike.

    Args:
        sources: ``{field: source}`` (:class:`CachedLayers` or ``LiveLayers``), all of the same
            biLM (same ``n_layers`` and ``dim``) and the same number of examples.

    Raises:
        ValueError: no source, or sources of different shapes or lengths.
    """

    def __init__(self, sources: dict[str, "CachedLayers"]):
        if not sources:
            raise ValueError("ExampleLayers needs at least one field")
        shapes = {(s.n_layers, s.dim, len(s)) for s in sources.values()}
        if len(shapes) != 1:
            raise ValueError(f"the fields' layer sources differ in (layers, dim, examples): "
                             f"{ {f: (s.n_layers, s.dim, len(s)) for f, s in sources.items()} }")
        self.sources = sources
        self.n_layers, self.dim, self.n_examples = shapes.pop()

    def __len__(self) -> int:
        return self.n_examples

    def batch(self, indices: Sequence[int]) -> list[dict[str, np.ndarray]]:
        """Per example, ``{field: (L+1, T_i, D)}`` in the sources' dtype."""
        per_field = {field: source.batch(indices) for field, source in self.sources.items()}
        return [{field: arrays[row] for field, arrays in per_field.items()} for row in range(len(indices))]

    def close(self) -> None:
        for source in self.sources.values():
            source.close()


def cached_example_layers(features_dir: str | Path, split: str, fields: Sequence[str],
                          expected: int | None = None) -> ExampleLayers:
    """The cached layers of every field of a split (see :func:`feature_path`).

    Raises:
        InputError: a missing or malformed feature file (as :class:`CachedLayers`).
    """
    return ExampleLayers({field: CachedLayers(feature_path(features_dir, split, field), expected)
                          for field in fields})
