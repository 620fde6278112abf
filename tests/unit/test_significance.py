"""The significance tools against answers worked by hand or known in closed form (the level of
the test by simulation: test_significance_level.py)."""

import numpy as np
import pytest
from scipy.stats import t as student_t
from scipy.stats import ttest_rel

from elmo_repro.significance import (batch_mc_se, compare_settings, contrast_test, decide, detectable_difference,
                                     holm, holm_levels, holm_mc_se, interaction_variance, variance_parts)
from elmo_repro.tasks.units import coref_average_f1, mean_percent, span_f1


def test_holm_by_hand():
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 -> running max 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, None, 0.9]) == [1.0, None, 1.0]    # m = 2: 0.5·2 capped at 1, then max(1, 0.9·1)
    assert holm([0.02, None, 0.01]) == pytest.approx([0.02, None, 0.02])
    assert holm([]) == []
    with pytest.raises(ValueError, match="p-value 1 is 1.5"):
        holm([0.1, 1.5])


def test_holm_levels_and_monte_carlo_error_by_hand():
    # ranks 2, 4, 3, 1 of 4: levels 0.05/3, 0.05/1, 0.05/2, 0.05/4
    assert holm_levels([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.05 / 3, 0.05, 0.025, 0.0125])
    # batch means: std(1, 2, 3, 4) = 1.2910 over √4
    assert batch_mc_se([1, 2, 3, 4]) == pytest.approx(1.2909944 / 2)
    # two comparisons over two batches: Holm per batch (0.02, 0.04) and (0.04, 0.04) -> SEs 0.01 and 0
    assert holm_mc_se([[0.01, 0.02], [0.04, 0.03]]) == pytest.approx([0.01, 0.0], abs=1e-12)


def test_detectable_difference_by_hand():
    assert detectable_difference(1.0) == pytest.approx(1.959964 + 0.841621, abs=1e-5)
    assert detectable_difference(0.5, alpha=0.01, power=0.9) == pytest.approx(0.5 * (2.575829 + 1.281552), abs=1e-5)
    # Student's t with 2 degrees of freedom: 4.302653 + 1.060660
    assert detectable_difference(1.0, df=2) == pytest.approx(4.302653 + 1.060660, abs=1e-5)
    with pytest.raises(ValueError):
        detectable_difference(1.0, power=1.0)
    with pytest.raises(ValueError):
        detectable_difference(1.0, df=0)


def test_decide_leaves_a_p_near_the_threshold_unresolved():
    assert decide(0.01, 0.001) == "significant"
    assert decide(0.2, 0.01) == "not significant"
    assert decide(0.0497, 0.002) == "not resolved"
    assert decide(0.048, 0.0005) == "significant"


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
    result = compare_settings(stats, stats, mean_percent, resamples=200)
    assert result.difference == 0.0 and result.p_value == 1.0 and result.standard_error == 0.0
    assert (result.units, result.seeds, result.resamples) == (50, 3, 200)


def test_with_no_unit_variance_it_is_the_paired_t_test_over_seeds():
    # every unit of a seed scores alike, so resampling units changes nothing: the test is the
    # paired t-test of the per-seed scores (2 degrees of freedom with 3 seeds)
    control_acc, treatment_acc = np.array([0.50, 0.55, 0.52]), np.array([0.58, 0.57, 0.61])
    side = lambda acc: np.stack([np.stack([np.full(40, a), np.ones(40)], axis=1) for a in acc])  # noqa: E731
    result = compare_settings(side(control_acc), side(treatment_acc), mean_percent, resamples=200)
    expected = ttest_rel(100 * treatment_acc, 100 * control_acc)
    assert result.unit_se == pytest.approx(0.0, abs=1e-9) and result.df == pytest.approx(2.0)
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-9)
    assert result.difference == pytest.approx(100 * (treatment_acc - control_acc).mean())
    assert result.per_seed == pytest.approx(100 * (treatment_acc - control_acc))


