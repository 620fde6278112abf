"""Sampled softmax: the log-uniform sampler, accidental hits, and small vocabularies."""

import math

import pytest
import torch
from fp_bounds import U32, gamma
from torch.nn import functional as F

from elmo_repro.bilm.sampled_softmax import SoftmaxLayer, log_uniform_probs, sample_log_uniform


def test_log_uniform_probabilities():
    probs = log_uniform_probs(10)
    # float64 probabilities (about 4 roundings of 2^-53, negligible: counted as 1) rounded to float32
    # (1 each), then a float32 sum of 10 (9): within gamma_11 of 1
    assert math.isclose(probs.sum().item(), 1.0, rel_tol=0, abs_tol=gamma(11))
    assert math.isclose(probs[0].item(), math.log(2) / math.log(11), rel_tol=gamma(2))
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
    # the same math in other kernels: the logits (4 products, their sum, the bias: 5 roundings)
    # relative to sum|terms| L, the log-softmax over 8 (max shift 1, exp 2, sum 7, log 2, subtract 1)
    # relative to L, the mean of 6 (6) relative to |loss|; twice for the two computations
    big = float((hidden.abs() @ layer.weight.detach().abs().T + layer.bias.detach().abs()).amax())
    bound = 2 * (gamma(5 + 13) * big + gamma(6) * float(full.detach().abs()))
    torch.testing.assert_close(loss, full, rtol=0, atol=bound)


def test_sampled_loss_by_hand_with_an_accidental_hit(monkeypatch):
    torch.manual_seed(0)
    layer = SoftmaxLayer(vocab_size=6, dim=3)
    hidden, targets = torch.randn(2, 3), torch.tensor([1, 4])
    sampled = torch.tensor([1, 3])
    monkeypatch.setattr("elmo_repro.bilm.sampled_softmax.sample_log_uniform",
                        lambda v, n, g=None: (sampled, 5))
    loss = layer.sampled_loss(hidden, targets, n_samples=2)
    p = log_uniform_probs(6).double()                                         # the sampler's float32 p
    log_q = torch.log(1 - (1 - p) ** 5)                                       # by hand, in float64
    weight, bias = layer.weight.detach().double(), layer.bias.detach().double()
    logit = hidden.double() @ weight.T + bias - log_q                        # corrected logits
    # row 0: target 1 is also sampled -> that negative is removed; row 1 keeps both negatives
    row0 = -torch.log_softmax(torch.stack([logit[0, 1], logit[0, 3]]), 0)[0]
    row1 = -torch.log_softmax(torch.stack([logit[1, 4], logit[1, 1], logit[1, 3]]), 0)[0]
    expected = (row0 + row1) / 2
    # float32 vs float64. log q = log(-expm1(5 log1p(-p))): log1p, the product, expm1 (5 roundings of
    # y = 5 log1p(-p), amplified by |y| e^y / (1 - e^y) through log(1 - e^y)) and log (2); each
    # logit: 3 products, 2 sums, bias and log q (5) relative to sum|terms| L; log-softmax over at
    # most 3 (8) relative to L; the mean of 2 (2) relative to |loss|
    y = 5 * torch.log1p(-p)
    amplify = float((y.abs() * y.exp() / (1 - y.exp())).amax())
    big = float((hidden.double().abs() @ weight.abs().T + bias.abs() + log_q.abs()).amax())
    bound = (5 * amplify + 2) * U32 + gamma(13) * big + gamma(2) * float(expected.abs())
    torch.testing.assert_close(loss.double(), expected, rtol=0, atol=bound)
