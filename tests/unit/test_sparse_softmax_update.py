"""The sparse softmax update (issue 28 §4; bilm-tf's ``IndexedSlices``): only the rows of
``softmax_W`` a batch touches get a gradient and an Adagrad step, with the dense update's numbers.

Why the comparisons are bit for bit (tolerance 0), not within a rounding bound: the sparse path
runs the same kernels on the same values, zeros aside. A touched row's gradient contributions
are summed by the same autograd graph (only the gathered table replaces the (V, D) parameter),
Adagrad's elementwise arithmetic does not depend on where a row sits, and the global norm of the
gathered rows (ascending ids, D a multiple of the CPU's float vector width: 16 here) adds the same
squares in the same vector lanes and order as the norm of the (V, D) gradient, whose other
entries are zeros (exact to add). On CUDA the norm's reduction tree depends on the layout, so
there the two updates agree to float rounding only (not tested here: no CUDA in the unit tests).
"""

import copy
from pathlib import Path

import pytest
import torch
from pretrain_settings import settings

from elmo_repro.bilm.model import BiLM, BiLMConfig
from elmo_repro.bilm.sampled_softmax import SoftmaxLayer, SoftmaxRows
from elmo_repro.bilm.train import CHECKPOINT, pretrain
from elmo_repro.data.character_ids import batch_to_char_ids
from elmo_repro.data.vocabulary import Vocabulary, count_tokens

pytestmark = pytest.mark.usefixtures("one_thread")

SENTENCES = [s.split() for s in [
    "the cat sat on the mat", "a dog barked", "the dog sat", "cats and dogs are pets",
    "the mat is red", "a cat is a pet", "dogs bark at cats", "the red dog sat on a mat"]]
VOCAB, DIM, BATCH, STEPS = 40, 16, 3, 4


def _config(vocab: int, dropout: float = 0.1) -> BiLMConfig:
    return BiLMConfig(filters=((1, 4), (2, 4)), char_dim=4, n_highway=1, cell_dim=8, projection_dim=DIM,
                      n_layers=1, dropout=dropout, n_tokens_vocab=vocab)


def _train_steps(start: BiLM, sparse: bool, clip: float, autocast: bool = False):
    """Three steps of train.py's update on fixed batches and negatives, through the dense or the
    sparse softmax update: (model, optimizer, losses, gradient norms, touched rows per step)."""
    model = copy.deepcopy(start).train()
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.2, initial_accumulator_value=1.0)
    types = torch.from_numpy(batch_to_char_ids([[w] for s in SENTENCES for w in s], add_boundaries=False))[:, 0]
    generator = torch.Generator().manual_seed(5)
    torch.manual_seed(6)                                                  # the same dropout masks
    params, states, losses, norms, touched = list(model.parameters()), [None, None], [], [], []
    for step in range(3):
        inputs = torch.randint(0, len(types), (2, BATCH, STEPS), generator=generator)
        # targets repeat rows (8 classes over 12 positions) and reach row VOCAB - 1 ...
        targets = torch.randint(VOCAB - 8, VOCAB, (2, BATCH * STEPS), generator=generator)
        # ... and the two directions' negatives share rows with each other and with the targets
        negatives = [(torch.tensor([0, 1, 2, VOCAB - 1, VOCAB - 2, 7 + step]), 9),
                     (torch.tensor([1, 2, 3, VOCAB - 1, VOCAB - 3, 9]), 8)]
        rows, grads = None, params
        if sparse:
            rows = SoftmaxRows.gather(model.softmax, torch.cat([targets.reshape(-1), negatives[0][0], negatives[1][0]]))
            grads = [rows.weight if p is model.softmax.weight else p for p in params]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            unique, inverse = torch.unique(inputs, return_inverse=True)
            tokens = model.token_embedder(types[unique])[inverse]
            loss = 0.0
            for d in range(2):
                hidden, states[d] = model.direction_hidden(tokens[d], bool(d), states[d])
                loss = loss + 0.5 * model.softmax.sampled_loss(hidden.reshape(-1, DIM), targets[d], 6,
                                                               negatives=negatives[d], rows=rows)
        optimizer.zero_grad(set_to_none=True)
        (loss * STEPS).backward()
        if sparse:
            assert model.softmax.weight.grad is None                      # no (V, D) gradient at all
        norms.append(torch.nn.utils.clip_grad_norm_(grads, clip))
        optimizer.step()
        if sparse:
            rows.adagrad_step(optimizer, model.softmax.weight)
        states = [[(h.detach(), c.detach()) for h, c in s] for s in states]
        losses.append(loss.detach())
        touched.append(torch.unique(torch.cat([targets.reshape(-1), negatives[0][0], negatives[1][0]])))
    return model, optimizer, losses, norms, touched