def test_one_seed_is_the_unit_bootstrap_with_a_t_reference():
    # 100 sentences; the treatment is right on 10 more of them. Resampling sentences, the number of
    # improved ones is Binomial(100, 0.1): the SE of the difference is 100·sqrt(0.1·0.9/100) = 3
    control = np.zeros((100, 2))
    control[:, 1] = 1
    control[:60, 0] = 1
    treatment = control.copy()
    treatment[60:70, 0] = 1
    result = compare_settings(control, treatment, mean_percent, resamples=20_000, seed=3)
    assert result.difference == pytest.approx(10.0) and result.seed_se is None and result.seeds == 1
    assert result.standard_error == pytest.approx(3.0, rel=0.03) and result.df == pytest.approx(99.0)
    assert result.p_value == pytest.approx(2 * student_t.sf(10.0 / result.standard_error, 99), rel=1e-9)
    # the Monte-Carlo SE of p is small and the same seed gives the same answer
    assert 0 < result.p_mc_se < 0.1 * result.p_value
    assert compare_settings(control, treatment, mean_percent, resamples=20_000, seed=3) == result


def test_seed_spread_adds_its_variance():
    rng = np.random.default_rng(0)
    correct = rng.integers(0, 2, size=(200,)).astype(float)
    control = np.stack([np.stack([correct, np.ones(200)], axis=1)] * 3)
    treatment = control.copy()
    treatment[0, :20, 0] = 1          # seed 0 better on some sentences, seeds 1 and 2 as the control
    result = compare_settings(control, treatment, mean_percent, resamples=2000)
    per_seed = 100 * np.array([(treatment[0, :, 0].sum() - correct.sum()) / 200, 0.0, 0.0])
    assert result.seed_se == pytest.approx(per_seed.std(ddof=1) / np.sqrt(3))
    parts = variance_parts(result.unit_se ** 2, result.seed_se ** 2, result.interaction_se ** 2)
    assert result.standard_error ** 2 == pytest.approx(sum(parts))
    assert result.standard_error > result.unit_se > 0


def test_the_interaction_variance_by_hand():
    # one setting, 2 seeds × 3 units of one example: correct [[1, 0, 1], [0, 0, 1]]. Linearised at the
    # seeds' mean totals (1.5 of 3 correct), a unit adds x = 100·c − 50: [[50, −50, 50], [−50, −50, 50]];
    # its two-way residuals ±33.33, ±16.67 (twice each) sum to 3333.3 over (2 − 1)(3 − 1) = 2
    # degrees of freedom: 1666.7, over n·U = 6: 277.8
    correct = np.array([[1, 0, 1], [0, 0, 1]], dtype=float)
    stats = np.stack([correct, np.ones_like(correct)], axis=-1)               # [seeds, units, 2]
    assert interaction_variance([stats], np.array([1.0]), mean_percent) == pytest.approx(10000 / 36, rel=1e-6)
    # taken out of both parts it is in, each floored at 0; no seed part with one seed
    assert variance_parts(5.0, 3.0, 1.0) == (4.0, 2.0, 1.0)
    assert variance_parts(0.5, 3.0, 1.0) == (0.0, 2.0, 1.0)
    assert variance_parts(5.0, None, 1.0) == (5.0, 0.0, 0.0)


def test_a_contrast_of_four_settings_is_the_difference_of_two_differences():
    rng = np.random.default_rng(4)
    sides = [np.stack([np.stack([rng.integers(0, 2, 80).astype(float), np.ones(80)], axis=1) for _ in range(3)])
             for _ in range(4)]
    scores = [mean_percent(side.sum(axis=1)) for side in sides]                 # [seeds] each
    result = contrast_test(sides, (1.0, -1.0, -1.0, 1.0), mean_percent, resamples=500)
    expected = (scores[0] - scores[1]) - (scores[2] - scores[3])
    assert result.per_seed == pytest.approx(expected) and result.difference == pytest.approx(expected.mean())


def test_mismatched_sides_are_an_error():
    with pytest.raises(ValueError, match=r"\(2, 5, 2\), \(3, 5, 2\)"):
        compare_settings(np.ones((2, 5, 2)), np.ones((3, 5, 2)), mean_percent)
    with pytest.raises(ValueError, match="expected unit statistics of shape"):
        compare_settings(np.ones(5), np.ones(5), mean_percent)
    with pytest.raises(ValueError, match="one weight per setting"):
        contrast_test([np.ones((2, 5, 2))], (1.0, -1.0), mean_percent)
    with pytest.raises(ValueError, match="batches"):
        compare_settings(np.ones((2, 5, 2)), np.ones((2, 5, 2)), mean_percent, resamples=10, batches=20)
