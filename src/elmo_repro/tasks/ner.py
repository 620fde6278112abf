"""CoNLL-2003 NER: the BiLSTM-CRF tagger of the paper's NER experiments (Peters et al. 2018 §4, Table 1).

The baseline follows Lample et al. (2016) / Peters et al. (2017): each token is the concatenation
of a static word vector and a character-CNN vector (:mod:`.char_cnn`), run through ``lstm_layers``
biLSTM layers (the paper uses two; the default here is one, ``DEFAULT_LSTM_LAYERS``, to fit the
2-core time budget), projected to BIOUL tag scores and trained with a CRF
(:mod:`.crf`). The ``elmo`` variant adds ELMo (§3.3): a task-specific ScalarMix of the frozen
biLM's layers, concatenated to the input (and with ``elmo.at_output`` a second mix concatenated to
the biLSTM output), with the mix weights' L2 penalty (Eq. 1) added to the loss.

Choices (each documented where it is made):

* Word vectors: a token takes the pretrained vector of its exact form, else of its lowercased
  form, else the trainable UNK row. The embedding matrix keeps only the pretrained words that
  occur in some split -- exactly equivalent to keeping them all, since a row never looked up
  never gets a gradient and Adam leaves it unchanged. All rows are fine-tuned.
* ``max_train_sentences`` > 0 trains on the first N sentences of eng.train (file order), which is
  deterministic and keeps documents contiguous; dev and test are always complete.
* Batches: each epoch the training sentences are shuffled, stably sorted by length and cut into
  batches of ``batch_size`` (similar lengths, little padding), and the batch order is shuffled,
  all from a generator seeded with ``seed``.
* Loss: the mean over the batch's sentences of the CRF negative log-likelihood, plus the ScalarMix
  penalty; Adam; gradient norm clipped to 5.0.
* Model selection: dev (eng.testa) span F1 after every epoch; the best epoch's weights (the first
  one on ties) are restored and scored on dev and test (eng.testb).
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..console import Progress
from ..data.conll import bioul_to_iob2, iob1_to_bioul, to_iob2
from ..elmo.scalar_mix import ElmoInput
from ..metrics.span_f1 import span_prf
from .char_cnn import CharCNN, build_char_vocab, encode_chars
from .crf import ConditionalRandomField, allowed_transitions

PAD, UNK = 0, 1                 # word indices; rows 2.. are pretrained vectors
GRAD_CLIP = 5.0
DEFAULT_LSTM_LAYERS = 1         # the paper (§4) uses two; one fits the 2-core time budget
EVAL_BATCH = 128                # decoding batch size (results do not depend on it without layer norm)
SPLITS = ("train", "dev", "test")


# ----------------------------------------------------------------------------------------- data

@dataclass
class Split:
    """One split encoded for the model; lists are per sentence, in sentence-index order."""

    words: list[np.ndarray]                 # (T,) int64 word ids
    chars: list[np.ndarray]                 # (T, C) int64 character ids
    tags: list[np.ndarray] | None           # (T,) int64 BIOUL tag ids (training split only)
    gold: list[list[str]]                   # IOB1 gold tags, as in the file
    features: list[np.ndarray] | None       # (L+1, T, D) ELMo layers, float16 or float32


def bioul_labels(sentences: list[dict]) -> list[str]:
    """``O`` then B/I/L/U of every entity type in ``sentences``, types sorted: the tagger's label set."""
    kinds = sorted({tag[2:] for s in sentences for tag in s["ner"] if tag != "O"})
    return ["O"] + [f"{prefix}-{kind}" for kind in kinds for prefix in "BILU"]


def build_embeddings(vectors: tuple[list[str], np.ndarray], sentences: list[dict], seed: int
                     ) -> tuple[dict[str, int], np.ndarray]:
    """Word index and (2 + V, dim) float32 matrix: PAD (zeros), UNK (random), then pretrained rows.

    Only pretrained words reachable from ``sentences`` (exact or lowercased form) are kept; see the
    module doc for why this equals keeping all of them.
    """
    words, matrix = vectors
    row_of = {word: i for i, word in enumerate(words)}
    needed = sorted({key for s in sentences for token in s["tokens"]
                     for key in (token, token.lower()) if key in row_of})
    index = {word: i + 2 for i, word in enumerate(needed)}
    out = np.zeros((len(needed) + 2, matrix.shape[1]), dtype=np.float32)
    scale = float(matrix.std()) if matrix.size else 1.0
    out[UNK] = np.random.default_rng(seed).normal(0.0, scale, matrix.shape[1])
    if needed:
        out[2:] = matrix[[row_of[word] for word in needed]]
    return index, out


