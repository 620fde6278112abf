"""The fast biLM against the plain per-time-step reference (``elmo_repro.bilm.reference``): same
layers for padded batches, same gradients and the same update for a training step."""

import copy
import math
from types import SimpleNamespace

import pytest
import torch
from fp_bounds import U32, UBF16, bilm_bound, bilm_step_roundings, lstm_step_roundings, token_roundings

from elmo_repro.bilm.lstm import LstmCellWithProjection
from elmo_repro.bilm.model import BiLM, BiLMConfig
from elmo_repro.bilm.reference import reference_cell, reference_direction_hidden, reference_layers
from elmo_repro.data.character_ids import batch_to_char_ids

SENTENCES = [s.split() for s in [
    "the cat sat on the mat", "a dog barked", "hello", "cats and dogs are pets , said the vet",
    "the mat is red", "", "dogs bark at cats"]]


def config(skip: bool, clip: float | None = 3.0, vocab: int = 0) -> BiLMConfig:
    return BiLMConfig(filters=((1, 8), (2, 8), (3, 16)), char_dim=8, n_highway=1, cell_dim=32,
                      projection_dim=16, n_layers=2, cell_clip=clip, proj_clip=clip,
                      use_skip_connections=skip, dropout=0.1, n_tokens_vocab=vocab)


def scaled(model: BiLM, factor: float) -> BiLM:
    """Larger recurrent weights so the cell and projection clips are actually hit."""
    with torch.no_grad():
        for stack in (model.forward_lstm, model.backward_lstm):
            for layer in stack.layers:
                layer.state_weight.mul_(factor)
                layer.projection.mul_(factor)
    return model


@pytest.mark.parametrize("skip", [True, False])
@pytest.mark.parametrize("clip", [3.0, 0.3, None])
def test_layers_match_the_reference_on_padded_batches(skip, clip):
    torch.manual_seed(0)
    model = scaled(BiLM(config(skip, clip)), 4.0).eval()
    char_ids = torch.from_numpy(batch_to_char_ids(SENTENCES))             # padded, one empty row
    with torch.no_grad():
        fast, ref = model.layers(char_ids), reference_layers(model, char_ids)
        exact = reference_layers(copy.deepcopy(model).double(), char_ids)   # float64 reference
    assert fast.shape == ref.shape == (len(SENTENCES), 3, 2 + max(map(len, SENTENCES)), 32)
    # The two float32 implementations sum in different orders (grouped char CNN, reordered gates,
    # folded forget bias), so neither equals the float64 result; how far either may be is bounded
    # by float32 arithmetic itself, not by one CPU's rounding (a ratio of the two errors was 0.3-0.9
    # on one CPU and 2.2 on another). First-order bound: the last position's output is the end of
    # a chain of dependent products and sums, at most (steps x layers x longest reduction) roundings
    # deep, each moving the result by at most u = 2^-24 relative to the largest magnitude in play.
    steps = char_ids.size(1)                                              # with <S> and </S>
    reduction = max(model.config.char_dim * 3, 2 * model.config.projection_dim + model.config.cell_dim)
    bound = float((steps * (model.config.n_layers + 3) * reduction) * 2.0 ** -24 * exact.abs().amax())
    error_fast, error_ref = float((fast - exact).abs().max()), float((ref - exact).abs().max())
    assert error_fast <= bound and error_ref <= bound, (error_fast, error_ref, bound)
    torch.testing.assert_close(fast, ref.to(fast.dtype), atol=2 * bound, rtol=0)
    assert ref.abs().amax() > 0.1                                         # not trivially zero


def test_cell_matches_the_reference_from_a_given_state_with_gradients():
    torch.manual_seed(1)
    cell = LstmCellWithProjection(5, 12, 4, cell_clip=0.5, proj_clip=0.4)
    x = torch.randn(3, 9, 5, requires_grad=True)
    state = (torch.randn(3, 4), torch.randn(3, 12))
    grads = []
    for run in (cell, lambda inputs, s: reference_cell(cell, inputs, s)):
        cell.zero_grad()
        x.grad = None
        out, (h, c) = run(x, state)
        (out.sin().sum() + h.sum() + (c ** 2).sum()).backward()
        grads.append([out.detach(), h.detach(), c.detach(), x.grad.clone(),
                      *(p.grad.clone() for p in cell.parameters())])
    # two float32 orderings of a 9-step chain (fp_bounds.py): the outputs twice its bound; the
    # gradients run it again backwards on the forward values (twice the steps) and each weight's
    # gradient sums over the 3 x 9 positions, relative to the largest gradient (about 2e-3 on 30)
    chain = 9 * lstm_step_roundings(5, 12, 4)
    largest_grad = max(float(g.abs().amax()) for g in grads[1][3:])
    for k, (fast, ref) in enumerate(zip(*grads)):
        bound = (2 * chain * U32 * float(max(t.abs().amax() for t in grads[1][:3])) if k < 3
                 else 2 * (2 * chain + 3 * 9) * U32 * largest_grad)
        torch.testing.assert_close(fast, ref, atol=bound, rtol=0)


