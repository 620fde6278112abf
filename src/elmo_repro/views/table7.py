"""Table 7 (which representation the task model reads: the static word vectors only, the biLM's
char layer instead of them, ELMo instead of them, ELMo beside them) as a view over the runs
``tables.table7`` lists (analysis job): :mod:`.ablation`.

"Char layer instead of vectors" (ELMo spec ``char_only``: layer 0 at the input, ``word_vectors``
off) differs from Table 1's char-layer control (``char_layer``: layer 0 *beside* the vectors, at
the paper's placement); "ELMo & word vectors" is Table 1's +ELMo run, read, not retrained.
"""

from __future__ import annotations

from typing import Any

from . import Output
from .ablation import ablation_files


def build(params: dict[str, Any]) -> Output:
    return ablation_files(params, "table7")
