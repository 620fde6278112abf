"""Character CNN word encoder of the task model (Ma & Hovy 2016; the CNN variant of Lample et al. 2016's
character features, as in Peters et al. 2017/2018's NER baseline).

A word's characters are embedded, one ``Conv1d`` runs over them and a max over character
positions gives a fixed-size vector. Characters are indexed from a vocabulary built on the
*training* tokens: 0 is padding, 1 is every character unseen in training.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
from torch import nn

PAD, UNK = 0, 1
MAX_CHARS = 50      # longer tokens are truncated (CoNLL-2003's longest is 61 characters, a URL)


def build_char_vocab(tokens: Iterable[str]) -> dict[str, int]:
    """Map each character of ``tokens`` to an index >= 2, in order of first appearance (deterministic)."""
    vocab: dict[str, int] = {}
    for token in tokens:
        for char in token:
            if char not in vocab:
                vocab[char] = len(vocab) + 2
    return vocab


def encode_chars(tokens: list[str], vocab: dict[str, int]) -> np.ndarray:
    """(n_tokens, longest token up to MAX_CHARS) int64 character ids of one sentence, 0-padded."""
    width = min(MAX_CHARS, max(len(token) for token in tokens))
    ids = np.zeros((len(tokens), width), dtype=np.int64)
    for i, token in enumerate(tokens):
        chars = token[:MAX_CHARS]
        ids[i, :len(chars)] = [vocab.get(char, UNK) for char in chars]
    return ids


class CharCNN(nn.Module):
    """Embedding -> Conv1d (same padding) -> max over the word's real characters -> ReLU.

    The ReLU follows allennlp's ``CnnEncoder`` (the ELMo NER configuration's character encoder);
    applied after the max it gives the same result as before it (ReLU is monotone) at less cost.

    Args:
        n_chars: size of the character vocabulary including PAD and UNK.
        embedding_dim: character embedding size.
        filters: number of convolution filters = output size.
        kernel: convolution width in characters.
    """

    def __init__(self, n_chars: int, embedding_dim: int, filters: int, kernel: int):
        super().__init__()
        self.embedding = nn.Embedding(n_chars, embedding_dim, padding_idx=PAD)
        self.conv = nn.Conv1d(embedding_dim, filters, kernel, padding=kernel // 2)
        self.output_dim = filters

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """(B, T, C) long character ids -> (B, T, filters); all-padding words (padded tokens) give 0."""
        b, t, c = chars.shape
        flat = chars.reshape(b * t, c)
        x = self.embedding(flat).transpose(1, 2)                                # (B*T, E, C)
        h = self.conv(x)[:, :, :c]                                              # (B*T, F, C); even kernels add one
        real = (flat != PAD).unsqueeze(1)                                       # (B*T, 1, C)
        # Max over real characters only, so a word's vector does not depend on the batch's padding.
        pooled = h.masked_fill(~real, float("-inf")).max(dim=2).values
        pooled = pooled.masked_fill(~real.any(dim=2), 0.0)                      # padded tokens
        return torch.relu(pooled).reshape(b, t, -1)
