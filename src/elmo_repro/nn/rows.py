"""Row lookup with a reproducible gradient.

``x[index]`` with an integer tensor is ``aten::index``, whose backward accumulates with
``index_put_(accumulate=True)``; on CPU with more than one thread that accumulation runs in
parallel, so when an index repeats (several questions of one paragraph, spans sharing a start
token, antecedents shared by many mentions) the gradient's float sums come out in a different
order from run to run and the same seed stops giving the same numbers (measured: a SQuAD run's
second batch already differs between two processes). :func:`take_rows` is the same lookup through
``index_select``, whose backward (``index_add_``) adds in index order: bitwise repeatable on CPU,
and about twice as fast there.
"""

from __future__ import annotations

import torch


def take_rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``x[index]`` for an integer ``index`` of any shape: (N, *rest), (*I) -> (*I, *rest).

    Raises:
        IndexError: an index outside ``0 .. N-1`` (as ``index_select``; negative indices are not
            wrapped).
    """
    return x.index_select(0, index.reshape(-1)).reshape(*index.shape, *x.shape[1:])
