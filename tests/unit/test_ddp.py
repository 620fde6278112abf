"""Data-parallel pretraining (torchrun/DDP semantics) on 2 CPU processes with gloo.

Two ranks with per-rank batch B must update the weights exactly as one process with batch 2B
(the same global batch, the same negatives, gradients averaged), up to float summation order;
an interrupted and resumed 2-process run must end bit-identical to an uninterrupted one; the
sparse softmax update (every rank gathers the union of all ranks' target rows and the shared
negatives, and averages that table) must give the dense update's weights bit for bit.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
from fp_bounds import U32, bilm_step_roundings
from pretrain_settings import settings

from elmo_repro.bilm.model import BiLMConfig
from elmo_repro.bilm.train import CHECKPOINT, PretrainConfig, count_batches, pretrain
from elmo_repro.data.lm_batches import LMStream, TypeTable
from elmo_repro.data.vocabulary import Vocabulary, count_tokens

SENTENCES = [s.split() for s in [
    "the cat sat on the mat", "a dog barked", "the dog sat", "cats and dogs are pets",
    "the mat is red", "a cat is a pet", "dogs bark at cats", "the red dog sat on a mat",
    "a red cat sat", "the pets bark"]]
B, T, N = 3, 5, 5          # per-rank batch, unroll steps, updates
WORLD = 2


def _vocab() -> Vocabulary:
    return Vocabulary.build(*count_tokens(SENTENCES))


def _model_config(vocab: Vocabulary) -> BiLMConfig:
    # no dropout: dropout masks are per rank by design, so only a dropout-free run can equal the
    # single-process one
    return BiLMConfig(filters=((1, 4), (2, 4)), char_dim=4, n_highway=1, cell_dim=8, projection_dim=4,
                      n_layers=2, dropout=0.0, n_tokens_vocab=len(vocab))


def _cfg(batch_size: int) -> PretrainConfig:
    # the budget is N global batches of 2B x T target tokens, whatever the split
    return settings(seed=11, token_budget=WORLD * B * T * N, batch_size=batch_size, unroll_steps=T,
                          n_negative_samples=6, checkpoint_every=2, log_every=2)


def _worker(rank: int, port: int, out: str) -> None:
    """One rank, launched as torchrun would (env vars), running every 2-process scenario."""
    torch.set_num_threads(1)
    # CPU ranks with gloo even on a machine with GPUs (torchrun's LOCAL_RANK would pick cuda:rank)
    os.environ.update(CUDA_VISIBLE_DEVICES="", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      WORLD_SIZE=str(WORLD), RANK=str(rank), LOCAL_RANK=str(rank))
    out_dir, vocab = Path(out), _vocab()
    config = _model_config(vocab)

    def train(name: str, ckpt: str, stop_after: int | None = None, sparse: bool = True) -> None:
        model, summary = pretrain(config, _cfg(B), SENTENCES, vocab, out_dir / ckpt, stop_after=stop_after,
                                  sparse_softmax_update=sparse)
        torch.save({"model": model.state_dict(), "summary": summary}, out_dir / f"{name}.rank{rank}.pt")

    # pretrain() joins (and leaves) the process group itself from the torchrun environment ...
    train("full", "ckpt_full")
    # ... or uses the one the caller opened (here through a file store: no port to race for)
    torch.distributed.init_process_group("gloo", init_method=f"file://{out_dir / 'rendezvous'}",
                                         rank=rank, world_size=WORLD)
    try:
        train("one", "ckpt_one", stop_after=1)
        train("interrupted", "ckpt_resume", stop_after=3)
        train("resumed", "ckpt_resume")
        train("dense", "ckpt_dense", sparse=False)
    finally:
        torch.distributed.destroy_process_group()


def _spawn(out: Path, timeout: float = 120.0) -> None:
    """Run the ranks. pretrain() joins torchrun's env:// rendezvous. As under torchrun, the store
    is the launcher's: this process binds a TCPStore to a port the kernel picks (port 0) before any
    rank starts, and the ranks connect to it as clients (TORCHELASTIC_USE_AGENT_STORE, what
    torchrun's agent sets). No port is chosen free and bound later, so none can be taken in
    between (the EADDRINUSE seen on a busy machine)."""
    store = torch.distributed.TCPStore("127.0.0.1", 0, None, True, wait_for_workers=False)
    previous = os.environ.get("TORCHELASTIC_USE_AGENT_STORE")
    os.environ["TORCHELASTIC_USE_AGENT_STORE"] = "True"          # inherited by the spawned ranks
    try:
        context = mp.start_processes(_worker, args=(store.port, str(out)), nprocs=WORLD, join=False,
                                     start_method="spawn")
    finally:
        if previous is None:
            os.environ.pop("TORCHELASTIC_USE_AGENT_STORE")
        else:
            os.environ["TORCHELASTIC_USE_AGENT_STORE"] = previous
    deadline = time.monotonic() + timeout
    while not context.join(timeout=1.0):
        if time.monotonic() > deadline:
            for process in context.processes:
                if process.is_alive():
                    process.kill()
            pytest.fail(f"the {WORLD} ranks did not finish within {timeout} s")
    del store


def _max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def _chain(config: BiLMConfig, updates: int) -> int:
    """Roundings along the longest chain of ``updates`` training steps on the global batch
    (fp_bounds.py; the same model as test_reference's training step): a forward pass (T biLM
    steps, the logits' P + 1 terms, the log-sum-exp over 1 + S classes, the mean over the 2B x T
    rows and the 2 directions), the backward pass over it again and each weight's gradient sum
    over the rows of both directions. Single-process and data-parallel runs order these sums
    differently (batch 2B vs 2 x B, the gradient average); each is within the bound of the exact
    run, so they differ by at most twice it."""
    rows = WORLD * B * T
    samples = _cfg(B).n_negative_samples
    forward = T * bilm_step_roundings(config) + (config.projection_dim + 1) + 2 * (samples + 1) + rows + 2
    return updates * (2 * forward + 2 * rows)


def test_two_ranks_equal_one_process_on_the_global_batch_and_resume_exactly(tmp_path):
    _spawn(tmp_path)
    ddp = {name: [torch.load(tmp_path / f"{name}.rank{r}.pt", weights_only=True) for r in range(WORLD)]
           for name in ("full", "one", "interrupted", "resumed", "dense")}
    for name, ranks in ddp.items():   # gradients are synchronised: every rank holds the same weights
        for k, v in ranks[0]["model"].items():
            assert torch.equal(v, ranks[1]["model"][k]), (name, k)

    # one process, batch 2B: the concatenation of the two ranks' batches (rank r has rows rB..rB+B-1)
    vocab, threads = _vocab(), torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        single_one, _ = pretrain(_model_config(vocab), _cfg(WORLD * B), SENTENCES, vocab, tmp_path / "s1",
                                 stop_after=1)
        single, summary = pretrain(_model_config(vocab), _cfg(WORLD * B), SENTENCES, vocab, tmp_path / "sN")
    finally:
        torch.set_num_threads(threads)

    diff_one = _max_diff(single_one.state_dict(), ddp["one"][0]["model"])
    diff_full = _max_diff(single.state_dict(), ddp["full"][0]["model"])
    # Adagrad (initial accumulator 1) moves a weight by at most lr |g| per update, so a gradient
    # error relative to the largest clipped gradient G (sqrt of the largest accumulated sum of
    # squares, read from the checkpoint's optimizer state) moves it by lr times that; each update
    # also rounds the weight itself (1 u |w| per update).
    config, ddp_ckpt = _model_config(vocab), torch.load(tmp_path / "ckpt_full" / CHECKPOINT, weights_only=True)
    g = max(float(st["sum"].max()) - 1.0 for st in ddp_ckpt["optimizer"]["state"].values()) ** 0.5
    w = max(float(v.abs().max()) for v in single.state_dict().values())
    lr = _cfg(B).learning_rate
    bound_one, bound_full = (2 * (_chain(config, n) * U32 * lr * g + n * U32 * w) for n in (1, N))
    print(f"max |single(2B) - ddp(2 x B)|: after 1 update {diff_one:.3g} (bound {bound_one:.3g}), "
          f"after {N} updates {diff_full:.3g} (bound {bound_full:.3g})")
    assert diff_one <= bound_one and diff_full <= bound_full

    ddp_summary = ddp["full"][0]["summary"]
    assert ddp_summary["batches"] == summary["batches"] == N
    assert ddp_summary["target_tokens_per_direction"] == summary["target_tokens_per_direction"] == WORLD * B * T * N
    loss = summary["train_sampled_softmax_loss"]                  # the chain above, relative to |loss|
    assert ddp_summary["train_sampled_softmax_loss"] == pytest.approx(loss, abs=2 * _chain(config, N) * U32 * abs(loss))

    # rank 0's checkpoint holds every rank's carried states as the rows of the global batch
    single_ckpt = torch.load(tmp_path / "sN" / CHECKPOINT, weights_only=True)
    assert ddp_ckpt["batch"] == single_ckpt["batch"] == N and ddp_ckpt["world_size"] == WORLD
    assert len(ddp_ckpt["torch_rng"]) == WORLD and len(single_ckpt["torch_rng"]) == 1
    for d in (0, 1):
        for (h, c), (h1, c1) in zip(ddp_ckpt["states"][d], single_ckpt["states"][d]):
            assert h.shape == h1.shape == (WORLD * B, 4)
            # the states carry the whole chain too, relative to their own magnitudes
            torch.testing.assert_close(h, h1, atol=2 * _chain(config, N) * U32 * float(h1.abs().max()), rtol=0)
            torch.testing.assert_close(c, c1, atol=2 * _chain(config, N) * U32 * float(c1.abs().max()), rtol=0)

    # interrupted after 3 updates, then resumed: exactly the uninterrupted 2-process weights
    for k, v in ddp["full"][0]["model"].items():
        assert torch.equal(v, ddp["resumed"][0]["model"][k]), k
    assert not torch.equal(ddp["interrupted"][0]["model"]["softmax.weight"], ddp["full"][0]["model"]["softmax.weight"])

    # the sparse update (the default) equals the dense one bit for bit on 2 CPU ranks: each averaged
    # entry is (a + b) / 2 of the same two addends either way, the norms sum as test_sparse_softmax_update.py says
    for k, v in ddp["full"][0]["model"].items():
        assert torch.equal(v, ddp["dense"][0]["model"][k]), k
    assert ddp["full"][0]["summary"]["grad_norm"] == ddp["dense"][0]["summary"]["grad_norm"]


def test_ranks_train_on_disjoint_sentences():
    """Rank r keeps rows rB..rB+B-1 of the global batch; rows are refilled from one shuffled
    sentence order, so within an epoch no sentence reaches two ranks."""
    sentences = [[f"w{i}", f"v{i}"] + ["x"] * (i % 4) for i in range(40)]       # distinct first words
    table, encoded = TypeTable.build(sentences, Vocabulary.build(*count_tokens(sentences)))
    stream = LMStream(encoded, WORLD * B, T, seed=1)
    n_batches = sum(len(s) + 1 for s in encoded) // (WORLD * B * T) - 2           # stay inside epoch 0
    batches = [next(stream)[0] for _ in range(n_batches)]
    seen = []
    for rank in range(WORLD):
        rows = np.concatenate([b[rank * B:(rank + 1) * B] for b in batches], axis=1)   # (B, n * T)
        firsts = {table.types[row[i + 1]] for row in rows for i in range(len(row) - 1) if row[i] == 0}
        seen.append({w for w in firsts if w.startswith("w")})
    assert seen[0] and seen[1] and not seen[0] & seen[1]


def test_world_size_divides_the_updates_and_precision_is_checked(tmp_path):
    cfg = settings(epochs=2, batch_size=4, unroll_steps=5)
    assert count_batches(cfg, 1000) == 100 and count_batches(cfg, 1000, world_size=4) == 25
    vocab = _vocab()
    with pytest.raises(ValueError, match="bf16' needs a CUDA device"):
        pretrain(_model_config(vocab), _cfg(B).model_copy(update={"precision": "bf16"}), SENTENCES, vocab, tmp_path)
    # a configuration built around the schema's check (model_copy does not validate) is checked again
    with pytest.raises(ValueError, match="pretrain.precision: Input should be 'fp32' or 'bf16'"):
        pretrain(_model_config(vocab), _cfg(B).model_copy(update={"precision": "fp16"}), SENTENCES, vocab, tmp_path)
    assert not (tmp_path / CHECKPOINT).exists()
