"""ScalarMix (paper Eq. 1) against numpy."""

import numpy as np
import pytest
import torch

from elmo_repro.elmo.injection import ElmoInjection
from elmo_repro.elmo.scalar_mix import ScalarMix
from elmo_repro.experiments.specs import ElmoSpec


def test_mix_matches_numpy():
    torch.manual_seed(0)
    mix = ScalarMix(3, l2_coef=0.1)
    with torch.no_grad():
        mix.scalar_parameters.copy_(torch.tensor([0.5, -1.0, 2.0]))
        mix.gamma.fill_(1.7)
    layers = torch.randn(2, 3, 4, 5)
    w = np.exp([0.5, -1.0, 2.0]) / np.exp([0.5, -1.0, 2.0]).sum()
    expected = 1.7 * np.einsum("l,bltd->btd", w, layers.numpy())
    np.testing.assert_allclose(mix(layers).detach().numpy(), expected, rtol=1e-5, atol=1e-6)
    assert np.isclose(mix.penalty().item(), 0.1 * (0.25 + 1.0 + 4.0))


def test_initial_mix_is_the_average_and_penalty_zero():
    mix = ScalarMix(3, l2_coef=1.0)
    layers = torch.randn(1, 3, 2, 4)
    torch.testing.assert_close(mix(layers), layers.mean(dim=1))
    assert mix.penalty().item() == 0.0


def test_layer_norm_uses_only_unmasked_positions():
    layers = torch.randn(2, 2, 3, 4)
    mask = torch.tensor([[True, True, False], [True, False, False]])
    mix = ScalarMix(2, do_layer_norm=True)
    out = mix(layers, mask).detach().numpy()
    expected = np.zeros((2, 3, 4))
    for k in range(2):
        values = np.concatenate([layers[0, k, :2].numpy().ravel(), layers[1, k, :1].numpy().ravel()])
        mean, std = values.mean(), values.std()
        normed = (layers[:, k].numpy() - mean) / std * mask.numpy()[..., None]
        expected += 0.5 * normed
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="mask"):
        mix(layers)


def test_injection_places_mixes_as_the_spec_says():
    layers, mask = torch.randn(2, 3, 4, 6), torch.ones(2, 4, dtype=torch.bool)
    both = ElmoInjection(3, ElmoSpec(placement="both", l2_coef=0.5), dim=6).eval()
    out = both(layers, mask)
    assert set(out) == {"input", "output"} and out["input"].shape == (2, 4, 6)
    assert (both.input_dim, both.output_dim) == (6, 6)
    with torch.no_grad():
        both.mixes[1].scalar_parameters.fill_(1.0)
    assert np.isclose(both.penalty().item(), 0.5 * 3.0)
    only_input = ElmoInjection(3, ElmoSpec(placement="input"), dim=6)
    assert (only_input.input_dim, only_input.output_dim) == (6, 0) and len(only_input.mixes) == 1
    with pytest.raises(ValueError, match="resolved"):
        ElmoInjection(3, ElmoSpec(placement="paper"), dim=6)


def test_fixed_layer_mix_uses_one_layer_and_trains_only_gamma():
    layers = torch.randn(2, 3, 4, 5)
    mix = ScalarMix(3, l2_coef=1.0, fixed_layer=0)
    with torch.no_grad():
        mix.gamma.fill_(2.0)
    torch.testing.assert_close(mix(layers), 2.0 * layers[:, 0])
    assert mix.weights().tolist() == [1.0, 0.0, 0.0] and mix.penalty().item() == 0.0
    assert [name for name, p in mix.named_parameters() if p.requires_grad] == ["gamma"]
    last = ElmoInjection(3, ElmoSpec(placement="input", mix="last"), dim=5)
    assert last.report()["input"] == {"s": [0.0, 0.0, 1.0], "gamma": 1.0}       # bilm-tf use_top_only
    char = ElmoInjection(3, ElmoSpec(placement="input", mix="fixed", layer=0), dim=5)
    assert char.report()["input"]["s"] == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="outside"):
        ScalarMix(3, fixed_layer=3)


def test_switches_freeze_weights_or_gamma():
    frozen_s = ScalarMix(3, l2_coef=1.0, train_weights=False)
    assert not frozen_s.scalar_parameters.requires_grad and frozen_s.penalty().item() == 0.0
    assert torch.allclose(frozen_s.weights(), torch.full((3,), 1 / 3))
    frozen_gamma = ScalarMix(3, train_gamma=False)
    assert not frozen_gamma.gamma.requires_grad and frozen_gamma.scalar_parameters.requires_grad


def test_elmo_spec_is_validated():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="layer"):
        ElmoSpec(mix="fixed")
    with pytest.raises(ValidationError, match="layer"):
        ElmoSpec(mix="learned", layer=1)
    with pytest.raises(ValidationError):
        ElmoSpec(placement="middle")
    with pytest.raises(ValidationError, match="Extra inputs"):
        ElmoSpec(l2coef=0.1)
