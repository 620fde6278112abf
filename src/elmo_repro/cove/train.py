"""Training the CoVe translation model on Multi30k, with dev-BLEU selection and exact resume.

* Source side: each English token is looked up in the fixed word vectors as written, else
  lower-cased, else it is the zero vector of unknown words (GloVe's convention in CoVe).
* Target side: German words seen at least ``min_count`` times in the training text, else
  ``<unk>``; each target is ``<s> w_1 .. w_n </s>``.
* Updates: Adam, the summed token negative log-likelihood divided by the batch's target tokens,
  the gradient norm clipped to ``grad_clip``. McCann et al. do not state their optimizer; Adam is
  our choice and the config says so.
* Batches: each epoch the pairs are shuffled, stably sorted by source length and cut into batches;
  the batch order is shuffled (a NumPy generator seeded with the run's seed).
* Selection: after every epoch the val set is translated greedily and scored with sacrebleu; the
  epoch with the best val BLEU (the first on ties) is kept and test 2016 is translated once, with
  ``beam_size``, and scored once.
* Resume: after every epoch a checkpoint holds the weights, the optimizer, the generators' states,
  the history and the best weights; a run killed at any point restarts from the last epoch and ends
  with identical weights. A checkpoint of another configuration, data, vectors or training code
  (its fingerprint differs), or one past the run's last epoch, is never resumed: training starts
  afresh. Checkpoints leave out the fixed input vectors (GloVe 840B would be 2.6 GB a copy).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from ..checks import check_count
from ..fingerprint import NOT_OUTPUT_MODULES, code_fingerprint, local_imports
from ..data.multi30k import BOS, EOS, PAD, UNK, Pair, build_vocabulary
from ..device import on_cpu
from ..io import atomic_path
from .bleu import corpus_bleu, detokenize
from .model import BOS_ID, EOS_ID, PAD_ID, UNK_ID, CoVeConfig, CoVeTranslator

assert [PAD_ID, UNK_ID, BOS_ID, EOS_ID] == [0, 1, 2, 3] and build_vocabulary([], 1) == [PAD, UNK, BOS, EOS]

_PACKAGE = Path(__file__).resolve().parents[1]
_CODE = sorted(local_imports(Path(__file__)) - set(NOT_OUTPUT_MODULES))


@dataclass(frozen=True)
class CoVeTrainConfig:
    epochs: int = 10
    batch_size: int = 64
    lr: float = 0.001              # Adam
    grad_clip: float = 5.0         # global gradient norm
    min_count: int = 2             # target words seen fewer times are <unk>
    max_length: int = 80           # decoded words at most
    beam_size: int = 5             # for test; val selection decodes greedily
    seed: int = 0


class SourceVectors:
    """Fixed input vectors with a zero row 0 for padding and unknown words.

    Args:
        words: the vectors' V words; matrix: ``(V, D)``.
        standardize: shift and scale each dimension to mean 0 and standard deviation 1 over the V
            words (a fixed affine map: the inputs stay fixed). Our 50-d word2vec vectors have a
            per-dimension std of about 0.1; at that scale the MT-LSTM hardly reads its input for the
            first epoch (measured: after 250 batches the loss with shuffled sources was within 1%
            of the real one; standardized, 15% above it).
    """

    def __init__(self, words: Sequence[str], matrix: np.ndarray, standardize: bool = False):
        matrix = np.asarray(matrix, np.float64)
        if standardize:
            matrix = (matrix - matrix.mean(0)) / np.where(matrix.std(0) > 0, matrix.std(0), 1.0)
        self.index = {word: i + 1 for i, word in enumerate(words)}
        self.matrix = torch.cat([torch.zeros(1, matrix.shape[1]), torch.as_tensor(matrix, dtype=torch.float32)])

    def ids(self, tokens: Sequence[str]) -> list[int]:
        return [self.index.get(token) or self.index.get(token.lower(), 0) for token in tokens]

    def coverage(self, sentences: Sequence[Sequence[str]]) -> float:
        """Fraction of tokens with a vector."""
        ids = [i for tokens in sentences for i in self.ids(tokens)]
        return sum(i > 0 for i in ids) / max(len(ids), 1)


def pad(rows: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(batch, max length)`` int64 padded with 0, and the ``(batch,)`` lengths, on the CPU."""
    lengths = torch.tensor([len(r) for r in rows], device="cpu")
    out = torch.zeros(len(rows), int(lengths.max()), dtype=torch.long, device="cpu")
    for i, r in enumerate(rows):
        out[i, :len(r)] = torch.tensor(r, dtype=torch.long, device="cpu")
    return out, lengths


