"""A precomputed token layer for a vocabulary (allennlp ``_ElmoBiLm(vocab_to_cache=...)``; bilm-tf
``dump_token_embeddings``): the char CNN -> highway -> projection output of every word, computed
once. Lookups are keyed by a word's character ids, so a cache plugs into any char-id batch
(``BiLM.layers(char_ids, token_cache=cache)``); words it does not hold fall back to the char CNN.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..checks import check_count, check_sentence
from ..data.character_ids import token_to_char_ids

if TYPE_CHECKING:
    from .model import BiLM


class TokenCache:
    """Token-layer vectors of ``words`` under ``model``'s current weights.

    Args:
        model: the biLM; its token embedder is kept for words outside the cache, and the cache is
            stale once the embedder's weights change.
        words: the vocabulary to precompute (``<S>``/``</S>`` get the sentence-boundary ids).
        batch_size: words per char-CNN call while precomputing.

    Attributes:
        embeddings: (len(words), projection_dim) float32, row i for ``words[i]``.
    """

    def __init__(self, model: "BiLM", words: list[str], batch_size: int = 1024):
        words = check_sentence(words, "TokenCache words")      # a list of str, as a sentence is
        check_count(batch_size, "batch_size")
        self.embedder = model.token_embedder
        n_chars = model.config.max_characters_per_token
        device = self.embedder.char_embed.weight.device
        ids = torch.tensor([token_to_char_ids(w, n_chars) for w in words], dtype=torch.long,
                           device=device).reshape(len(words), n_chars)          # (V, 50)
        self._row = {tuple(row): i for i, row in enumerate(ids.tolist())}
        with torch.no_grad():
            chunks = [self.embedder(ids[i:i + batch_size]) for i in range(0, len(words), batch_size)]
        self.embeddings = (torch.cat(chunks) if chunks
                           else torch.zeros(0, model.config.projection_dim, device=device))  # (V, P)

    def __len__(self) -> int:
        return self.embeddings.size(0)

    def __call__(self, char_ids: torch.Tensor) -> torch.Tensor:
        """Token layer of a batch: (..., 50) int64 -> (..., projection_dim); cached rows for the
        char ids of cached words, the char CNN for the rest (each distinct token once)."""
        lead = char_ids.shape[:-1]
        flat = char_ids.reshape(-1, char_ids.size(-1))                          # (N, 50)
        unique, inverse = torch.unique(flat, dim=0, return_inverse=True)        # (U, 50), (N,)
        rows = torch.tensor([self._row.get(tuple(u), -1) for u in unique.tolist()],
                            dtype=torch.long, device=char_ids.device)           # (U,), -1: not cached
        hit = rows >= 0
        out = self.embeddings.new_empty(unique.size(0), self.embeddings.size(1))  # (U, P)
        out[hit] = self.embeddings[rows[hit]]
        if not bool(hit.all()):
            out[~hit] = self.embedder(unique[~hit])
        return out[inverse].reshape(*lead, -1)