def _assert_same_training(dense, sparse) -> None:
    (m_d, o_d, loss_d, norm_d, _), (m_s, o_s, loss_s, norm_s, _) = dense, sparse
    assert all(torch.equal(a, b) for a, b in zip(loss_d, loss_s)), (loss_d, loss_s)
    assert all(torch.equal(a, b) for a, b in zip(norm_d, norm_s)), (norm_d, norm_s)
    for name, value in m_d.state_dict().items():
        assert torch.equal(value, m_s.state_dict()[name]), name
    state_d, state_s = o_d.state_dict(), o_s.state_dict()
    assert state_d["param_groups"] == state_s["param_groups"]
    for k, st in state_d["state"].items():                              # accumulators and step counts
        other = state_s["state"][k]
        assert torch.equal(st["sum"], other["sum"]) and torch.equal(st["step"], other["step"]), k


@pytest.mark.parametrize("clip", [10.0, 0.05])
@pytest.mark.parametrize("autocast", [False, True])
def test_sparse_steps_equal_dense_steps_and_leave_untouched_rows_alone(clip, autocast):
    torch.manual_seed(0)
    start = BiLM(_config(VOCAB))
    dense, sparse = _train_steps(start, False, clip, autocast), _train_steps(start, True, clip, autocast)
    if clip < 1:
        assert all(n > clip for n in sparse[3])                            # the clip binds at every step
    _assert_same_training(dense, sparse)
    model, optimizer, touched = sparse[0], sparse[1], torch.unique(torch.cat(sparse[4]))
    untouched = torch.ones(VOCAB, dtype=torch.bool)
    untouched[touched] = False
    assert untouched.any() and len(touched) > 8
    softmax, accumulators = model.softmax, optimizer.state[model.softmax.weight]
    assert torch.equal(softmax.weight[untouched], start.softmax.weight[untouched])
    assert torch.equal(accumulators["sum"][untouched], torch.ones(int(untouched.sum()), DIM))
    assert torch.equal(softmax.bias[untouched], start.softmax.bias[untouched])
    assert torch.equal(optimizer.state[softmax.bias]["sum"][untouched], torch.ones(int(untouched.sum())))
    assert (softmax.weight[touched] != start.softmax.weight[touched]).any(-1).all()   # every touched row moved
    assert int(accumulators["step"]) == 3                                 # a dense step count


def _vocab() -> Vocabulary:
    return Vocabulary.build(*count_tokens(SENTENCES))


def _pretrain(tmp: Path, sparse: bool, clip: float = 10.0, stop_after: int | None = None, start_dir: str = ""):
    vocab = _vocab()
    cfg = settings(seed=3, token_budget=4 * 5 * 6, batch_size=4, unroll_steps=5, n_negative_samples=6,
                   checkpoint_every=2, log_every=2, grad_clip=clip, softmax_bias_init="unigram")
    return pretrain(_config(len(vocab)), cfg, SENTENCES, vocab, tmp / (start_dir or f"{sparse}-{clip}"),
                    stop_after=stop_after, sparse_softmax_update=sparse)