@dataclass
class CoVeResult:
    metrics: dict[str, float]
    history: list[dict[str, float]]
    test_translations: list[str] = field(repr=False, default_factory=list)
    signature: str = ""
    score_line: str = ""


def translate(model: CoVeTranslator, sources: Sequence[Sequence[int]], target_words: Sequence[str],
              max_length: int, beam_size: int = 1, batch_size: int = 64) -> list[str]:
    """Detokenized translations, in input order (greedy in batches for ``beam_size`` 1), computed
    on the model's device."""
    model.eval()
    device = next(model.parameters()).device
    out: list[list[int]] = []
    if beam_size == 1:
        order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
        by_index = {}
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            source, lengths = pad([sources[i] for i in chunk])
            for i, ids in zip(chunk, model.greedy(source.to(device), lengths.to(device), max_length)):
                by_index[i] = ids
        out = [by_index[i] for i in range(len(sources))]
    else:
        out = [model.beam(torch.tensor([list(s)], device=device), len(s), beam_size, max_length) for s in sources]
    return [detokenize([target_words[i] for i in ids]) for ids in out]


FIXED = "encoder.embedding.weight"      # the input vectors: fixed, never in a checkpoint


def _fingerprint(model_config: CoVeConfig, config: CoVeTrainConfig, train: Sequence[Pair], val: Sequence[Pair],
                 vectors: SourceVectors) -> str:
    """Identifies a training run: configuration, training and selection pairs, input vectors and
    the code. The epoch count is left out (more epochs continue a run), and so is the test beam."""
    training = {k: v for k, v in asdict(config).items() if k not in ("epochs", "beam_size")}
    digest = hashlib.sha256(json.dumps([asdict(model_config), training, code_fingerprint(_CODE, _PACKAGE)],
                                       sort_keys=True).encode())
    for pair in (*train, *val):
        digest.update(("\t".join(pair.source) + "\n" + "\t".join(pair.target) + "\n").encode())
    digest.update(vectors.matrix.numpy().tobytes())
    digest.update("\n".join(vectors.index).encode())
    return digest.hexdigest()[:16]


