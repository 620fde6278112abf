"""ScalarMix (paper Eq. 1) against numpy."""

import math

import numpy as np
import pytest
import torch
from fp_bounds import U32, gamma

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
    expected = 1.7 * np.einsum("l,bltd->btd", w, layers.numpy().astype(np.float64))   # float64
    # float32 vs exact: softmax weights (max shift 1, exp 2, 3-term sum 2, division 1) and gamma
    # stored in float32 (1): 7 roundings relative to each term; the products (1) and the 3-term sum
    # (2) round relative to sum|terms| <= 1.7 max|h|: gamma_10 * 1.7 max|h| (about 1e-6 here).
    bound = gamma(10) * 1.7 * float(layers.abs().amax())
    np.testing.assert_allclose(mix(layers).detach().numpy(), expected, rtol=0, atol=bound)
    # 0.1 rounded to float32, then the product (the squares and their sum are exact): gamma_2
    assert math.isclose(mix.penalty().item(), 0.1 * (0.25 + 1.0 + 4.0), rel_tol=gamma(2), abs_tol=0)


def test_initial_mix_is_the_average_and_penalty_zero():
    mix = ScalarMix(3, l2_coef=1.0)
    layers = torch.randn(1, 3, 2, 4)
    # mix: weights 1/3 (exp 2, 3-term sum 2, division 1), products (1), 3-term sum (2): within
    # gamma_8 * sum|h| of the exact mean; mean: 3-term sum (2), division (1): gamma_3 * sum|h|
    # (about 1e-6 here)
    bound = (gamma(8) + gamma(3)) * float(layers.abs().sum(dim=1).amax())
    torch.testing.assert_close(mix(layers), layers.mean(dim=1), rtol=0, atol=bound)
    assert mix.penalty().item() == 0.0


def test_layer_norm_uses_only_unmasked_positions():
    layers = torch.randn(2, 2, 3, 4)
    mask = torch.tensor([[True, True, False], [True, False, False]])
    mix = ScalarMix(2, do_layer_norm=True)
    out = mix(layers, mask).detach().numpy()
    expected, bound = np.zeros((2, 3, 4)), 0.0
    n = layers[:, 0].numel()                             # terms of each masked sum (zeros included)
    for k in range(2):
        x = layers[:, k].numpy().astype(np.float64)
        values = np.concatenate([x[0, :2].ravel(), x[1, :1].ravel()])
        mean, std = values.mean(), values.std()          # float64
        normed = (x - mean) / std * mask.numpy()[..., None]
        expected += 0.5 * normed
        # float32 layer norm vs exact, first order: the mean and each centred c = x - mean are
        # within (n + 2) u max|x| =: d; the variance (n-term sum of c^2, division) within
        # 2 d mean|c| + (n + 1) u var, so std within d + (n + 3) u std / 2 (mean|c| <= std);
        # c / std then within d / std (1 + |c| / std) + ((n + 3) / 2 + 1) u |c| / std,
        # with r = max|x| / std, |c| / std <= 2 r:
        r = np.abs(values).max() / std
        bound = max(bound, (n + 2) * U32 * r * (1 + 2 * r) + (n + 5) * U32 * 2 * r)
    bound += 2 * U32 * np.abs(expected).max()            # 0.5 (exact) times, a 2-term sum (about 2e-5 in all)
    np.testing.assert_allclose(out, expected, rtol=0, atol=bound)
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
    assert both.penalty().item() == 0.5 * 3.0                        # halves and small integers: exact
    only_input = ElmoInjection(3, ElmoSpec(placement="input"), dim=6)
    assert (only_input.input_dim, only_input.output_dim) == (6, 0) and len(only_input.mixes) == 1
    with pytest.raises(ValueError, match="resolved"):
        ElmoInjection(3, ElmoSpec(placement="paper"), dim=6)


def test_fixed_layer_mix_uses_one_layer_and_trains_only_gamma():
    layers = torch.randn(2, 3, 4, 5)
    mix = ScalarMix(3, l2_coef=1.0, fixed_layer=0)
    with torch.no_grad():
        mix.gamma.fill_(2.0)
    torch.testing.assert_close(mix(layers), 2.0 * layers[:, 0], rtol=0, atol=0)   # times 2 is exact
    assert mix.weights().tolist() == [1.0, 0.0, 0.0] and mix.penalty().item() == 0.0
    assert [name for name, p in mix.named_parameters() if p.requires_grad] == ["gamma"]
    last = ElmoInjection(3, ElmoSpec(placement="input", mix="last"), dim=5)
    assert last.report()["input"] == {"s": [0.0, 0.0, 1.0], "gamma": 1.0, "gamma_init": 1.0}  # use_top_only
    char = ElmoInjection(3, ElmoSpec(placement="input", mix="fixed", layer=0), dim=5)
    assert char.report()["input"]["s"] == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="outside"):
        ScalarMix(3, fixed_layer=3)


def test_matched_gamma_scales_the_mix_to_the_target_rms_over_real_tokens():
    # Layer 0 is all 2, layer 1 all 4; the padded position holds 100 and must not count.
    layers = torch.stack([torch.full((1, 3, 4), 2.0), torch.full((1, 3, 4), 4.0)], dim=1)   # (1, 2, 3, 4)
    layers[0, :, 2] = 100.0
    mask = torch.tensor([[True, True, False]])
    mix = ScalarMix(2)                                 # uniform s: the unscaled mix is 3 everywhere
    assert mix.match_scale(layers, mask, target_rms=0.75) == 0.25 == mix.gamma.item()
    torch.testing.assert_close(mix(layers, mask)[mask], torch.full((2, 4), 0.75), rtol=0, atol=0)
    assert mix.parameters_report()["gamma_init"] == 0.25
    char = ScalarMix(2, fixed_layer=0)
    assert char.match_scale(layers, mask, target_rms=0.5) == 0.25  # layer 0 alone: RMS 2
    normed = ScalarMix(2, do_layer_norm=True)          # constant layers normalise to 0: nothing to match
    with pytest.raises(ValueError, match="zero"):
        normed.match_scale(layers, mask, 1.0)
    with pytest.raises(ValueError, match="positive"):
        mix.match_scale(layers, mask, 0.0)
    # The injection matches every mix over texts of different lengths, concatenated.
    both = ElmoInjection(2, ElmoSpec(placement="both"), dim=4)
    texts = [np.full((2, 1, 4), 1.0, dtype=np.float16), np.full((2, 3, 4), 3.0, dtype=np.float16)]
    # s uniform: the mix is 1 on one token and 3 on three, RMS sqrt((1 + 27) / 4) = sqrt(7)
    assert both.match_scale(texts, target_rms=math.sqrt(7) / 2) == pytest.approx([0.5, 0.5], rel=1e-6)
    with pytest.raises(ValueError, match="at least one"):
        both.match_scale([], 1.0)


def test_switches_freeze_weights_or_gamma():
    frozen_s = ScalarMix(3, l2_coef=1.0, train_weights=False)
    assert not frozen_s.scalar_parameters.requires_grad and frozen_s.penalty().item() == 0.0
    # softmax of zeros: exp(0) (2 roundings), the 3-term sum (2), the division (1); 1/3 rounded (1)
    torch.testing.assert_close(frozen_s.weights(), torch.full((3,), 1 / 3), rtol=gamma(6), atol=0)
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
    with pytest.raises(ValidationError, match="gamma_init"):
        ElmoSpec(gamma_init="unit")
