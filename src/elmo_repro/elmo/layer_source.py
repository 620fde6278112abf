"""Where a run's biLM layers come from: a cached HDF5 feature file (here), or the frozen biLM
live (:mod:`.live_layers`).

Both give, for a list of example indices, one (L+1, T_i, D) array per example (``batch``), plus
``n_layers`` and ``dim``, so a task's collation and the ELMo injection cannot tell them apart.
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
