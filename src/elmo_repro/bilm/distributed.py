"""Data-parallel biLM pretraining under ``torchrun`` (see :mod:`elmo_repro.bilm.train`): this
process's rank, gradient averaging over ranks, and each rank's rows of the global LM batch.

Without the torchrun environment a run is rank 0 of 1 on the CPU and none of this communicates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import torch
import torch.distributed as dist

from ..data.lm_batches import LMStream


@dataclass(frozen=True)
class RankContext:
    """This process's place in a data-parallel run (rank 0 of 1 on the CPU without torchrun)."""

    rank: int = 0
    world_size: int = 1
    device: torch.device = torch.device("cpu")
    owns_group: bool = False    # True: pretrain() created the process group and destroys it

    @classmethod
    def setup(cls, device: torch.device | None = None) -> "RankContext":
        """Read the torchrun environment; join the process group when WORLD_SIZE > 1.

        Args:
            device: where to compute (the stage's ``--device``): ``cpu``, or ``cuda``, which
                under torchrun is ``cuda:$LOCAL_RANK`` (one GPU per rank) and otherwise the
                device given (``cuda`` = ``cuda:0``). None: CUDA exactly under torchrun with a
                GPU, else the CPU.
        """
        local_rank = os.environ.get("LOCAL_RANK")
        if device is None:
            cuda = local_rank is not None and torch.cuda.is_available()
        else:
            cuda = device.type == "cuda"
        if not cuda:
            device = torch.device("cpu")
        elif local_rank is not None:
            device = torch.device("cuda", int(local_rank))
        else:
            device = torch.device("cuda", device.index if device is not None and device.index is not None else 0)
        if cuda:
            torch.cuda.set_device(device)
            # cuBLAS is only deterministic with a fixed workspace (use_deterministic_algorithms)
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        if dist.is_available() and dist.is_initialized():
            return cls(dist.get_rank(), dist.get_world_size(), device) if dist.get_world_size() > 1 \
                else cls(device=device)
        if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
            return cls(device=device)
        if cuda:
            dist.init_process_group("nccl", device_id=device)
        else:
            dist.init_process_group("gloo")
        return cls(dist.get_rank(), dist.get_world_size(), device, owns_group=True)

    def rows(self, batch_size: int) -> slice:
        """This rank's rows of a global batch of ``world_size x batch_size`` rows."""
        return slice(self.rank * batch_size, (self.rank + 1) * batch_size)

    def close(self) -> None:
        if self.owns_group:
            dist.destroy_process_group()


def average_gradients(params: list[torch.nn.Parameter], world_size: int) -> None:
    """Replace every gradient by its mean over the ranks.

    Why not DistributedDataParallel: training drives the model through ``token_embedder``,
    ``direction_hidden`` and ``softmax.sampled_loss`` (one token layer for both directions, state
    carried across batches), never through ``BiLM.forward``, while DDP prepares its gradient
    reduction in its wrapper's ``forward``; using it would take a wrapper module whose only job
    is to own that call. Averaging after ``backward`` is a few lines, makes the equivalence with a
    single-process step on the global batch evident (each rank's loss is the mean over its equal
    share of tokens, so the mean of the rank gradients is the gradient of the global mean), and
    clips the averaged gradient, as bilm-tf clips the tower-averaged one. The price is speed, not
    correctness: no overlap of communication with backward.

    Every rank runs the same code on same-shaped batches, so the set of tensors with a gradient
    is the same on every rank and the collectives line up. With the sparse softmax update
    (:class:`~elmo_repro.bilm.sampled_softmax.SoftmaxRows`) ``params`` holds the gathered rows'
    table in ``softmax_W``'s place (whose own gradient is None): every rank gathers the same rows,
    the union of all ranks' targets (:func:`all_ranks`) and the shared negatives, so the (U, 512)
    tables line up row for row and their average is the dense average's nonzero rows (bilm-tf
    averages the towers' ``IndexedSlices`` likewise, without a dense V x 512 message).
    """
    for p in params:
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad.div_(world_size)


def all_ranks(ids: torch.Tensor, world_size: int) -> torch.Tensor:
    """Every rank's ``ids`` concatenated in rank order, on every rank: (world_size x n,) for a
    same-shaped ``ids`` of n elements on each rank (this rank's targets, for the softmax rows
    every rank must gather). Without a process group (``world_size`` 1): ``ids`` flattened."""
    flat = ids.reshape(-1).contiguous()
    if world_size == 1:
        return flat
    parts = [torch.empty_like(flat) for _ in range(world_size)]
    dist.all_gather(parts, flat)
    return torch.cat(parts)


def packed_batches(streams: list[LMStream], rows: slice, n: int, device: torch.device
                   ) -> Iterator[tuple[torch.Tensor, torch.Tensor, list[dict[str, Any]]]]:
    """The next ``n`` (inputs, targets, positions) of this rank's rows: inputs and targets each
    (2, B, T) int64 type ids (forward, backward), pinned for a CUDA copy; positions the streams'
    :meth:`~elmo_repro.data.lm_batches.LMStream.position` after packing the batch (what a checkpoint
    taken after it must resume from: the prefetching thread runs ahead of training)."""
    for _ in range(n):
        (in_f, tg_f), (in_b, tg_b) = next(streams[0]), next(streams[1])
        inputs = torch.from_numpy(np.stack([in_f[rows], in_b[rows]]))
        targets = torch.from_numpy(np.stack([tg_f[rows], tg_b[rows]]))
        if device.type == "cuda":
            inputs, targets = inputs.pin_memory(), targets.pin_memory()
        yield inputs, targets, [stream.position() for stream in streams]
