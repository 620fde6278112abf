"""SRL building blocks: BIO-constrained Viterbi, He et al.'s highway LSTM, the tagger, the floor."""

import itertools

import numpy as np
import pytest
import torch
from overfit import overfit

from elmo_repro.experiments.specs import ElmoSpec
from elmo_repro.tasks.srl.metric import srl_prf
from elmo_repro.nn.viterbi import bio_constraints, constrained_viterbi
from elmo_repro.nn.highway_lstm import AlternatingHighwayLSTM, HighwayLSTMLayer
from elmo_repro.tasks.srl.floor import fit_position_tags, predict_position_tags, relative_position
from elmo_repro.tasks.srl.model import SrlTagger

LABELS = ["O", "B-A0", "I-A0", "B-A1", "I-A1", "B-V"]


def _valid(tags):
    previous = "O"
    for tag in tags:
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            return False
        previous = tag
    return True


def test_viterbi_never_breaks_the_bio_constraints_and_finds_the_best_valid_sequence():
    start, transitions = bio_constraints(LABELS)
    assert start.tolist() == [True, True, False, True, False, True]
    assert transitions[LABELS.index("B-A0"), LABELS.index("I-A0")] and \
        not transitions[LABELS.index("B-A1"), LABELS.index("I-A0")] and \
        not transitions[LABELS.index("O"), LABELS.index("I-A1")]
    generator = torch.Generator().manual_seed(0)
    for _ in range(40):
        scores = torch.randn(3, 4, len(LABELS), generator=generator) * 3
        lengths = torch.tensor([4, 2, 1])
        mask = torch.arange(4)[None, :] < lengths[:, None]
        paths = constrained_viterbi(scores, mask, start, transitions)
        for b, path in enumerate(paths):
            n = int(lengths[b])
            assert len(path) == n and _valid([LABELS[k] for k in path])
            # exhaustive search over every valid sequence agrees
            best = max((seq for seq in itertools.product(range(len(LABELS)), repeat=n)
                        if _valid([LABELS[k] for k in seq])),
                       key=lambda seq: sum(float(scores[b, t, k]) for t, k in enumerate(seq)))
            assert path == list(best)


def test_a_highway_lstm_step_matches_the_equations():
    torch.manual_seed(0)
    layer = HighwayLSTMLayer(3, 2)
    x = torch.randn(1, 1, 3)
    out = layer(x, torch.tensor([1]))
    p = layer.input_linearity(x[0, 0])                     # zero previous state: W_state h = b_state only
    p[:10] = p[:10] + layer.state_linearity.bias
    i, f, o, r = torch.sigmoid(p[:8]).split(2)
    g, highway = torch.tanh(p[8:10]), p[10:]
    c = i * g                                             # c_{t-1} = 0
    expected = r * o * torch.tanh(c) + (1 - r) * highway
    torch.testing.assert_close(out[0, 0], expected)
    assert layer.state_linearity.bias[2:4].tolist() == [1.0, 1.0] and layer.input_linearity.bias is None     # forget-gate bias 1


def test_directions_alternate_and_padding_changes_nothing():
    torch.manual_seed(0)
    lstm = AlternatingHighwayLSTM(4, 5, layers=3).eval()
    assert [layer.go_forward for layer in lstm.layers] == [True, False, True]
    x = torch.randn(2, 6, 4)
    alone = lstm(x[1:, :3], torch.tensor([3]))
    batched = lstm(x, torch.tensor([6, 3]))
    torch.testing.assert_close(batched[1, :3], alone[0])
    assert not batched[1, 3:].any()
    # a backward layer reads the reversed sequence
    backward = HighwayLSTMLayer(4, 5, go_forward=False)
    forward = HighwayLSTMLayer(4, 5, go_forward=True)
    forward.load_state_dict(backward.state_dict())
    torch.testing.assert_close(backward(x[:1], torch.tensor([6])), forward(x[:1].flip(1), torch.tensor([6])).flip(1))


def test_recurrent_dropout_drops_the_same_units_at_every_step():
    torch.manual_seed(0)
    layer = HighwayLSTMLayer(4, 64, recurrent_dropout=0.5).train()
    out = layer(torch.randn(1, 7, 4), torch.tensor([7]))
    dropped = out[0] == 0                                  # (T, H)
    assert dropped.any() and bool((dropped == dropped[0]).all())


def _batch(words, predicate_index, tags=None):
    t = len(words)
    return {"words": torch.tensor([words]), "predicate": torch.tensor([[int(i == predicate_index) for i in range(t)]]),
            "mask": torch.ones(1, t, dtype=torch.bool), "lengths": torch.tensor([t]),
            "tags": None if tags is None else torch.tensor([[LABELS.index(x) for x in tags]]), "elmo": None}


CFG = {"predicate_dim": 4, "lstm_hidden": 16, "lstm_layers": 2, "recurrent_dropout": 0.1, "embedding_dropout": 0.0}


def test_the_tagger_learns_a_proposition_and_decodes_it_validly():
    torch.manual_seed(0)
    model = SrlTagger(np.random.default_rng(0).normal(size=(8, 6)).astype(np.float32), LABELS, CFG)
    gold = ["B-A0", "I-A0", "B-V", "B-A1", "O"]
    batch = _batch([2, 3, 4, 5, 6], 2, gold)
    first, last = overfit(model, batch)
    assert last < first / 10
    assert model.predict(batch) == [gold]
    assert srl_prf([gold], model.predict(batch))["f1"] == 100.0


def test_elmo_joins_at_the_input_and_the_output():
    spec = ElmoSpec(placement="both", dropout=0.0)
    model = SrlTagger(np.zeros((8, 6), dtype=np.float32), LABELS, CFG, spec, (3, 10))
    assert model.lstm.layers[0].input_linearity.in_features == 6 + 4 + 10
    assert model.projection.in_features == 16 + 10
    batch = _batch([2, 3, 4], 1, ["B-A0", "B-V", "B-A1"])
    batch["elmo"] = torch.randn(1, 3, 3, 10)
    assert model.logits(batch).shape == (1, 3, len(LABELS))


def test_the_floor_tags_by_position_relative_to_the_predicate():
    train = [(1, ["B-A0", "B-V", "B-A1", "I-A1"]), (1, ["B-A0", "B-V", "O", "O"]), (0, ["B-V", "B-A1", "O", "O"])]
    table = fit_position_tags(train, max_distance=2)
    assert table == {-1: "B-A0", 0: "B-V", 1: "B-A1", 2: "O"}     # position +1: B-A1 twice, O once
    assert relative_position(9, 1, 2) == 2 and relative_position(0, 5, 2) == -2
    assert predict_position_tags(table, 2, 5, max_distance=2) == ["O", "B-A0", "B-V", "B-A1", "O"]