@pytest.mark.parametrize("skip", [True, False])
def test_training_step_matches_the_reference(skip):
    """train.py's step (dropout, carried states, sampled softmax, Adagrad, clipping) with the fast
    and the reference LSTMs: the same loss, gradients and updated weights."""
    vocab, batch, steps = 60, 4, 7
    torch.manual_seed(2)
    start = scaled(BiLM(config(skip, vocab=vocab)), 2.0)
    types = torch.from_numpy(batch_to_char_ids([[w] for s in SENTENCES for w in s], add_boundaries=False))[:, 0]
    inputs = torch.randint(0, len(types), (2, batch, steps))
    targets = torch.randint(0, vocab, (2, batch * steps))
    states = [[(torch.randn(batch, 16), torch.randn(batch, 32)) for _ in range(2)] for _ in range(2)]

    results = []
    for hidden_fn in (lambda m, x, d, s: m.direction_hidden(x, d, s), reference_direction_hidden):
        model = copy.deepcopy(start).train()
        optimizer = torch.optim.Adagrad(model.parameters(), lr=0.2, initial_accumulator_value=1.0)
        torch.manual_seed(3)                                              # same dropout masks
        sampler = torch.Generator().manual_seed(4)                        # same negatives
        unique, inverse = torch.unique(inputs, return_inverse=True)
        tokens = model.token_embedder(types[unique])[inverse]             # (2, B, T, P)
        loss, finals = 0.0, []
        for d in range(2):
            hidden, final = hidden_fn(model, tokens[d], bool(d), states[d])
            finals += [t.detach() for hc in final for t in hc]
            loss = loss + 0.5 * model.softmax.sampled_loss(hidden.reshape(-1, 16), targets[d], 20, sampler)
        optimizer.zero_grad(set_to_none=True)
        (loss * steps).backward()
        grads = {name: p.grad.clone() for name, p in model.named_parameters()}
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)    # low: clipping is active
        optimizer.step()
        results.append((loss.detach(), finals, grads, norm, dict(model.named_parameters())))

    (loss_f, finals_f, grads_f, norm_f, params_f), (loss_r, finals_r, grads_r, norm_r, params_r) = results
    assert norm_f > 1.0
    # Two float32 orderings of one training step, each bounded as in fp_bounds.py (2e-4..4e-3 of
    # each quantity's scale; a wrong step is off by its own order). The forward chain: 7 biLM steps,
    # the logits (16 + 1 terms), the log-sum-exp over 1 + 20 classes (2 roundings each), the mean
    # over 28 rows and the 2 directions.
    cfg, n = start.config, batch * steps
    forward = steps * bilm_step_roundings(cfg) + (cfg.projection_dim + 1) + 2 * 21 + n + 2
    torch.testing.assert_close(loss_f, loss_r, atol=2 * forward * U32 * float(loss_r.abs()), rtol=0)
    for fast, ref in zip(finals_f, finals_r):                  # the carried states: the biLM chain only
        torch.testing.assert_close(fast, ref, atol=2 * bilm_bound(cfg, steps, ref.abs().amax()), rtol=0)
    # gradients: the chain again backwards on the forward values, plus each weight's sum over the
    # 2 x 28 positions, relative to the largest gradient G
    assert grads_f.keys() == grads_r.keys()
    g = max(float(t.abs().amax()) for t in grads_r.values())
    grad_bound = 2 * (2 * forward + 2 * n) * U32 * g
    for name in grads_f:
        torch.testing.assert_close(grads_f[name], grads_r[name], atol=grad_bound, rtol=0, msg=name)
    # norm = sqrt(sum g^2) over N entries: within (sum|g| / norm) grad_bound + (N / 2 + 1) u norm
    flat = torch.cat([t.flatten() for t in grads_r.values()])
    norm_bound = float(flat.abs().sum() / norm_r) * grad_bound + (flat.numel() / 2 + 1) * U32 * float(norm_r)
    torch.testing.assert_close(norm_f, norm_r, atol=norm_bound, rtol=0)
    # clipped gradient g / norm: within (grad_bound + G norm_bound / norm) / norm; Adagrad (initial
    # accumulator 1: the step is at most lr |g / norm|) moves each weight by lr times that, plus a
    # few roundings of the step (4 u lr G / norm) and one of the weight
    step_bound = 0.2 * ((grad_bound + g * norm_bound / float(norm_r)) / float(norm_r) + 4 * U32 * g / float(norm_r))
    for name in grads_f:
        bound = step_bound + U32 * float(params_r[name].detach().abs().amax())
        torch.testing.assert_close(params_f[name], params_r[name], atol=bound, rtol=0, msg=name)