@pytest.mark.parametrize("clip", [10.0, 0.5])
def test_pretraining_with_the_sparse_update_gives_the_dense_weights_bit_for_bit(tmp_path, clip):
    (dense, dense_summary), (sparse, sparse_summary) = _pretrain(tmp_path, False, clip), _pretrain(tmp_path, True, clip)
    for name, value in dense.state_dict().items():
        assert torch.equal(value, sparse.state_dict()[name]), name
    drop = {"tokens_per_second"}
    assert {k: v for k, v in dense_summary.items() if k not in drop} == \
        {k: v for k, v in sparse_summary.items() if k not in drop}
    assert (dense_summary["grad_norm"] > clip) == (clip < 1)
    dense_state, sparse_state = (torch.load(tmp_path / f"{s}-{clip}" / CHECKPOINT, weights_only=True)["optimizer"]
                                 for s in (False, True))
    for k, st in dense_state["state"].items():                          # accumulators and step counts
        other = sparse_state["state"][k]
        assert torch.equal(st["sum"], other["sum"]) and int(st["step"]) == int(other["step"]) == 6


def test_a_checkpoint_resumes_exactly_under_either_update(tmp_path):
    """The optimizer state keeps torch's Adagrad format: a sparse run resumes its own checkpoint,
    and a checkpoint written by the dense update resumes under the sparse one (an older run's)."""
    full, _ = _pretrain(tmp_path, True)
    _pretrain(tmp_path, True, stop_after=3, start_dir="sparse-kill")
    resumed, _ = _pretrain(tmp_path, True, start_dir="sparse-kill")
    _pretrain(tmp_path, False, stop_after=3, start_dir="dense-kill")
    switched, _ = _pretrain(tmp_path, True, start_dir="dense-kill")
    for name, value in full.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[name]), name
        assert torch.equal(value, switched.state_dict()[name]), name


def test_misuse_is_refused():
    torch.manual_seed(0)
    layer = SoftmaxLayer(vocab_size=10, dim=4)
    rows = SoftmaxRows.gather(layer, torch.tensor([3, 1, 3, 7]))
    assert rows.ids.tolist() == [1, 3, 7] and torch.equal(rows.weight, layer.weight[[1, 3, 7]])
    assert rows.positions(torch.tensor([7, 1, 3, 3])).tolist() == [2, 0, 1, 1]
    with pytest.raises(ValueError, match="outside the gathered softmax rows"):
        rows.positions(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="outside the gathered softmax rows"):
        rows.positions(torch.tensor([9]))                                   # past the last gathered id
    hidden = torch.randn(2, 4)
    with pytest.raises(ValueError, match="outside the gathered softmax rows"):
        layer.sampled_loss(hidden, torch.tensor([1, 3]), 2, negatives=(torch.tensor([3, 8]), 4), rows=rows)
    with pytest.raises(ValueError, match="every row is touched"):
        layer.sampled_loss(hidden, torch.tensor([1, 3]), 10, rows=rows)
    assert layer.draw_negatives(10) is None
    with pytest.raises(ValueError, match="run backward first"):
        rows.adagrad_step(torch.optim.Adagrad(layer.parameters()), layer.weight)
    layer.sampled_loss(hidden, torch.tensor([1, 3]), 2, negatives=(torch.tensor([3, 7]), 4), rows=rows).backward()
    with pytest.raises(ValueError, match="weight decay"):
        rows.adagrad_step(torch.optim.Adagrad(layer.parameters(), weight_decay=0.1), layer.weight)
    with pytest.raises(ValueError, match="not among the optimizer's parameters"):
        rows.adagrad_step(torch.optim.Adagrad([layer.bias]), layer.weight)
    with pytest.raises(TypeError, match="Adagrad's; got SGD"):
        rows.adagrad_step(torch.optim.SGD(layer.parameters(), lr=0.1), layer.weight)
