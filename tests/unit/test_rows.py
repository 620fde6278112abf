"""take_rows (nn/rows.py): the values of x[index], and a gradient that repeats bit for bit on CPU
where x[index]'s does not (repeated indices, two threads)."""

import hashlib

import pytest
import torch

from elmo_repro.nn.rows import take_rows


def digest(t):
    return hashlib.sha1(t.detach().numpy().tobytes()).hexdigest()


def test_the_values_and_gradient_are_those_of_indexing():
    x = torch.randn(7, 3, 2, requires_grad=True)
    index = torch.tensor([[0, 6, 6], [2, 2, 2]])
    assert torch.equal(take_rows(x, index), x[index]) and take_rows(x, index).shape == (2, 3, 3, 2)
    take_rows(x, index).sum().backward()
    assert x.grad[6].eq(2).all() and x.grad[2].eq(3).all() and x.grad[1].eq(0).all()
    with pytest.raises(IndexError):
        take_rows(x, torch.tensor([7]))


def test_the_gradient_repeats_exactly_with_repeated_indices():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        generator = torch.Generator().manual_seed(0)
        base = torch.randn(20, 400, 64, generator=generator)
        rows = torch.randint(0, 20, (64,), generator=generator)         # a paragraph's questions repeat it
        upstream = torch.randn(64, 400, 64, generator=generator)
        grads = set()
        for _ in range(5):
            x = base.clone().requires_grad_()
            take_rows(x, rows).backward(upstream)
            grads.add(digest(x.grad))
        assert len(grads) == 1
        x = base.clone().requires_grad_()
        x[rows].backward(upstream)                    # indexing: the same gradient up to float order
        y = base.clone().requires_grad_()
        take_rows(y, rows).backward(upstream)
        assert torch.allclose(x.grad, y.grad, rtol=1e-5, atol=1e-5)
    finally:
        torch.set_num_threads(threads)