def test_bf16_autocast_inference_is_close_and_float32():
    """The opt-in bf16 path (meant for CUDA; autocast also runs it on CPU): float32 out, close to
    the default, padding still zero."""
    torch.manual_seed(0)
    model = BiLM(config(True)).eval()
    char_ids = torch.from_numpy(batch_to_char_ids(SENTENCES))
    with torch.no_grad():
        full, half = model.layers(char_ids), model.layers(char_ids, bf16=True)
    assert half.dtype == torch.float32
    # bf16 autocast rounds the operands of every matrix product to 8 significant bits (2 u_bf16 per
    # product, float32 accumulation); a step has 1 + n_highway + 1 + 2 n_layers products in its
    # chain. Worst case over 12 steps exceeds the values themselves, so this uses the typical
    # bound: independent errors add in quadrature, sqrt(steps x products) x 2 u_bf16 x max|value|
    # (about 2e-2 here; measured 3e-3; a wrong weight or layer is off by the values' own order).
    products = 1 + model.config.n_highway + 1 + 2 * model.config.n_layers
    bound = math.sqrt(char_ids.size(1) * products) * 2 * UBF16 * float(full.abs().amax())
    torch.testing.assert_close(half, full, atol=bound, rtol=0)
    mask = (char_ids > 0).any(-1)
    assert half.permute(0, 2, 1, 3)[~mask].abs().sum() == 0


def test_grouped_char_cnn_equals_the_full_width_convolution_with_gradients():
    """The token layer convolves each word over its content plus the widest filter only; values
    and gradients equal the plain convolution over all 50 slots, for words of every length (a
    60-character token fills all slots), padding rows, and rows whose tail is not the pad char."""
    from elmo_repro.bilm.char_cnn import CharCNNTokenEmbedder
    from elmo_repro.bilm.reference import reference_token_layer

    torch.manual_seed(0)
    embedder = CharCNNTokenEmbedder(262, 8, [[1, 4], [3, 8], [7, 16]], 1, 6)
    words = ["a", "of", "cat", "elephant", "internationalization", "x" * 60, "ünïcödé", "<S>", "</S>"]
    ids = torch.from_numpy(batch_to_char_ids([words], add_boundaries=False))[0]   # (9, 50)
    odd = torch.randint(1, 262, (2, 50))
    odd[1, 30:] = 7                                                    # tail of a non-pad id
    ids = torch.cat([ids, torch.zeros(2, 50, dtype=torch.long), odd])
    outputs, grads = [], []
    for fn in (embedder, lambda x: reference_token_layer(embedder, x)):
        embedder.zero_grad()
        out = fn(ids)
        (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
        outputs.append(out.detach())
        grads.append([p.grad.clone() for p in embedder.parameters()])
    # two float32 orderings of the token layer's chain (fp_bounds.py): twice its bound; the
    # gradients run it again backwards and each weight's sum over the 13 words x 50 slots
    chain = token_roundings(SimpleNamespace(filters=[[1, 4], [3, 8], [7, 16]], char_dim=8, n_highway=1))
    bound = 2 * chain * U32 * float(outputs[1].abs().amax())
    torch.testing.assert_close(outputs[0], outputs[1], atol=bound, rtol=0)
    grad_bound = 2 * (2 * chain + ids.numel()) * U32 * max(float(g.abs().amax()) for g in grads[1])
    for fast, ref in zip(*grads):
        torch.testing.assert_close(fast, ref, atol=grad_bound, rtol=0)
    with torch.no_grad():                                              # amax at inference
        torch.testing.assert_close(embedder(ids), outputs[1], atol=bound, rtol=0)
    assert embedder(ids[:0]).shape == (0, 6)
    assert embedder.embed_unique(ids[:0]).shape == (0, 6)
    assert embedder.embed_unique(ids.new_zeros(2, 0, 50)).shape == (2, 0, 6)


@pytest.mark.parametrize("high", [3, 262, 5000])
def test_unique_rows_partitions_like_torch_unique(high):
    """Packed ranking (ids < 512) and the fallback (larger ids) give torch.unique's partition."""
    from elmo_repro.bilm.char_cnn import unique_rows

    torch.manual_seed(high)
    ids = torch.randint(0, high, (300, 50))
    ids[:, 4:] = high - 1
    ids[100:200] = ids[:100]                                           # duplicates
    first, inverse = unique_rows(ids)
    expected, expected_inverse = torch.unique(ids, dim=0, return_inverse=True)
    assert torch.equal(ids[first][inverse], ids)
    assert len(first) == len(expected)
    # same partition: two rows share a group exactly when torch.unique says so
    assert torch.equal(inverse[:, None] == inverse[None], expected_inverse[:, None] == expected_inverse[None])
    assert all(int(f) == int((inverse == inverse[f]).nonzero()[0]) for f in first)   # first occurrences
    empty_first, empty_inverse = unique_rows(ids[:0])
    assert empty_first.numel() == empty_inverse.numel() == 0
