"""One LSTM-with-projection step against a hand computation, including both clips; cells and stacks
run side by side equal each run alone."""

import numpy as np
import pytest
import torch
from fp_bounds import U32, lstm_step_roundings

from elmo_repro.bilm.lstm import (LstmCellWithProjection, LstmStack, _stack_run_time_weights, run_cells,
                                   run_stacks, stacked_run_time_weights)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_one_step_by_hand_with_clipping():
    cell = LstmCellWithProjection(input_dim=1, cell_dim=1, projection_dim=1, cell_clip=0.5, proj_clip=0.3)
    with torch.no_grad():
        cell.input_weight.copy_(torch.tensor([[1.0, 2.0, 0.5, -1.0]]))   # gates i, j, f, o
        cell.state_weight.copy_(torch.tensor([[0.5, 0.5, 0.5, 0.5]]))
        cell.bias.copy_(torch.tensor([0.1, 0.2, 0.0, 0.3]))
        cell.projection.copy_(torch.tensor([[2.0]]))
    x, h0, c0 = 1.0, 0.2, 0.4
    i, j, f, o = 1.0 * x + 0.5 * h0 + 0.1, 2.0 * x + 0.5 * h0 + 0.2, 0.5 * x + 0.5 * h0, -1.0 * x + 0.5 * h0 + 0.3
    c = sigmoid(f + 1.0) * c0 + sigmoid(i) * np.tanh(j)      # forget bias +1 at run time
    assert c > 0.5                                             # so the cell clip is exercised
    c = min(c, 0.5)
    h = sigmoid(o) * np.tanh(c) * 2.0
    assert h > 0.3                                             # and the projection clip
    h = min(h, 0.3)
    out, (h1, c1) = cell(torch.tensor([[[x]]]), (torch.tensor([[h0]]), torch.tensor([[c0]])))
    # both clips are hit by margins (1.09 > 0.5, 0.33 > 0.3) far above float32 rounding (about 1e-6,
    # the unclipped test's bound), so the outputs are the clip values themselves, exactly
    assert c1.item() == c == 0.5 and h1.item() == out.item() == float(np.float32(h))


def test_unclipped_step_matches_numpy():
    torch.manual_seed(0)
    cell = LstmCellWithProjection(3, 4, 2, cell_clip=None, proj_clip=None)
    x, h0, c0 = torch.randn(5, 3), torch.randn(5, 2), torch.randn(5, 4)
    W = np.concatenate([cell.input_weight.detach().numpy(), cell.state_weight.detach().numpy()]).astype(np.float64)
    xh, b, P = np.concatenate([x.numpy(), h0.numpy()], 1).astype(np.float64), cell.bias.detach().double().numpy(), \
        cell.projection.detach().double().numpy()
    gates = xh @ W + b                                                    # float64 throughout
    i, j, f, o = np.split(gates, 4, axis=1)
    c = sigmoid(f + 1.0) * c0.double().numpy() + sigmoid(i) * np.tanh(j)
    h = (sigmoid(o) * np.tanh(c)) @ P
    _, (h1, c1) = cell(x[:, None], (h0, c0))
    # float32 vs float64: one step's chain of roundings (fp_bounds.py), each relative to the largest
    # magnitude in play: the gates' sum|terms|, |c|, |c0| or the projection's sum|terms| (about 5e-6)
    scale = max((np.abs(xh) @ np.abs(W) + np.abs(b)).max() + 1.0, np.abs(c).max(), np.abs(c0.numpy()).max(),
                (np.abs(np.tanh(c)) @ np.abs(P)).max())
    bound = lstm_step_roundings(3, 4, 2) * U32 * scale
    np.testing.assert_allclose(c1.detach().numpy(), c, rtol=0, atol=bound)
    np.testing.assert_allclose(h1.detach().numpy(), h, rtol=0, atol=bound)


