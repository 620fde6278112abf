"""ScalarMix (paper Eq. 1) against numpy."""

import numpy as np
import pytest
import torch

from elmo_repro.elmo.scalar_mix import ElmoInput, ScalarMix


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


def test_elmo_input_with_output_mix():
    elmo = ElmoInput(3, at_output=True, l2_coef=0.5).eval()
    out = elmo(torch.randn(2, 3, 4, 6), torch.ones(2, 4, dtype=torch.bool))
    assert len(out) == 2 and out[0].shape == (2, 4, 6)
    with torch.no_grad():
        elmo.mixes[1].scalar_parameters.fill_(1.0)
    assert np.isclose(elmo.penalty().item(), 0.5 * 3.0)