def word_id(token: str, index: dict[str, int]) -> int:
    """Exact form, else lowercased form, else UNK."""
    return index.get(token, index.get(token.lower(), UNK))


def encode_split(sentences: list[dict], word_index: dict[str, int], char_vocab: dict[str, int],
                 label_index: dict[str, int] | None, features: list[np.ndarray] | None) -> Split:
    """Turn sentences (and their ELMo features) into id arrays; ``label_index`` only for training."""
    if features is not None:
        if len(features) != len(sentences):
            raise ValueError(f"{len(features)} feature arrays for {len(sentences)} sentences")
        for i, (f, s) in enumerate(zip(features, sentences)):
            if f.ndim != 3 or f.shape[1] != len(s["tokens"]):
                raise ValueError(f"sentence {i}: features {f.shape} do not match its {len(s['tokens'])} tokens")
    return Split(
        words=[np.array([word_id(t, word_index) for t in s["tokens"]], dtype=np.int64) for s in sentences],
        chars=[encode_chars(s["tokens"], char_vocab) for s in sentences],
        tags=None if label_index is None else
        [np.array([label_index[t] for t in iob1_to_bioul(s["ner"])], dtype=np.int64) for s in sentences],
        gold=[s["ner"] for s in sentences],
        features=features,
    )


def collate(split: Split, indices: list[int]) -> dict[str, torch.Tensor | None]:
    """Pad the given sentences into a batch.

    Returns:
        ``words`` (B, T), ``chars`` (B, T, C), ``mask`` (B, T) bool, ``lengths`` (B,),
        ``tags`` (B, T) or None, ``elmo`` (B, L+1, T, D) float32 or None.
    """
    lengths = np.array([len(split.words[i]) for i in indices])
    b, t = len(indices), int(lengths.max())
    c = max(split.chars[i].shape[1] for i in indices)
    words = np.zeros((b, t), dtype=np.int64)
    chars = np.zeros((b, t, c), dtype=np.int64)
    tags = np.zeros((b, t), dtype=np.int64) if split.tags is not None else None
    elmo = None
    if split.features is not None:
        n_layers, _, dim = split.features[indices[0]].shape
        elmo = np.zeros((b, n_layers, t, dim), dtype=np.float32)
    for row, i in enumerate(indices):
        n = lengths[row]
        words[row, :n] = split.words[i]
        chars[row, :n, :split.chars[i].shape[1]] = split.chars[i]
        if tags is not None:
            tags[row, :n] = split.tags[i]
        if elmo is not None:
            elmo[row, :, :n] = split.features[i]                       # float16 on disk -> float32
    return {
        "words": torch.from_numpy(words), "chars": torch.from_numpy(chars),
        "mask": torch.from_numpy(np.arange(t)[None, :] < lengths[:, None]),
        "lengths": torch.from_numpy(lengths),
        "tags": None if tags is None else torch.from_numpy(tags),
        "elmo": None if elmo is None else torch.from_numpy(elmo),
    }


