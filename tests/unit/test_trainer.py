"""The one trainer's own parts: training subsets, batches, optimizers, non-finite losses."""

import numpy as np
import pytest
import torch

from elmo_repro.training.trainer import build_optimizer, epoch_batches, select_training, train_batches


def test_training_subset_is_fixed_nested_and_in_file_order():
    assert select_training(10, 0, 1.0) == list(range(10))
    assert select_training(10, 4, 1.0) == [0, 1, 2, 3]                       # the cap keeps the first N
    half, tenth = select_training(1000, 0, 0.5), select_training(1000, 0, 0.1)
    assert len(half) == 500 and len(tenth) == 100 and half == sorted(half)
    assert set(tenth) <= set(half)                                         # a smaller fraction is nested
    assert select_training(1000, 0, 0.5) == half                           # independent of the run seed
    assert select_training(1000, 200, 0.5) == sorted(select_training(1000, 200, 0.5))
    assert max(select_training(1000, 200, 0.5)) < 200
    with pytest.raises(ValueError, match="train_fraction"):
        select_training(10, 0, 0.0)


def test_batches_cover_every_example_once_and_follow_the_seed():
    lengths = np.array([5, 1, 3, 5, 2, 1, 4, 3, 2, 5])
    batches = train_batches(lengths, 4, np.random.default_rng(3))
    assert sorted(i for b in batches for i in b) == list(range(10))
    assert [len(b) for b in batches].count(2) == 1                         # 10 = 4 + 4 + 2


def test_a_small_data_epoch_has_a_full_epochs_updates():
    lengths = np.array([5, 1, 3, 5, 2, 1, 4])                             # 7 examples: 2 batches of 4 a pass
    assert epoch_batches(lengths, 4, np.random.default_rng(3)) == train_batches(lengths, 4, np.random.default_rng(3))
    batches = epoch_batches(lengths, 4, np.random.default_rng(3), updates=5)
    assert len(batches) == 5                                               # passes 1 and 2, and 1 batch of pass 3
    rng = np.random.default_rng(3)
    passes = train_batches(lengths, 4, rng) + train_batches(lengths, 4, rng) + train_batches(lengths, 4, rng)
    assert batches == passes[:5]
    first_two = sorted(i for b in batches[:4] for i in b)
    assert first_two == sorted(list(range(7)) * 2)                         # each pass covers every example once


def test_optimizer_from_config():
    params = [torch.nn.Parameter(torch.zeros(2))]
    assert isinstance(build_optimizer(params, {"name": "adam", "lr": 0.1}), torch.optim.Adam)
    sgd = build_optimizer(params, {"name": "sgd", "lr": 0.5, "momentum": 0.9})
    assert sgd.param_groups[0]["momentum"] == 0.9 and sgd.param_groups[0]["lr"] == 0.5
    assert isinstance(build_optimizer(params, {"name": "adadelta", "lr": 1.0}), torch.optim.Adadelta)
    adadelta = build_optimizer(params, {"name": "adadelta", "lr": 1.0, "rho": 0.95})
    assert adadelta.param_groups[0]["rho"] == 0.95
    # a profile's null (rho under Adam) is the optimizer's default, not a keyword
    adam = build_optimizer(params, {"name": "adam", "lr": 0.1, "rho": None, "momentum": None})
    assert adam.param_groups[0]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError, match="unknown optimizer 'lbfgs'"):
        build_optimizer(params, {"name": "lbfgs", "lr": 1.0})


def test_non_finite_loss_stops_with_epoch_and_batch():
    from elmo_repro.training.trainer import train_epoch

    class Exploding(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(1))
            self.calls = 0

        def loss(self, batch):
            self.calls += 1
            return self.w.sum() * (float("nan") if self.calls == 3 else 1.0)

    class Split:
        device = torch.device("cpu")

        def batch(self, indices):
            return {}

    model = Exploding()
    with pytest.raises(ValueError, match="epoch 2, batch 3"):
        train_epoch(model, torch.optim.SGD(model.parameters(), lr=0.1), Split(), [[0]] * 5, 5.0, epoch=2)


@pytest.mark.parametrize("kind, expected", [
    # gradient (3, -0.5, 4): its norm 5.02 scaled to 1, or each element clamped to [-1, 1]
    ("norm", [3.0, -0.5, 4.0] / np.linalg.norm([3.0, -0.5, 4.0])),
    ("value", [1.0, -0.5, 1.0]),
])
def test_gradient_clipping_by_norm_or_by_element(kind, expected):
    from elmo_repro.training.trainer import train_epoch

    class Linear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))

        def loss(self, batch):
            return (self.w * torch.tensor([3.0, -0.5, 4.0], dtype=torch.float64)).sum()

    class Split:
        device = torch.device("cpu")

        def batch(self, indices):
            return {}

    model = Linear()
    train_epoch(model, torch.optim.SGD(model.parameters(), lr=1.0), Split(), [[0]], 1.0, epoch=1,
                grad_clip_kind=kind)
    np.testing.assert_allclose(-model.w.detach().numpy(), expected, rtol=1e-6)   # one SGD step of lr 1