def test_residual_connection_only_after_the_first_layer():
    torch.manual_seed(0)
    stack = LstmStack(2, 3, 2, n_layers=2, cell_clip=3, proj_clip=3, use_skip_connections=True).eval()
    x = torch.randn(1, 4, 2)
    outputs, _ = stack(x)
    plain0, _ = stack.layers[0](x)
    plain1, _ = stack.layers[1](plain0)
    # two float32 runs of the same 4-step, 2-layer chain: twice its bound (fp_bounds.py)
    bound = 2 * 4 * lstm_step_roundings(2, 3, 2, n_layers=2) * U32 * float(outputs[1].detach().abs().amax())
    torch.testing.assert_close(outputs[0], plain0, rtol=0, atol=bound)
    torch.testing.assert_close(outputs[1], plain1 + plain0, rtol=0, atol=bound)


def test_run_time_weights_reorder_gates_and_fold_the_forget_bias():
    cell = LstmCellWithProjection(1, 2, 1)
    with torch.no_grad():
        cell.input_weight.copy_(torch.arange(8.0)[None])                  # i i j j f f o o
        cell.bias.copy_(torch.arange(8.0) * 10)
    w_x, _, bias = cell.run_time_weights()
    assert w_x.tolist() == [[0, 1, 4, 5, 6, 7, 2, 3]]                    # i f o j
    assert bias.tolist() == [0, 10, 41, 51, 60, 70, 20, 30]              # +1 on f only


def test_cells_side_by_side_equal_each_cell_alone_with_mask_and_gradients():
    torch.manual_seed(0)
    cells = [LstmCellWithProjection(3, 5, 2, cell_clip=0.5, proj_clip=0.4) for _ in range(2)]
    with torch.no_grad():
        for cell in cells:
            cell.input_weight.mul_(4.0)                                  # the clips are hit
            cell.projection.mul_(4.0)
    x = torch.randn(2, 4, 6, 3, requires_grad=True)
    state = (0.1 * torch.randn(2, 4, 2), 0.1 * torch.randn(2, 4, 5))
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [0] * 6, [1, 1, 1, 1, 1, 0]]).bool()
    together, (h, c) = run_cells(cells, x, state, mask)
    together.sum().backward()
    grad_together = x.grad.clone()
    x.grad = None
    # batched vs alone: two float32 orderings of a 6-step chain, twice its bound (fp_bounds.py),
    # relative to the largest |h| or |c|; the gradients run the chain again backwards on the forward
    # values (twice the steps), relative to the largest gradient (each about 1e-5)
    largest = max(together.detach().abs().amax(), c.detach().abs().amax())
    bound = 2 * 6 * lstm_step_roundings(3, 5, 2) * U32 * float(largest)
    for d, cell in enumerate(cells):
        alone, (h_d, c_d) = cell(x[d], (state[0][d], state[1][d]), mask)
        alone.sum().backward()
        torch.testing.assert_close(together[d], alone, atol=bound, rtol=0)
        torch.testing.assert_close(h[d], h_d, atol=bound, rtol=0)
        torch.testing.assert_close(c[d], c_d, atol=bound, rtol=0)
    grad_bound = 2 * 2 * 6 * lstm_step_roundings(3, 5, 2) * U32 * float(x.grad.abs().amax())
    torch.testing.assert_close(grad_together, x.grad, atol=grad_bound, rtol=0)
    torch.testing.assert_close(h[:, 2], state[0][:, 2], rtol=0, atol=0)  # all-masked row keeps its state
    assert c.abs().max() <= 0.5 and together.abs().max() <= 0.4
    assert (c.abs() == 0.5).any() and (together.abs() == 0.4).any()      # both clips were active


