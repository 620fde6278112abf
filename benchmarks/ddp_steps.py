"""Two data-parallel pretraining updates on every GPU of the machine (NCCL), for
``benchmarks/gpu_check.sh``: ``torchrun --standalone --nproc-per-node N -m benchmarks.ddp_steps``.

Each rank trains the same small biLM (bf16 autocast with ``--bf16``) for two updates on its own
rows of the global batch (``elmo_repro.bilm.train.pretrain``, as ``stages.pretrain_bilm`` runs it);
afterwards every rank's weights must equal rank 0's bit for bit (DDP averages the gradients before
every update), which rank 0 checks and prints. One GPU cannot test this: the script says so and
exits 0 (the 2-process semantics are tested on CPUs with gloo in ``tests/unit/test_ddp.py``)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit"))
from pretrain_settings import settings  # noqa: E402

from elmo_repro.bilm.model import BiLMConfig  # noqa: E402
from elmo_repro.bilm.train import pretrain  # noqa: E402
from elmo_repro.data.vocabulary import Vocabulary, count_tokens  # noqa: E402

SENTENCES = [s.split() for s in [
    "the cat sat on the mat", "a dog barked", "the dog sat", "cats and dogs are pets", "the mat is red",
    "a cat is a pet", "dogs bark at cats", "the red dog sat on a mat", "a red cat sat", "the pets bark"]] * 40


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world < 2:
        print("ddp_steps: one process (one GPU): DDP needs two; tested on CPUs with gloo (tests/unit/test_ddp.py)")
        return 0
    vocab = Vocabulary.build(*count_tokens(SENTENCES))
    config = BiLMConfig(filters=((1, 32), (2, 32), (3, 64)), char_dim=16, n_highway=2, cell_dim=512,
                        projection_dim=128, n_layers=2, dropout=0.0, n_tokens_vocab=len(vocab))
    batch, unroll = 32, 20
    cfg = settings(seed=3, token_budget=2 * world * batch * unroll, batch_size=batch, unroll_steps=unroll,
                   n_negative_samples=64, checkpoint_every=100, log_every=1,
                   precision="bf16" if args.bf16 else "fp32")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as checkpoints:
        model, summary = pretrain(config, cfg, SENTENCES, vocab, Path(checkpoints) / str(os.environ["RANK"]))
    seconds = time.perf_counter() - start
    dist.init_process_group("nccl")
    try:
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        flat = torch.cat([p.detach().float().reshape(-1) for p in model.parameters()]).to(device)
        gathered = [torch.empty_like(flat) for _ in range(world)]
        dist.all_gather(gathered, flat)
        if dist.get_rank() == 0:
            diff = max(float((g - gathered[0]).abs().max()) for g in gathered)
            print(f"ddp_steps: {world} ranks, 2 updates ({'bf16' if args.bf16 else 'fp32'}), {seconds:.1f} s; "
                  f"max |rank weights - rank 0| = {diff:.3e} ({'equal' if diff == 0 else 'DIFFERENT'}); "
                  f"sampled-softmax loss {summary.get('train_sampled_softmax_loss', float('nan')):.3f}")
            return 0 if diff == 0 else 1
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
