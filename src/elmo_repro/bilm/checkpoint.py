"""What pretraining writes: the full training state for an exact resume (``checkpoint.pt``,
atomic, gathered from every rank), and the trained biLM (``weights.pt``, ``options.json``,
``vocab.txt``), saved so that equal weights give equal bytes (a DVC hash per content)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from ..data.vocabulary import Vocabulary
from ..io import atomic_path, read_json, write_json
from .distributed import RankContext
from .model import BiLM, BiLMConfig

CHECKPOINT = "checkpoint.pt"


def save_checkpoint(path: Path, model: BiLM, optimizer: torch.optim.Optimizer, sampler: torch.Generator,
                    states: list, batch: int, fingerprint: str, ctx: RankContext = RankContext(),
                    summary: dict[str, float] | None = None, streams: list[dict[str, Any]] | None = None) -> None:
    """Write the full training state atomically (temporary file + rename).

    Data-parallel: every rank's carried states and random generators are gathered to rank 0,
    which alone writes one file (the states as the rows of the global batch, in rank order; the
    generators as one entry per rank); all ranks wait until it is in place, so a run that resumes
    straight away reads it on every rank. Weights, optimizer, sampler and the data streams'
    positions (``streams``: :meth:`~elmo_repro.data.lm_batches.LMStream.position` of the forward and
    backward stream after the last trained batch) are equal on all ranks.
    """
    cuda = ctx.device.type == "cuda"
    local = {"states": [[(h.cpu(), c.cpu()) for h, c in s] if s is not None else [] for s in states],
             "torch_rng": torch.get_rng_state(),
             "cuda_rng": torch.cuda.get_rng_state(ctx.device) if cuda else None}
    if ctx.world_size > 1:
        gathered: list | None = [None] * ctx.world_size if ctx.rank == 0 else None
        dist.gather_object(local, gathered, dst=0)
    else:
        gathered = [local]
    if ctx.rank == 0:
        assert gathered is not None
        merged = []
        for d in range(len(states)):
            per_rank = [g["states"][d] for g in gathered]
            merged.append([] if not per_rank[0] else
                          [[torch.cat([r[k][i] for r in per_rank]) for i in (0, 1)] for k in range(len(per_rank[0]))])
        payload = {
            "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "torch_rng": [g["torch_rng"] for g in gathered], "sampler_rng": sampler.get_state(),
            "cuda_rng": [g["cuda_rng"] for g in gathered] if cuda else [],
            "states": merged, "batch": batch, "fingerprint": fingerprint, "world_size": ctx.world_size,
            "summary": dict(summary or {}), "streams": list(streams or []),
        }
        save_reproducibly(payload, path)
    if ctx.world_size > 1:
        dist.barrier()


def save_reproducibly(obj: Any, path: Path) -> None:
    """``torch.save`` atomically, through a file handle: given a path, torch names the zip
    archive's records after the (temporary, random) file name, so equal weights would give
    different bytes, and a different DVC hash, on every run."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        torch.save(obj, handle)


def save_model(model: BiLM, vocab: Vocabulary, out_dir: Path) -> None:
    """Write ``weights.pt`` (the state dict, on the CPU wherever the model is), ``options.json``
    (bilm-tf layout) and ``vocab.txt``."""
    out_dir = Path(out_dir)
    state = model.state_dict()
    if any(tensor.device.type != "cpu" for tensor in state.values()):
        state = type(state)((name, tensor.cpu()) for name, tensor in state.items())
    save_reproducibly(state, out_dir / "weights.pt")
    write_json(out_dir / "options.json", model.config.to_options())
    vocab.save(out_dir / "vocab.txt", out_dir / "counts.tsv")


def load_model(model_dir: Path) -> tuple[BiLM, Vocabulary]:
    """Load a model written by :func:`save_model` (``weights_only`` torch loading), in eval mode."""
    model_dir = Path(model_dir)
    options = read_json(model_dir / "options.json")
    vocab = Vocabulary.load(model_dir / "vocab.txt", model_dir / "counts.tsv")
    model = BiLM(BiLMConfig.from_options(options))
    model.load_state_dict(torch.load(model_dir / "weights.pt", map_location="cpu", weights_only=True))
    return model.eval(), vocab
