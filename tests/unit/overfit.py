"""A test helper: fit a task model to one batch, the smallest check that it can learn."""

import torch


def overfit(model: torch.nn.Module, batch: dict, steps: int = 60, lr: float = 0.05) -> tuple[float, float]:
    """Adam on ``model.loss(batch)`` for ``steps`` updates; returns the loss before and after
    (the model is left in eval mode)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    first = model.loss(batch).item()
    for _ in range(steps):
        optimizer.zero_grad()
        model.loss(batch).backward()
        optimizer.step()
    model.eval()
    return first, model.loss(batch).item()
