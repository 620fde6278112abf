"""CRF log-likelihood and Viterbi against brute-force enumeration; BIOUL constraints."""

import itertools

import pytest
import torch
from fp_bounds import U64, gamma

from elmo_repro.nn.crf import ConditionalRandomField, allowed_transitions, is_valid_bioul

LABELS = ["O", "B-PER", "I-PER", "L-PER", "U-PER", "B-LOC", "I-LOC", "L-LOC", "U-LOC"]


def random_crf(num_tags, constraints=None, seed=0):
    torch.manual_seed(seed)
    crf = ConditionalRandomField(num_tags, constraints).double()
    with torch.no_grad():
        for p in (crf.transitions, crf.start_transitions, crf.end_transitions):
            p.normal_()
    return crf


def sequence_score(crf, emissions, tags, constrained):
    start, trans, end = crf._scores(constrained)
    score = start[tags[0]] + end[tags[-1]] + sum(emissions[t, tag] for t, tag in enumerate(tags))
    return score + sum(trans[a, b] for a, b in zip(tags, tags[1:]))


def brute_force(crf, emissions, length, constrained):
    """All K^n sequences of the first ``length`` positions: (log Z, best score, best sequence)."""
    k = emissions.size(1)
    scores = {tags: sequence_score(crf, emissions, tags, constrained)
              for tags in itertools.product(range(k), repeat=length)}
    best = max(scores, key=lambda tags: scores[tags])
    log_z = torch.logsumexp(torch.stack(list(scores.values())), 0)
    if constrained:     # the constrained normaliser ranges over the valid BIOUL sequences only
        valid = [sequence_score(crf, emissions, tags, False) for tags in scores
                 if is_valid_bioul([LABELS[i] for i in tags])]
        # float64; the valid sequences score the same either way and the others add exp(-10000) = 0,
        # so only the two log-sum-exps' orders differ: N-term sums (N - 1), exp and log (2 each),
        # the shift (1) relative to the sum, i.e. absolutely after the log, plus log's rounding of |log Z|
        bound = 2 * gamma(len(scores) + 4, U64) * (1 + abs(log_z.item()))
        assert log_z.item() == pytest.approx(torch.logsumexp(torch.stack(valid), 0).item(), abs=bound)
        assert is_valid_bioul([LABELS[i] for i in best])
    return log_z, best


@pytest.mark.parametrize("constrained", [False, True])
def test_log_likelihood_and_viterbi_match_brute_force(constrained):
    k = len(LABELS) if constrained else 4
    crf = random_crf(k, allowed_transitions(LABELS) if constrained else None)
    crf.constrain_training = constrained
    lengths = [4, 2, 1] if constrained else [5, 3, 1]
    torch.manual_seed(1)
    emissions = torch.randn(3, max(lengths), k, dtype=torch.float64)
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    paths = crf.viterbi_tags(emissions, mask)
    gold = torch.randint(0, k, (3, max(lengths)))
    for b, n in enumerate(lengths):
        log_z, best = brute_force(crf, emissions[b], n, constrained)
        if constrained:                                           # a valid gold sequence
            gold[b, :n] = torch.tensor(best)
        expected = sequence_score(crf, emissions[b], gold[b, :n].tolist(), constrained) - log_z
        # float64 both ways: the path scores (2n + 1 terms, each at most the largest |emission| or
        # |transition| s) and log Z by enumeration (as above) or by the forward algorithm (n
        # log-sum-exps over K tags: K + 5 roundings each), relative to (2n + 1) s + |log Z|
        s = max(float(emissions[b].abs().max()), *(float(p.detach().abs().max()) for p in
                (crf.transitions, crf.start_transitions, crf.end_transitions)))
        roundings = (2 * n + 1) + k ** n + 4 + n * (k + 5)
        bound = 2 * gamma(roundings, U64) * ((2 * n + 1) * s + abs(log_z.item()))
        assert crf.log_likelihood(emissions, gold, mask)[b].item() == pytest.approx(expected.item(), abs=bound)
        assert paths[b] == list(best)
    assert crf(emissions, gold, mask).item() == crf.log_likelihood(emissions, gold, mask).sum().item()   # the same sum


