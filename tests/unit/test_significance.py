"""The significance tools against answers worked by hand or known in closed form."""

import numpy as np
import pytest
from scipy.stats import binom

from elmo_repro.significance import (coref_average_f1, detectable_difference, holm, mean_percent,
                                     paired_bootstrap, span_f1)


def test_holm_by_hand():
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 -> running max 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, None, 0.9]) == [1.0, None, 1.0]    # m = 2: 0.5·2 capped at 1, then max(1, 0.9·1)
    assert holm([0.02, None, 0.01]) == pytest.approx([0.02, None, 0.02])
    assert holm([]) == []
    with pytest.raises(ValueError, match="p-value 1 is 1.5"):
        holm([0.1, 1.5])


def test_detectable_difference_is_2_8_standard_errors():
    assert detectable_difference(1.0) == pytest.approx(1.959964 + 0.841621, abs=1e-5)
    assert detectable_difference(0.5, alpha=0.01, power=0.9) == pytest.approx(0.5 * (2.575829 + 1.281552), abs=1e-5)
    with pytest.raises(ValueError):
        detectable_difference(1.0, power=1.0)


def test_reducers_recompute_the_corpus_metric():
    # span F1 over two sentences: tp 1 of 1 predicted, 2 gold; tp 0 of 1 predicted, 1 gold.
    # Corpus: 2·1 / (2 + 3) = 40%; the mean of the per-sentence F1s (66.7 and 0) would be 33.3.
    units = np.array([[1, 1, 2], [0, 1, 1]], dtype=float)
    assert span_f1(units.sum(axis=0)) == pytest.approx(40.0)
    assert mean_percent(np.array([3.0, 4.0])) == pytest.approx(75.0)
    assert mean_percent(np.array([0.0, 0.0])) == 0.0
    # MUC: key {A,B,C,D}, response {A,B} {C,D}: recall 2/3, precision 1 -> F1 80.
    # B³ (issue 26): precision = recall = (11/3) / 5 = 11/15 -> F1 73.33.
    # CEAFφ4: Σφ 1.5 over 2 key and 3 response clusters: recall 0.75, precision 0.5 -> F1 60.
    totals = np.array([2, 3, 2, 2, 11 / 3, 5, 11 / 3, 5, 1.5, 2, 1.5, 3])
    assert coref_average_f1(totals) == pytest.approx((80 + 100 * 11 / 15 + 60) / 3)


def test_identical_settings_differ_by_nothing():
    rng = np.random.default_rng(1)
    units = rng.integers(0, 2, size=(3, 50, 1)).astype(float)
    stats = np.concatenate([units, np.ones_like(units)], axis=2)          # [correct, 1] per example
    result = paired_bootstrap(stats, stats, mean_percent, resamples=200)
    assert result.difference == 0.0 and result.p_value == 1.0 and result.standard_error == 0.0
    assert (result.units, result.seeds, result.resamples) == (50, 3, 200)


def test_paired_accuracy_difference_matches_the_binomial():
    # 100 sentences; the treatment is right on 10 more of them and on the same others. Resampling
    # sentences, the number of improved ones in a resample is Binomial(100, 0.1), so the shifted
    # test's p is P(X >= 20) + P(X <= 0), and the SE of the difference is 100·sqrt(0.1·0.9/100) = 3.
    control = np.zeros((100, 2))
    control[:, 1] = 1
    control[:60, 0] = 1
    treatment = control.copy()
    treatment[60:70, 0] = 1
    result = paired_bootstrap(control, treatment, mean_percent, resamples=20_000, seed=3)
    assert result.difference == pytest.approx(10.0)
    exact = binom.sf(19, 100, 0.1) + binom.pmf(0, 100, 0.1)
    assert result.p_value == pytest.approx(exact, abs=0.001)
    assert result.standard_error == pytest.approx(3.0, rel=0.05)
    assert result.detectable == pytest.approx(2.8016 * result.standard_error, rel=1e-3)


def test_seed_spread_widens_the_interval_and_results_repeat():
    # same units, but the seeds of the treatment disagree: resampling seeds must add their spread
    rng = np.random.default_rng(0)
    correct = rng.integers(0, 2, size=(200,)).astype(float)
    control = np.stack([np.stack([correct, np.ones(200)], axis=1)] * 3)
    treatment = control.copy()
    treatment[0, :20, 0] = 1          # seed 0 better on 20 sentences, seeds 1 and 2 as the control
    units_only = paired_bootstrap(control, treatment, mean_percent, resamples=2000, resample_seeds=False)
    with_seeds = paired_bootstrap(control, treatment, mean_percent, resamples=2000)
    assert units_only.difference == with_seeds.difference
    assert with_seeds.standard_error > units_only.standard_error
    assert paired_bootstrap(control, treatment, mean_percent, resamples=2000) == with_seeds


def test_mismatched_sides_are_an_error():
    with pytest.raises(ValueError, match=r"control has shape \(2, 5, 2\).*treatment \(3, 5, 2\)"):
        paired_bootstrap(np.ones((2, 5, 2)), np.ones((3, 5, 2)), mean_percent)
    with pytest.raises(ValueError, match="expected unit statistics of shape"):
        paired_bootstrap(np.ones(5), np.ones(5), mean_percent)