def train_batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator) -> list[list[int]]:
    """One epoch's batches: shuffle, stable sort by length, cut, shuffle the batch order."""
    order = rng.permutation(len(lengths))
    order = order[np.argsort(lengths[order], kind="stable")]
    batches = [order[i:i + batch_size].tolist() for i in range(0, len(order), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def eval_batches(lengths: np.ndarray, batch_size: int = EVAL_BATCH) -> list[list[int]]:
    order = np.argsort(lengths, kind="stable")
    return [order[i:i + batch_size].tolist() for i in range(0, len(order), batch_size)]


# ---------------------------------------------------------------------------------------- model

def reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each sequence's first ``length`` steps, leaving padding in place: (B, T, D) -> (B, T, D)."""
    pos = torch.arange(x.size(1))[None, :]                                     # (1, T)
    idx = lengths[:, None] - 1 - pos
    idx = torch.where(idx >= 0, idx, pos)                                       # (B, T)
    return x.gather(1, idx[:, :, None].expand(-1, -1, x.size(2)))


class BiLSTM(nn.Module):
    """Stacked bidirectional LSTM over right-padded batches, without packing.

    The backward direction runs a forward LSTM over each sentence reversed within its length, so
    trailing padding never reaches a real position in either direction; on CPU this is ~1.6x faster
    than ``nn.LSTM`` on a ``PackedSequence`` and gives the same function. Dropout between layers.
    """

    def __init__(self, input_dim: int, hidden: int, layers: int, dropout: float):
        super().__init__()
        dims = [input_dim] + [2 * hidden] * (layers - 1)
        self.forward_lstms = nn.ModuleList(nn.LSTM(d, hidden, batch_first=True) for d in dims)
        self.backward_lstms = nn.ModuleList(nn.LSTM(d, hidden, batch_first=True) for d in dims)
        self.dropout = nn.Dropout(dropout)
        self.output_dim = 2 * hidden

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, T, input_dim), (B,) -> (B, T, 2 * hidden); values at padded positions are arbitrary."""
        for i, (fwd, bwd) in enumerate(zip(self.forward_lstms, self.backward_lstms)):
            if i > 0:
                x = self.dropout(x)
            back = reverse_padded(bwd(reverse_padded(x, lengths))[0], lengths)
            x = torch.cat([fwd(x)[0], back], dim=-1)
        return x


class NerTagger(nn.Module):
    """dropout([word vector ; char CNN]) (; ELMo) -> biLSTM -> dropout (; ELMo) -> linear -> CRF.

    Args:
        embeddings: (V, word_dim) initial word matrix (row 0 padding, row 1 UNK); fine-tuned.
        n_chars: character vocabulary size (with PAD and UNK).
        labels: BIOUL label strings; the CRF forbids transitions invalid in BIOUL.
        cfg: the ``ner`` params section.
        elmo_shape: (L+1, D) of the ELMo features, or None for the baseline.
    """

    def __init__(self, embeddings: np.ndarray, n_chars: int, labels: list[str], cfg: dict,
                 elmo_shape: tuple[int, int] | None = None):
        super().__init__()
        self.words = nn.Embedding.from_pretrained(torch.from_numpy(embeddings), freeze=False, padding_idx=PAD)
        self.chars = CharCNN(n_chars, cfg["char_embedding_dim"], cfg["char_filters"], cfg["char_kernel"])
        in_dim, out_extra = embeddings.shape[1] + self.chars.output_dim, 0
        self.elmo = None
        if elmo_shape is not None:
            e = cfg["elmo"]
            self.elmo = ElmoInput(elmo_shape[0], at_output=e["at_output"], do_layer_norm=e["do_layer_norm"],
                                  l2_coef=e["l2_coef"], dropout=e["dropout"])
            in_dim += elmo_shape[1]
            out_extra = elmo_shape[1] if e["at_output"] else 0
        layers = cfg.get("lstm_layers", DEFAULT_LSTM_LAYERS)
        self.dropout = nn.Dropout(cfg["dropout"])
        self.lstm = BiLSTM(in_dim, cfg["lstm_hidden"], layers, cfg["dropout"])
        self.projection = nn.Linear(self.lstm.output_dim + out_extra, len(labels))
        self.crf = ConditionalRandomField(len(labels), allowed_transitions(labels))

    def emissions(self, batch: dict) -> torch.Tensor:
        """Batch from :func:`collate` -> (B, T, K) tag scores."""
        mask = batch["mask"]
        tokens = self.dropout(torch.cat([self.words(batch["words"]), self.chars(batch["chars"])], dim=-1))
        # ElmoInput applies its own dropout (elmo.dropout) to each mix, so it is not dropped twice.
        mixes = self.elmo(batch["elmo"], mask) if self.elmo is not None else []
        x = torch.cat([tokens] + mixes[:1], dim=-1)                             # (B, T, in_dim)
        h = self.dropout(self.lstm(x, batch["lengths"]))                        # (B, T, 2H)
        return self.projection(torch.cat([h] + mixes[1:], dim=-1))

    def loss(self, batch: dict) -> torch.Tensor:
        """Mean CRF negative log-likelihood per sentence + the ScalarMix L2 penalty."""
        nll = -self.crf.log_likelihood(self.emissions(batch), batch["tags"], batch["mask"]).mean()
        return nll + self.elmo.penalty() if self.elmo is not None else nll

    @torch.no_grad()
    def decode(self, batch: dict) -> list[list[int]]:
        """Constrained Viterbi tag ids per sentence."""
        return self.crf.viterbi_tags(self.emissions(batch), batch["mask"])


# ------------------------------------------------------------------------------------- training

def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators (initialisation and dropout)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def evaluate(model: NerTagger, split: Split, labels: list[str]) -> dict[str, float]:
    """Span P/R/F1 (percent) of the model's predictions on a split (conlleval semantics)."""
    model.eval()
    predicted: list[list[str]] = [[] for _ in split.words]
    for indices in eval_batches(np.array([len(w) for w in split.words])):
        for i, path in zip(indices, model.decode(collate(split, indices))):
            predicted[i] = bioul_to_iob2([labels[k] for k in path])
    return span_prf([to_iob2(tags) for tags in split.gold], predicted)


def train_and_evaluate(cfg: dict, data: dict[str, list[dict]], vectors: tuple[list[str], np.ndarray],
                       features: dict[str, list[np.ndarray]] | None, seed: int,
                       log_metrics: Callable[[dict[str, float], int], None] | None = None) -> dict:
    """Train one tagger and score its best-dev-epoch weights.

    Args:
        cfg: the ``ner`` params section.
        data: ``{"train", "dev", "test"}`` -> sentences as read by ``read_jsonl`` (IOB1 ``ner``).
        vectors: pretrained ``(words, (V, dim) float32 matrix)``.
        features: per split, ELMo layers per sentence, each (L+1, T, D); None for the baseline.
        seed: seeds initialisation, dropout and batch order; the same seed gives the same result.
        log_metrics: called as ``log_metrics(metrics, step)`` after every epoch (step = epoch) with
            ``train_loss``, ``epoch_dev_f1`` and ``epoch_seconds``.

    Returns:
        ``dev_f1``, ``test_f1`` (percent) and their precision/recall, ``best_epoch`` (1-based),
        ``epochs``, ``dev_f1_per_epoch``, ``train_seconds`` (training only, without dev scoring),
        ``train_sentences``.
    """
    seed_everything(seed)
    train = data["train"]
    limit = cfg.get("max_train_sentences", 0)
    features = dict(features) if features is not None else None
    if limit > 0:
        train = train[:limit]
        if features is not None:
            features["train"] = features["train"][:limit]
    labels = bioul_labels(train)
    word_index, embeddings = build_embeddings(vectors, [s for part in (train, data["dev"], data["test"])
                                                        for s in part], seed)
    char_vocab = build_char_vocab(token for s in train for token in s["tokens"])
    sentences = {"train": train, "dev": data["dev"], "test": data["test"]}
    splits = {name: encode_split(sentences[name], word_index, char_vocab,
                                 {label: i for i, label in enumerate(labels)} if name == "train" else None,
                                 None if features is None else features[name])
              for name in SPLITS}
    elmo_shape = None
    if features is not None:
        first = splits["train"].features[0]
        elmo_shape = (first.shape[0], first.shape[2])
    model = NerTagger(embeddings, len(char_vocab) + 2, labels, cfg, elmo_shape)
    # The fused (single-kernel) CPU Adam is ~3x faster than the per-tensor loop, same update rule.
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg["learning_rate"], fused=True)
    rng = np.random.default_rng(seed)
    lengths = np.array([len(w) for w in splits["train"].words])

    best_dev, best_epoch, best_state, history, train_seconds = {"f1": -1.0}, 0, None, [], 0.0
    n_batches = -(-len(lengths) // cfg["batch_size"])
    with Progress(f"NER ({'ELMo' if features is not None else 'baseline'}, seed {seed})",
                  cfg["epochs"] * n_batches, "batches") as progress:
        for epoch in range(1, cfg["epochs"] + 1):
            start = time.monotonic()
            loss = _train_epoch(model, optimizer, splits["train"],
                                train_batches(lengths, cfg["batch_size"], rng), progress)
            seconds = time.monotonic() - start
            train_seconds += seconds
            dev = evaluate(model, splits["dev"], labels)
            history.append(dev["f1"])
            progress.note(f"epoch {epoch} dev F1 {dev['f1']:.2f}")
            if log_metrics is not None:
                # Named apart from the final "dev_f1" so MLflow's latest value is not mistaken for it.
                log_metrics({"train_loss": loss, "epoch_dev_f1": dev["f1"], "epoch_seconds": seconds}, epoch)
            if dev["f1"] > best_dev["f1"]:
                best_dev, best_epoch, best_state = dev, epoch, copy.deepcopy(model.state_dict())
    model.load_state_dict(best_state)
    dev, test = best_dev, evaluate(model, splits["test"], labels)       # decoding is deterministic
    return {
        "dev_f1": dev["f1"], "dev_precision": dev["precision"], "dev_recall": dev["recall"],
        "test_f1": test["f1"], "test_precision": test["precision"], "test_recall": test["recall"],
        "best_epoch": best_epoch, "epochs": cfg["epochs"], "dev_f1_per_epoch": history,
        "train_seconds": train_seconds, "train_sentences": len(train),
    }


def _train_epoch(model: NerTagger, optimizer: torch.optim.Optimizer, split: Split,
                 batches: list[list[int]], progress: Progress | None = None) -> float:
    """One pass over the batches; returns the mean training loss per batch."""
    model.train()
    total = 0.0
    for indices in batches:
        loss = model.loss(collate(split, indices))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP, foreach=True)
        optimizer.step()
        total += loss.item()
        if progress is not None:
            progress.advance()
    return total / max(1, len(batches))
