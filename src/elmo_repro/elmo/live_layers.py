"""The frozen biLM's layers computed on demand: the live counterpart of
:class:`~elmo_repro.elmo.layer_source.CachedLayers` (same ``batch``/``n_layers``/``dim``), for runs
whose biLM changes with the run (fine-tuned per task) or whose text is not known in advance.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..bilm.model import BiLM
from ..bilm.token_cache import TokenCache
from ..data.character_ids import batch_to_char_ids


class LiveLayers:
    """The frozen biLM's layers computed on demand.

    Args:
        model: the biLM (put in eval mode; never trained here).
        sentences: the split's token lists, by example index.
        cache_words: precompute the token layer of these words (e.g. the split's vocabulary).
    """

    def __init__(self, model: BiLM, sentences: list[list[str]], cache_words: list[str] | None = None):
        self.model = model.eval()
        self.sentences = sentences
        self.cache = TokenCache(model, cache_words) if cache_words else None
        self.n_layers, self.dim = model.n_layers, model.output_dim

    def __len__(self) -> int:
        return len(self.sentences)

    @torch.no_grad()
    def batch(self, indices: Sequence[int]) -> list[np.ndarray]:
        """float32 layers of the given examples, each (L+1, T_i, D), boundaries removed."""
        sentences = [self.sentences[i] for i in indices]
        char_ids = torch.from_numpy(batch_to_char_ids(sentences))
        layers = self.model.layers(char_ids, token_cache=self.cache)            # (B, L+1, T+2, D)
        return [layers[b, :, 1:len(s) + 1].numpy() for b, s in enumerate(sentences)]