def test_long_sequences_run_in_time_chunks_with_the_same_result(monkeypatch):
    import elmo_repro.bilm.lstm as lstm
    torch.manual_seed(0)
    stack = LstmStack(3, 4, 3, n_layers=2, cell_clip=3, proj_clip=3, use_skip_connections=True).eval()
    x = torch.randn(2, 11, 3)
    whole, finals = stack(x)
    monkeypatch.setattr(lstm, "TIME_CHUNK", 4)                            # 11 steps: chunks 4, 4, 3
    chunked, finals_chunked = stack(x)
    # two float32 orderings of an 11-step, 2-layer chain: twice its bound (fp_bounds.py) relative
    # to the largest |h| or |c| (about 3e-5)
    pairs = list(zip(whole + [t for s in finals for t in s], chunked + [t for s in finals_chunked for t in s]))
    largest = max(a.detach().abs().amax() for a, _ in pairs)
    bound = 2 * 11 * lstm_step_roundings(3, 4, 3, n_layers=2) * U32 * float(largest)
    for a, b in pairs:
        torch.testing.assert_close(a, b, atol=bound, rtol=0)


def test_stacks_side_by_side_equal_each_stack_alone():
    torch.manual_seed(0)
    stacks = [LstmStack(3, 4, 3, n_layers=2, cell_clip=3, proj_clip=3, use_skip_connections=True).eval()
              for _ in range(2)]
    x = torch.randn(2, 2, 5, 3)
    states = [None, [(torch.randn(2, 3), torch.randn(2, 4)) for _ in range(2)]]   # zeros for one
    outputs, finals = run_stacks(stacks, x, states)
    # two float32 orderings of a 5-step, 2-layer chain: twice its bound (fp_bounds.py) relative to
    # the largest |h| or |c| (about 2e-5)
    largest = max(t.detach().abs().amax() for t in [*outputs, *(t for d in finals for hc in d for t in hc)])
    bound = 2 * 5 * lstm_step_roundings(3, 4, 3, n_layers=2) * U32 * float(largest)
    for d, stack in enumerate(stacks):
        alone, final = stack(x[d], states[d])
        for k in range(2):
            torch.testing.assert_close(outputs[k][d], alone[k], atol=bound, rtol=0)
            torch.testing.assert_close(finals[d][k][0], final[k][0], atol=bound, rtol=0)
            torch.testing.assert_close(finals[d][k][1], final[k][1], atol=bound, rtol=0)


def test_stacks_of_different_shapes_are_refused():
    deep = LstmStack(3, 4, 3, n_layers=2, cell_clip=3, proj_clip=3, use_skip_connections=True)
    for other in (LstmStack(3, 4, 3, n_layers=1, cell_clip=3, proj_clip=3, use_skip_connections=True),
                  LstmStack(3, 4, 3, n_layers=2, cell_clip=3, proj_clip=3, use_skip_connections=False)):
        with pytest.raises(ValueError, match="same depth"):
            run_stacks([deep, other], torch.zeros(2, 1, 3, 3))


def test_inference_reorders_the_gates_once_and_again_only_after_the_weights_change():
    # issue 14 part 3: every embedding call used to copy (and reorder) all LSTM matrices
    torch.manual_seed(0)
    model = LstmStack(3, 4, 2, n_layers=1, cell_clip=3, proj_clip=3, use_skip_connections=False).eval()
    other = LstmStack(3, 4, 2, n_layers=1, cell_clip=3, proj_clip=3, use_skip_connections=False).eval()
    cells = [model.layers[0], other.layers[0]]
    with torch.no_grad():
        first = stacked_run_time_weights(cells)
        again = stacked_run_time_weights(cells)
        assert [t.data_ptr() for t in first] == [t.data_ptr() for t in again]      # same storage
        x = torch.randn(2, 1, 5, 3)
        before, _ = run_cells(cells, x)
        model.load_state_dict({k: v + 1 for k, v in model.state_dict().items()})   # new weights
        fresh = stacked_run_time_weights(cells)
    assert fresh[0].data_ptr() != first[0].data_ptr()
    for cached, expected in zip(fresh, _stack_run_time_weights(cells)):
        torch.testing.assert_close(cached, expected, rtol=0, atol=0)
    with torch.no_grad():
        after, _ = run_cells(cells, x)
    assert not torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])
    # with autograd the weights are rebuilt per call, and gradients reach the parameters
    model.train()
    out, _ = run_cells(cells, x)
    out.sum().backward()
    assert model.layers[0].input_weight.grad is not None and model.layers[0].input_weight.grad.abs().sum() > 0
