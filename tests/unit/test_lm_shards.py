"""The training text streamed in shards (issue 28 §3): the split written as it is read equals the
in-memory one; streams visit shards and sentences in seeded shuffles holding one shard at a time;
a stream position resumes exactly; pretraining on a sharded text is SIGKILLed after a checkpoint
and resumes, reading only the checkpoint's shards, with the weights of an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from pretrain_settings import settings

from elmo_repro.bilm.checkpoint import CHECKPOINT
from elmo_repro.bilm.model import BiLMConfig
from elmo_repro.bilm.train import pretrain
from elmo_repro.data.contamination import EvalIndex
from elmo_repro.data.lm_batches import LMStream, TypeTable
from elmo_repro.data.lm_corpus import ABC_ZIP, BROWN_ZIP, LM1B_DEV, LM1B_TEST, build_split
from elmo_repro.data.lm_shards import ShardedText, index_path, read_index
from elmo_repro.data.lm_split import write_sharded_text, write_split
from elmo_repro.data.vocabulary import Vocabulary, count_tokens
from elmo_repro.io import InputError

ROOT = Path(__file__).resolve().parents[2]
WORDS = "the a cat dog sat on mat red barked pets are is and at bark of river bank sees runs".split()


def corpus(n_sentences: int, seed: int = 0) -> list[list[str]]:
    """Sentences of 2-11 words, deterministic."""
    rng = np.random.default_rng(seed)
    return [[WORDS[i] for i in rng.integers(0, len(WORDS), rng.integers(2, 12))] for _ in range(n_sentences)]


def reference_batches(sentences: list[np.ndarray], batch: int, steps: int, seed: int, n: int):
    """The stream before shards, written out by hand: epoch e visits the whole corpus in
    ``default_rng([seed, e]).permutation`` order; rows refill in row order."""
    def order():
        epoch = 0
        while True:
            for i in np.random.default_rng([seed, epoch]).permutation(len(sentences)):
                yield np.concatenate(([0], sentences[i], [1]))
            epoch += 1
    source, rows = order(), [np.zeros(0, np.int64)] * batch
    for _ in range(n):
        inputs, targets = np.zeros((batch, steps), np.int64), np.zeros((batch, steps), np.int64)
        for r in range(batch):
            pos = 0
            while pos < steps:
                if len(rows[r]) <= 1:
                    rows[r] = next(source)
                take = min(len(rows[r]) - 1, steps - pos)
                inputs[r, pos:pos + take], targets[r, pos:pos + take] = rows[r][:take], rows[r][1:take + 1]
                rows[r], pos = rows[r][take:], pos + take
        yield inputs, targets


# ------------------------------------------------------------------------------ writing the text

def _zip(path: Path, members: dict[str, bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def test_streamed_split_is_the_in_memory_split_byte_for_byte(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / LM1B_DEV).parent.mkdir(parents=True)
    (mirror / LM1B_DEV).write_text("".join(" ".join(s) + "\n" for s in corpus(300))
                                   + "the cat sat\nthe leaked sentence is here now ok\n",
                                   encoding="utf-8")
    (mirror / LM1B_TEST).write_text("the cat sat\nthe leaked sentence is here now ok\nnew words here\nnew words here\n"
                                    "more held out text\n", encoding="utf-8")
    _zip(mirror / BROWN_ZIP, {"brown/ca01": b"\n\tthe/at dog/nn sat/vbd\n\n\ta/at cat/nn\n"})
    _zip(mirror / ABC_ZIP, {"abc/rural.txt": b"Rain fell. Crops grew.\n\nThe leaked sentence is here now ok.\n"})
    exclude = EvalIndex.build({"test": [("eval:1", "the leaked sentence is here now ok".split())]}, min_words=3)
    sources = ["lm1b_dev", "brown", "abc"]
    train, heldout, stats = build_split(mirror, sources, 9, exclude=exclude)
    streamed = write_split(mirror, sources, 9, "lm1b_test_sections", exclude, tmp_path / "lm", shard_tokens=500)

    assert (tmp_path / "lm/train.txt").read_bytes() == "".join(" ".join(s) + "\n" for s in train).encode()
    assert (tmp_path / "lm/heldout.txt").read_bytes() == "".join(" ".join(s) + "\n" for s in heldout).encode()
    assert streamed.pop("train_shards") == len(read_index(tmp_path / "lm/train.shards.tsv", tmp_path / "lm/train.txt"))
    assert streamed == stats
    # the leaked sentence's documents are gone (lm1b: the line; ABC: its block), so the held-out
    # copy of it stays in the sample; "the cat sat" is in the training text and is skipped
    assert stats["removed_documents"]["abc"] == {"abc/rural.txt:3": ["test"]}
    assert heldout[0] == "the leaked sentence is here now ok".split()
    assert stats["heldout_dropped_overlap"] >= 1


def test_shards_hold_at_most_shard_tokens_and_cover_the_text(tmp_path):
    sentences = corpus(400) + [["x"] * 40]                 # one sentence longer than a shard
    shards = write_sharded_text(tmp_path / "train.txt", sentences, shard_tokens=30)
    assert shards == read_index(index_path(tmp_path / "train.txt"), tmp_path / "train.txt")
    assert all(s.tokens <= 30 for s in shards[:-1]) and shards[-1].tokens == 40
    assert sum(s.sentences for s in shards) == len(sentences)
    text = ShardedText(tmp_path / "train.txt")
    table_order, encoded = TypeTable.build(sentences, Vocabulary.build(*count_tokens(sentences)))
    assert list(text.types) == table_order.types           # first appearance, as in memory
    loaded = [s for k in range(text.n_shards) for s in text.load(k)]
    assert [a.tolist() for a in loaded] == [a.tolist() for a in encoded]


@pytest.mark.parametrize("edit, problem", [
    (lambda rows: ["shard first_line bytes"] + rows[1:], "header must be"),
    (lambda rows: rows[:1] + [rows[2]] + rows[2:], "does not follow shard"),
    (lambda rows: rows[:2] + ["1\t3\tx\t4\t1\t1"] + rows[3:], "tab-separated integers"),
    (lambda rows: rows[:-1], "the text changed after prepare_lm"),
])
def test_a_bad_index_is_an_error_naming_the_file_and_line(tmp_path, edit, problem):
    write_sharded_text(tmp_path / "train.txt", corpus(50), shard_tokens=60)
    index = index_path(tmp_path / "train.txt")
    index.write_text("\n".join(edit(index.read_text().splitlines())) + "\n")
    with pytest.raises(InputError, match=problem) as err:
        ShardedText(tmp_path / "train.txt")
    assert str(err.value).startswith(f"{index}")


def test_a_text_edited_after_prepare_lm_is_refused(tmp_path):
    write_sharded_text(tmp_path / "train.txt", corpus(50), shard_tokens=60)
    sharded = ShardedText(tmp_path / "train.txt")
    text = (tmp_path / "train.txt").read_text()
    (tmp_path / "train.txt").write_text(text.replace("cat", "cow"))   # same size, a type never seen
    with pytest.raises(InputError, match="text changed while training") as err:
        for k in range(sharded.n_shards):
            sharded.load(k)
    assert err.value.path == str(tmp_path / "train.txt") and err.value.line is not None


# ------------------------------------------------------------------------------ streaming

def test_one_shard_streams_exactly_as_the_whole_corpus_in_memory(tmp_path):
    sentences = corpus(120)
    write_sharded_text(tmp_path / "train.txt", sentences, shard_tokens=10**6)
    text = ShardedText(tmp_path / "train.txt")
    _, encoded = TypeTable.build(sentences, Vocabulary.build(*count_tokens(sentences)))
    for stream in (LMStream(text, 4, 7, seed=3), LMStream(encoded, 4, 7, seed=3)):
        for (x, y), (rx, ry) in zip(stream, reference_batches(encoded, 4, 7, 3, 200)):   # > 3 epochs
            np.testing.assert_array_equal(x, rx)
            np.testing.assert_array_equal(y, ry)


def test_each_epoch_visits_shuffled_shards_and_every_sentence_once(tmp_path):
    sentences = [[f"w{i}"] for i in range(60)]           # sentence i is type i + 2
    write_sharded_text(tmp_path / "train.txt", sentences, shard_tokens=10)    # 6 shards of 10
    text = ShardedText(tmp_path / "train.txt")
    loads: list[int] = []
    load = text.load
    text.load = lambda k: loads.append(k) or load(k)   # type: ignore[method-assign]
    stream = LMStream(text, 1, 2, seed=11)             # one row, one sentence (<S> w) per batch
    seen = [int(next(stream)[0][0, 1]) - 2 for _ in range(180)]
    for epoch in range(3):
        visit = seen[60 * epoch: 60 * (epoch + 1)]
        assert sorted(visit) == list(range(60))                    # every sentence once
        shards = [v // 10 for v in visit]
        order = [shards[10 * j] for j in range(6)]
        assert all(shards[10 * j: 10 * j + 10] == [order[j]] * 10 for j in range(6))   # shard by shard
        assert order == loads[6 * epoch: 6 * epoch + 6]
        assert visit[:10] != sorted(visit[:10])                    # sentences shuffled in a shard
    assert len({tuple(loads[i:i + 6]) for i in (0, 6, 12)}) > 1     # shard orders differ by epoch
    backward = LMStream(text, 1, 2, seed=12, reverse=True)
    assert [int(next(backward)[0][0, 1]) - 2 for _ in range(60)] != seen[:60]   # independent streams


def test_a_position_resumes_across_shards_and_epochs(tmp_path):
    write_sharded_text(tmp_path / "train.txt", corpus(200), shard_tokens=80)
    text = ShardedText(tmp_path / "train.txt")
    assert text.n_shards > 10
    whole = LMStream(text, 3, 5, seed=2, reverse=True)
    batches = [next(whole) for _ in range(400)]                    # > 2 epochs
    for cut in (0, 1, 37, 150, 333):
        first = LMStream(text, 3, 5, seed=2, reverse=True)
        for _ in range(cut):
            next(first)
        saved = torch.load(_saved(first.position(), tmp_path), weights_only=True)   # as a checkpoint holds it
        resumed = LMStream(text, 3, 5, seed=2, reverse=True)
        resumed.restore(saved)
        for x, y in batches[cut:cut + 60]:
            nx, ny = next(resumed)
            np.testing.assert_array_equal(nx, x)
            np.testing.assert_array_equal(ny, y)
    with pytest.raises(ValueError, match="rows"):
        LMStream(text, 4, 5, seed=2).restore(saved)


def _saved(position: dict, tmp_path: Path) -> Path:
    path = tmp_path / "position.pt"
    torch.save(position, path)
    return path


def test_a_stream_holds_one_shard_not_the_text(tmp_path):
    write_sharded_text(tmp_path / "train.txt", corpus(6000), shard_tokens=2000)
    text = ShardedText(tmp_path / "train.txt")
    assert text.n_shards >= 20
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        shard = text.load(0)
        one_shard = tracemalloc.get_traced_memory()[0] - base
        del shard
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        streams = [LMStream(text, 8, 20, seed=d, reverse=bool(d)) for d in (0, 1)]
        tokens = 0
        while tokens < 3 * text.n_tokens:                           # three epochs of each direction
            for stream in streams:
                tokens += next(stream)[0].size
        peak = tracemalloc.get_traced_memory()[1] - base
        whole = [text.load(k) for k in range(text.n_shards)]
        all_shards = tracemalloc.get_traced_memory()[0] - base
        del whole
    finally:
        tracemalloc.stop()
    # two streams, each with its shard (and for a moment the next one's file bytes): a few
    # shards' worth, a fraction of the text
    assert peak < 4 * one_shard, (peak, one_shard)
    assert peak < all_shards / 4, (peak, all_shards)


# ------------------------------------------------------------------------------ kill and resume

TRAIN_SCRIPT = """
import json, sys, time, torch
sys.path[:0] = [{tests!r}]
from pathlib import Path
from pretrain_settings import settings
from elmo_repro.bilm.model import BiLMConfig
from elmo_repro.bilm.train import pretrain
from elmo_repro.data.lm_shards import ShardedText
from elmo_repro.data.vocabulary import Vocabulary
torch.set_num_threads({threads})   # the parent's: float sums depend on it
vocab = Vocabulary.load({vocab!r}, {counts!r})
config = BiLMConfig(**json.loads({config!r}))
cfg = settings(**json.loads({cfg!r}))
# slow enough to be killed mid-run: sleeping in the logging hook changes no number
pretrain(config, cfg, ShardedText({text!r}), vocab, Path({ckpt!r}), log_metrics=lambda m, step: time.sleep(0.3))
"""


def _model_config(vocab: Vocabulary) -> dict:
    return dict(filters=((1, 4), (2, 4)), char_dim=4, n_highway=1, cell_dim=8, projection_dim=4, n_layers=2,
                dropout=0.1, n_tokens_vocab=len(vocab))


def test_pretraining_on_shards_is_killed_and_resumes_with_identical_weights(tmp_path):
    sentences = corpus(400, seed=5)
    write_sharded_text(tmp_path / "train.txt", sentences, shard_tokens=300)
    text = ShardedText(tmp_path / "train.txt")
    assert text.n_shards >= 8
    vocab = Vocabulary.build(*count_tokens(sentences), min_count=2)
    vocab.save(tmp_path / "vocab.txt", tmp_path / "counts.tsv")
    cfg = dict(batch_size=4, unroll_steps=5, n_negative_samples=8, token_budget=4 * 5 * 60, checkpoint_every=10,
               log_every=1, seed=3)
    config = BiLMConfig(**_model_config(vocab))
    full, _ = pretrain(config, settings(**cfg), text, vocab, tmp_path / "full")

    ckpt = tmp_path / "killed"
    script = TRAIN_SCRIPT.format(tests=str(Path(__file__).parent), threads=torch.get_num_threads(), vocab=str(tmp_path / "vocab.txt"),
                                 counts=str(tmp_path / "counts.tsv"), config=json.dumps(_model_config(vocab)),
                                 cfg=json.dumps(cfg), text=str(tmp_path / "train.txt"), ckpt=str(ckpt))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    process = subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (ckpt / CHECKPOINT).exists():
            assert process.poll() is None, process.stderr.read()[-2000:]
            assert time.monotonic() < deadline, "no checkpoint within two minutes"
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        process.stderr.close()
    saved = torch.load(ckpt / CHECKPOINT, weights_only=True)
    assert 0 < saved["batch"] < 60                                   # killed mid-run
    assert all(position["rng"] is not None for position in saved["streams"])

    loads: list[int] = []
    load = text.load
    text.load = lambda k: loads.append(k) or load(k)     # type: ignore[method-assign]
    resumed, _ = pretrain(config, settings(**cfg), text, vocab, ckpt)
    for name, weight in full.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[name], weight, rtol=0, atol=0, msg=name)
    # resuming opened the checkpoint's shards first, not the text from the start
    for direction, position in enumerate(saved["streams"]):
        order = np.random.default_rng([2 * cfg["seed"] + direction, position["epoch"]]).permutation(text.n_shards)
        assert int(order[position["shard"]]) in loads[:2]
