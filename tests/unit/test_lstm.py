"""One LSTM-with-projection step against a hand computation, including both clips."""

import numpy as np
import torch

from elmo_repro.bilm.lstm import LstmCellWithProjection, LstmStack


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
    assert np.isclose(c1.item(), c) and np.isclose(h1.item(), h) and np.isclose(out.item(), h)


def test_unclipped_step_matches_numpy():
    torch.manual_seed(0)
    cell = LstmCellWithProjection(3, 4, 2, cell_clip=None, proj_clip=None)
    x, h0, c0 = torch.randn(5, 3), torch.randn(5, 2), torch.randn(5, 4)
    W = np.concatenate([cell.input_weight.detach().numpy(), cell.state_weight.detach().numpy()])
    gates = np.concatenate([x.numpy(), h0.numpy()], 1) @ W + cell.bias.detach().numpy()
    i, j, f, o = np.split(gates, 4, axis=1)
    c = sigmoid(f + 1.0) * c0.numpy() + sigmoid(i) * np.tanh(j)
    h = (sigmoid(o) * np.tanh(c)) @ cell.projection.detach().numpy()
    h1, c1 = cell.step(x @ cell.input_weight + cell.bias, (h0, c0))
    np.testing.assert_allclose(c1.detach().numpy(), c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h1.detach().numpy(), h, rtol=1e-5, atol=1e-6)


def test_residual_connection_only_after_the_first_layer():
    torch.manual_seed(0)
    stack = LstmStack(2, 3, 2, n_layers=2, cell_clip=3, proj_clip=3, use_skip_connections=True).eval()
    x = torch.randn(1, 4, 2)
    outputs, _ = stack(x)
    plain0, _ = stack.layers[0](x)
    plain1, _ = stack.layers[1](plain0)
    torch.testing.assert_close(outputs[0], plain0)
    torch.testing.assert_close(outputs[1], plain1 + plain0)
