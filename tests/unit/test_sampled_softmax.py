"""Sampled softmax: the log-uniform sampler, accidental hits, and small vocabularies."""

import math

import pytest
import torch
from torch.nn import functional as F

from elmo_repro.bilm.sampled_softmax import SoftmaxLayer, log_uniform_probs, sample_log_uniform


def test_log_uniform_probabilities():
    probs = log_uniform_probs(10)
    assert math.isclose(probs.sum().item(), 1.0, rel_tol=1e-6)
    assert math.isclose(probs[0].item(), math.log(2) / math.log(11), rel_tol=1e-6)
    assert torch.all(probs[:-1] > probs[1:])


def test_samples_are_distinct_and_never_more_than_the_vocabulary():
    ids, tries = sample_log_uniform(50, 50, torch.Generator().manual_seed(0))
    assert sorted(ids.tolist()) == list(range(50)) and tries >= 50
    with pytest.raises(ValueError, match="51 distinct negatives from 50"):
        sample_log_uniform(50, 51)


def test_more_negatives_than_vocabulary_falls_back_to_the_full_softmax():
    torch.manual_seed(0)
    layer = SoftmaxLayer(vocab_size=8, dim=4)
    hidden, targets = torch.randn(6, 4), torch.randint(0, 8, (6,))
    with pytest.warns(UserWarning, match="full softmax"):
        loss = layer.sampled_loss(hidden, targets, n_samples=20)
    full = F.cross_entropy(hidden @ layer.weight.T + layer.bias, targets)
    torch.testing.assert_close(loss, full)


def test_sampled_loss_by_hand_with_an_accidental_hit(monkeypatch):
    torch.manual_seed(0)
    layer = SoftmaxLayer(vocab_size=6, dim=3)
    hidden, targets = torch.randn(2, 3), torch.tensor([1, 4])
    sampled = torch.tensor([1, 3])
    monkeypatch.setattr("elmo_repro.bilm.sampled_softmax.sample_log_uniform",
                        lambda v, n, g=None: (sampled, 5))
    loss = layer.sampled_loss(hidden, targets, n_samples=2)
    log_q = torch.log(1 - (1 - log_uniform_probs(6)) ** 5)
    logit = hidden @ layer.weight.T + layer.bias - log_q                      # corrected logits
    # row 0: target 1 is also sampled -> that negative is removed; row 1 keeps both negatives
    row0 = -torch.log_softmax(torch.stack([logit[0, 1], logit[0, 3]]), 0)[0]
    row1 = -torch.log_softmax(torch.stack([logit[1, 4], logit[1, 1], logit[1, 3]]), 0)[0]
    torch.testing.assert_close(loss, (row0 + row1) / 2)
