"""Where a stage computes: the ``--device`` (and ``--precision``) of its command, from the profile.

The registry gives a stage ``--device cuda`` exactly when the profile's ``compute.resources`` ask a
GPU for it (``workflow/registry.py``), and ``--precision bf16`` when ``compute.precision`` says so;
without them a stage computes on the CPU in fp32, as the tiny and smoke profiles do. Each heavy
stage builds its model on the CPU (so a seed initialises the same weights on either device), moves
it to the device, and moves every batch there with :func:`to_device`; no tensor of the forward
pass is made on torch's default device (``tests/unit/test_device.py`` runs the stages' code with
the default device set to ``meta``, where any such tensor fails).
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Any, Iterator

import torch

PRECISIONS = ("fp32", "bf16")


def resolve_device(name: str) -> torch.device:
    """``cpu``, ``cuda`` or ``cuda:N`` as a :class:`torch.device`.

    Raises:
        ValueError: another name, or CUDA asked for on a machine without it (naming the option),
            rather than silently computing on the CPU.
    """
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ValueError(f"--device {name!r}: expected cpu, cuda or cuda:N") from None
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"--device {name!r}: expected cpu, cuda or cuda:N")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {name}: torch sees no CUDA device here (torch.cuda.is_available() is False)")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ValueError(f"--device {name}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return device


def check_precision(precision: str, device: torch.device) -> str:
    """``precision`` when ``device`` supports it.

    Raises:
        ValueError: an unknown precision, or bf16 on the CPU (computing in fp32 instead would make
            the recorded command misdescribe the numbers).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"--precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    if precision == "bf16" and device.type != "cuda":
        raise ValueError("--precision bf16 needs --device cuda (bf16 autocast is GPU-only here)")
    return precision


def add_device_options(parser: argparse.ArgumentParser, precision: bool = True) -> argparse.ArgumentParser:
    """Add ``--device`` (default ``cpu``) and, with ``precision``, ``--precision`` (default ``fp32``)
    to a stage's parser. The biLM's training stages take no ``--precision``: theirs is
    ``pretrain.precision``, part of the training configuration its checkpoints are matched on."""
    parser.add_argument("--device", default="cpu",
                        help="where the stage computes: cpu (default), cuda or cuda:N (the profile's compute section)")
    if precision:
        parser.add_argument("--precision", default="fp32", choices=PRECISIONS,
                            help="fp32 (default) or bf16 autocast of the forward passes (GPU only)")
    return parser


def device_args(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> tuple[torch.device, str]:
    """The parsed ``--device`` and ``--precision``, checked (:func:`resolve_device`,
    :func:`check_precision`); with ``parser``, a bad one exits through ``parser.error`` (status 2)."""
    try:
        device = resolve_device(args.device)
        return device, check_precision(getattr(args, "precision", "fp32"), device)
    except ValueError as err:
        if parser is None:
            raise
        parser.error(str(err))
        raise  # parser.error exits


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """bf16 autocast on CUDA for ``precision == "bf16"``, else nothing (fp32)."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def to_device(batch: Any, device: torch.device) -> Any:
    """``batch`` with every tensor in it (nested in dicts, lists and tuples) on ``device``; other
    values as they are. On the CPU, tensors already there are returned as they are (no copy).
    Host tensors are copied asynchronously to CUDA (``non_blocking``): the next use waits for them."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, list):
        return [to_device(value, device) for value in batch]
    if isinstance(batch, tuple):
        return tuple(to_device(value, device) for value in batch)
    return batch


@contextlib.contextmanager
def on_cpu() -> Iterator[None]:
    """Make tensors on the CPU inside the block whatever torch's default device (models are built and
    batches collated there, then moved)."""
    with torch.device("cpu"):
        yield