def test_padding_does_not_change_the_likelihood():
    crf = random_crf(len(LABELS), allowed_transitions(LABELS))
    emissions = torch.randn(1, 3, len(LABELS), dtype=torch.float64)
    padded = torch.cat([emissions, 100 * torch.randn(1, 4, len(LABELS), dtype=torch.float64)], 1)
    tags = torch.tensor([[1, 3, 0]])
    mask = torch.tensor([[True] * 3 + [False] * 4])
    short = crf.log_likelihood(emissions, tags, torch.ones(1, 3, dtype=torch.bool))
    long = crf.log_likelihood(padded, torch.cat([tags, torch.full((1, 4), 7)], 1), mask)
    # padding adds exact zeros to the gold score and keeps alpha as it was (torch.where); only the
    # float64 sums over 3 or 7 positions may group differently: 2 x 7 terms of the path score each
    s = max(float(emissions.abs().max()), *(float(p.detach().abs().max()) for p in
            (crf.transitions, crf.start_transitions, crf.end_transitions)))
    torch.testing.assert_close(short, long, rtol=0, atol=2 * gamma(2 * 7 + 2, U64) * (2 * 7 + 1) * s)
    assert crf.viterbi_tags(padded, mask) == crf.viterbi_tags(emissions, torch.ones(1, 3, dtype=torch.bool))


def test_allowed_transitions_follow_allennlp_bioul():
    allowed = set(allowed_transitions(LABELS))
    idx = {label: i for i, label in enumerate(LABELS)}
    start, end = len(LABELS), len(LABELS) + 1
    assert (idx["O"], idx["I-PER"]) not in allowed
    assert (idx["B-PER"], idx["I-PER"]) in allowed and (idx["B-PER"], idx["L-PER"]) in allowed
    assert (idx["B-PER"], idx["L-LOC"]) not in allowed and (idx["B-PER"], idx["O"]) not in allowed
    assert (idx["L-PER"], idx["U-LOC"]) in allowed and (idx["U-PER"], idx["B-PER"]) in allowed
    assert {j for i, j in allowed if i == start} == {idx[t] for t in LABELS if t[0] in "OBU"}
    assert {i for i, j in allowed if j == end} == {idx[t] for t in LABELS if t[0] in "OLU"}
    assert not is_valid_bioul(["B-PER"]) and not is_valid_bioul(["I-PER", "L-PER"])
    assert is_valid_bioul(["B-PER", "I-PER", "L-PER", "U-LOC", "O"])


def test_constrained_decoding_emits_only_valid_bioul():
    crf = random_crf(len(LABELS), allowed_transitions(LABELS), seed=3)
    torch.manual_seed(4)
    emissions = 5 * torch.randn(64, 12, len(LABELS), dtype=torch.float64)
    # Push hard toward invalid tags: I-/L- everywhere scores highest.
    emissions[:, :, [2, 3, 6, 7]] += 10
    lengths = torch.randint(1, 13, (64,))
    mask = torch.arange(12)[None, :] < lengths[:, None]
    for path, n in zip(crf.viterbi_tags(emissions, mask), lengths.tolist()):
        assert len(path) == n and is_valid_bioul([LABELS[i] for i in path])


def test_gradients_are_finite_with_constraints():
    crf = random_crf(len(LABELS), allowed_transitions(LABELS)).float()
    emissions = torch.randn(2, 5, len(LABELS), requires_grad=True)
    tags = torch.tensor([[1, 2, 3, 0, 4], [8, 0, 0, 0, 0]])
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    (-crf(emissions, tags, mask)).backward()
    assert torch.isfinite(emissions.grad).all() and torch.isfinite(crf.transitions.grad).all()