def train_cove(train: Sequence[Pair], val: Sequence[Pair], test: Sequence[Pair], vectors: SourceVectors,
               model_config: CoVeConfig, config: CoVeTrainConfig, checkpoint: str | Path | None = None,
               log: Callable[[str], None] = print,
               log_metrics: Callable[[dict, int], None] = lambda metrics, step: None,
               device: torch.device = torch.device("cpu")
               ) -> tuple[CoVeTranslator, list[str], CoVeResult]:
    """Train on ``train``, select the epoch by ``val`` BLEU, score ``test`` once. The model is built
    on the CPU (the seed's weights on any device) and trained on ``device``.

    Returns:
        ``(model with the selected weights, target vocabulary, result)``; the metrics hold
        ``val_bleu``, ``test_bleu``, ``best_epoch``, ``train_pairs``, ``source_coverage`` and the
        target vocabulary size.

    Raises:
        ValueError: counts outside their domain; RuntimeError: a non-finite loss (naming the epoch
            and batch).
    """
    for name in ("epochs", "batch_size", "min_count", "max_length", "beam_size"):
        check_count(getattr(config, name), f"cove.{name}")
    target_words = build_vocabulary((p.target for p in train), config.min_count)
    word_id = {w: i for i, w in enumerate(target_words)}

    def target_ids(tokens):
        return [BOS_ID] + [word_id.get(t, UNK_ID) for t in tokens] + [EOS_ID]

    train_source = [vectors.ids(p.source) for p in train]
    train_target = [target_ids(p.target) for p in train]
    val_source = [vectors.ids(p.source) for p in val]
    torch.manual_seed(config.seed)
    with on_cpu():
        model = CoVeTranslator(vectors.matrix, len(target_words), model_config)
    model.to(device)
    cuda = device.type == "cuda"
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=config.lr)
    rng = np.random.default_rng(config.seed)
    history: list[dict[str, float]] = []
    best = {"bleu": -1.0, "epoch": 0, "state": None}
    first_epoch = 1
    fingerprint = _fingerprint(model_config, config, train, val, vectors)

    def learned_state() -> dict[str, torch.Tensor]:
        return {k: v.clone() for k, v in model.state_dict().items() if k != FIXED}

    saved = None
    if checkpoint is not None and Path(checkpoint).is_file():
        saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
        if saved.get("fingerprint") != fingerprint:
            log("the checkpoint is of another configuration, data or code: starting afresh")
            saved = None
        elif saved["epoch"] > config.epochs:      # its best epoch may lie beyond this run's last
            log(f"the checkpoint is after epoch {saved['epoch']}, beyond epochs={config.epochs}: starting afresh")
            saved = None
    if saved is not None:
        model.load_state_dict({**model.state_dict(), **saved["model"]})
        optimizer.load_state_dict(saved["optimizer"])
        rng.bit_generator.state = saved["numpy"]
        torch.set_rng_state(saved["torch"])
        if cuda and saved.get("cuda") is not None:
            torch.cuda.set_rng_state(saved["cuda"], device)
        history, best, first_epoch = saved["history"], saved["best"], saved["epoch"] + 1
        log(f"resumed after epoch {saved['epoch']}")
    for epoch in range(first_epoch, config.epochs + 1):
        model.train()
        start = time.monotonic()
        order = rng.permutation(len(train))
        order = sorted(order, key=lambda i: len(train_source[i]))              # stable: shuffled within a length
        batches = [order[s:s + config.batch_size] for s in range(0, len(order), config.batch_size)]
        total, tokens = 0.0, 0
        for number, b in enumerate(rng.permutation(len(batches)), start=1):
            rows = batches[b]
            source, lengths = pad([train_source[i] for i in rows])
            target, _ = pad([train_target[i] for i in rows])
            source, lengths, target = source.to(device), lengths.to(device), target.to(device)
            losses = model(source, lengths, target)
            n = int((target[:, 1:] != PAD_ID).sum())
            loss = losses.sum() / n
            if not torch.isfinite(loss):
                raise RuntimeError(f"CoVe epoch {epoch} batch {number}: non-finite loss {loss.item()}")
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            with on_cpu():                 # Adam keeps its step counts on the default device
                optimizer.step()
            total, tokens = total + float(losses.detach().sum()), tokens + n
        seconds = time.monotonic() - start
        hypotheses = translate(model, val_source, target_words, config.max_length)
        bleu, _, _ = corpus_bleu(hypotheses, [p.reference for p in val])
        row = {"epoch": epoch, "train_ppl": math.exp(total / tokens), "val_bleu": bleu, "seconds": seconds}
        history.append(row)
        log_metrics({k: v for k, v in row.items() if k != "epoch"}, epoch)
        log(f"epoch {epoch}: train perplexity {row['train_ppl']:.2f}, val BLEU {bleu:.2f} (greedy), {seconds:.0f} s")
        if bleu > best["bleu"]:
            best = {"bleu": bleu, "epoch": epoch, "state": learned_state()}
        if checkpoint is not None:
            with atomic_path(checkpoint) as tmp:
                torch.save({"model": learned_state(), "optimizer": optimizer.state_dict(),
                            "numpy": rng.bit_generator.state, "torch": torch.get_rng_state(),
                            "cuda": torch.cuda.get_rng_state(device) if cuda else None,
                            "history": history, "best": best, "epoch": epoch, "fingerprint": fingerprint,
                            "config": asdict(config), "model_config": asdict(model_config)}, tmp)
    model.load_state_dict({**model.state_dict(), **best["state"]})
    test_translations = translate(model, [vectors.ids(p.source) for p in test], target_words,
                                  config.max_length, config.beam_size)
    test_bleu, line, signature = corpus_bleu(test_translations, [p.reference for p in test])
    log(f"test 2016 BLEU {test_bleu:.2f} (beam {config.beam_size}, epoch {best['epoch']}): {line} | {signature}")
    metrics = {"val_bleu": best["bleu"], "test_bleu": test_bleu, "best_epoch": best["epoch"],
               "train_pairs": len(train), "target_vocabulary": len(target_words),
               "source_coverage": vectors.coverage([p.source for p in train])}
    return model.eval(), target_words, CoVeResult(metrics, history, test_translations, signature, line)
