"""Held-out perplexity of the biLM with the full softmax (bilm-tf ``test``; paper §3.1, Table 6).

Each sentence is scored independently (zero initial state). Forward targets are ``w1 ... wn </S>``
given the prefix from ``<S>``; backward targets are ``<S> w1 ... wn`` given the suffix from ``</S>``
(the backward LM's sentence boundary). Out-of-vocabulary targets count as ``<UNK>``. The reported
perplexity is ``exp(0.5 * (mean forward NLL + mean backward NLL))`` over all targets.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..checks import check_batch, check_count
from ..data.character_ids import char_ids_of
from ..data.vocabulary import Vocabulary
from ..device import autocast
from .model import BiLM


@torch.no_grad()
def bilm_perplexity(model: BiLM, vocab: Vocabulary, sentences: list[list[str]], batch_size: int = 64,
                    precision: str = "fp32") -> dict[str, float]:
    """Forward, backward and average perplexity plus the mean NLLs (nats per target), computed on
    the model's device (``precision`` ``bf16``: the biLM's layers under bf16 autocast on CUDA; the
    full softmax in fp32).

    Raises:
        ValueError: the model has no softmax (e.g. released weights without it), no sentences, or
            ``batch_size`` < 1.
        TypeError: ``sentences`` is not a list of token lists.
    """
    sentences = check_batch(sentences, "bilm_perplexity")
    check_count(batch_size, "batch_size")
    if model.softmax is None:
        raise ValueError("perplexity needs the biLM's softmax weights")
    if not sentences:
        raise ValueError("no held-out sentences")
    model.eval()
    p = model.config.projection_dim
    totals = {"forward": 0.0, "backward": 0.0}
    n_targets = 0
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))  # less padding
    device = model.token_embedder.char_embed.weight.device
    for start in range(0, len(order), batch_size):
        batch = [sentences[i] for i in order[start:start + batch_size]]
        char_ids = torch.from_numpy(char_ids_of(batch)).to(device)      # (B, T+2, 50)
        with autocast(device, precision):
            top = model.layers(char_ids)[:, -1]                               # (B, T+2, 2P)
        top = top.float()
        for b, sentence in enumerate(batch):
            n = len(sentence)
            ids = torch.tensor([vocab.bos, *vocab.ids(sentence), vocab.eos], device=device)   # (n+2,)
            fwd = model.softmax.full_nll(top[b, :n + 1, :p], ids[1:])          # predicts w1..</S>
            bwd = model.softmax.full_nll(top[b, 1:n + 2, p:], ids[:-1])        # predicts <S>..wn
            totals["forward"] += float(fwd.sum())
            totals["backward"] += float(bwd.sum())
            n_targets += n + 1
    fwd_nll, bwd_nll = totals["forward"] / n_targets, totals["backward"] / n_targets
    return {"forward_nll": fwd_nll, "backward_nll": bwd_nll,
            "forward_perplexity": math.exp(fwd_nll), "backward_perplexity": math.exp(bwd_nll),
            "perplexity": math.exp(0.5 * (fwd_nll + bwd_nll)), "targets": float(n_targets)}


def unigram_perplexity(vocab: Vocabulary, sentences: list[list[str]]) -> float:
    """Perplexity of the maximum-likelihood unigram model of the training counts over the same
    targets (``w1 ... wn </S>``; OOV -> ``<UNK>``). ``<S>`` is never a forward target, so it is
    excluded from the distribution.

    Raises:
        ValueError: no counts, or a target with zero training count.
    """
    if vocab.counts is None:
        raise ValueError("the unigram baseline needs the vocabulary's training counts")
    counts = np.asarray(vocab.counts, dtype=np.float64)
    counts[vocab.bos] = 0.0
    log_probs = np.log(counts / counts.sum(), where=counts > 0, out=np.full_like(counts, -np.inf))
    total, n = 0.0, 0
    for sentence in sentences:
        ids = vocab.ids(sentence) + [vocab.eos]
        total += float(log_probs[ids].sum())
        n += len(ids)
    if not math.isfinite(total):
        raise ValueError("a held-out target has zero training count")
    return math.exp(-total / n)


def oov_rate(vocab: Vocabulary, sentences: list[list[str]]) -> float:
    """Fraction of held-out tokens (boundaries excluded) outside the vocabulary."""
    tokens = [t for s in sentences for t in s]
    return sum(vocab.id(t) == vocab.unk for t in tokens) / max(1, len(tokens))
