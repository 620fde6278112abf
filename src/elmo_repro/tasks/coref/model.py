"""End-to-end coreference resolution (Lee et al. 2017), the model of the paper's coreference row
(Peters et al. 2018 §4), after kentonl/e2e-coref's ``coref_model.py`` (its EMNLP 2017 version).

One document at a time:

1. **Token representations.** x_t = dropout_lex([word vector ; char CNN]) per sentence (the
   "head embeddings"); the context input joins ELMo to them (the paper's placement for
   coreference is the input); a BiLSTM per sentence gives x*_t, then dropout.
2. **Spans.** Every span of up to ``max_width`` tokens inside one sentence:
   g_i = [x*_start ; x*_end ; x̂_i ; φ(width)], with the head attention x̂_i = Σ_t a_{i,t} x_t,
   a_{i,t} = softmax over the span's tokens of w · x*_t. The attention reads the head embeddings
   without ELMo, as e2e-coref's ELMo configuration does (ELMo feeds the LSTM only).
3. **Mention scores** s_m(i) = FFNN_m(g_i); **pruning** keeps the ⌊λ·T⌋ best spans (λ =
   ``mention_ratio``, 0.4) that do not cross a better kept span (nesting is allowed), e2e-coref's
   ``extract_mentions``; kept spans are ordered by (start, end).
4. **Antecedents**: each kept span i scores its K nearest preceding kept spans (K =
   ``max_antecedents``, 250 in the original) with s(i, j) = s_m(i) + s_m(j) + FFNN_a([g_i ; g_j ;
   g_i ∘ g_j ; φ(distance)]), distance = i − j in kept-span order bucketed as e2e-coref does
   (0, 1, 2, 3, 4, 5-7, 8-15, 16-31, 32-63, 64+); the dummy antecedent ε scores 0.
5. **Loss**: −log Σ_{ŷ ∈ GOLD(i)} P(ŷ | i) summed over kept spans, GOLD(i) the candidates in i's
   gold cluster, or {ε} when there are none (the marginal log-likelihood of Lee et al. Eq. 6).
6. **Decoding**: each span links to its best antecedent (or none); linked spans form clusters.

Memory: the pair tensor is (M, K, 3·|g| + 20) for M = λ·T kept spans: on a 2,000-token LitBank
document with the paper's sizes (|g| ≈ 1,220), M = 800 and K = 250 give 800 × 250 × 3,680 floats
≈ 2.9 GB in float32, which K (a param) bounds.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

from ...elmo.injection import ElmoInjection
from ...experiments.specs import ElmoSpec
from ...nn.bilstm import BiLSTM
from ...nn.char_cnn import CharCNN
from ...nn.rows import take_rows
from ..word_embeddings import word_lookup

DISTANCE_BINS = 10


def enumerate_spans(sentence_lengths: Sequence[int], max_width: int,
                    device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Every span of up to ``max_width`` tokens within one sentence, as document token indices.

    Returns:
        ``starts``, ``ends`` (N,) long, inclusive, ordered by (start, end).
    """
    starts, ends = [], []
    offset = 0
    for length in sentence_lengths:
        for s in range(length):
            for e in range(s, min(s + max_width, length)):
                starts.append(offset + s)
                ends.append(offset + e)
        offset += length
    return torch.tensor(starts, dtype=torch.long, device=device), torch.tensor(ends, dtype=torch.long, device=device)


def prune_spans(scores: torch.Tensor, starts: torch.Tensor, ends: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the ``k`` best spans (or fewer) of which no two cross, ordered by (start, end).

    Spans are taken best first; one is skipped when it crosses a span already taken (s1 < s2 <=
    e1 < e2 or the mirror case); nested spans do not cross. As e2e-coref's ``extract_mentions``
    kernel: per token, the latest end of a taken span starting there and the earliest start of
    one ending there, so a candidate is checked in O(width), not against every taken span.
    """
    order = torch.argsort(scores, descending=True, stable=True).tolist()
    s_list, e_list = starts.tolist(), ends.tolist()
    n_tokens = (max(e_list) + 1) if e_list else 0
    max_end_from = [-1] * n_tokens           # token -> the latest end of a taken span starting there
    min_start_to = [n_tokens] * n_tokens     # token -> the earliest start of a taken span ending there
    taken: list[int] = []
    for i in order:
        if len(taken) >= k:
            break
        s, e = s_list[i], e_list[i]
        # a taken (s2, e2) crosses (s, e) when s < s2 <= e < e2, or s2 < s <= e2 < e
        if any(max_end_from[t] > e for t in range(s + 1, e + 1)) or \
                any(min_start_to[t] < s for t in range(s, e)):
            continue
        taken.append(i)
        max_end_from[s] = max(max_end_from[s], e)
        min_start_to[e] = min(min_start_to[e], s)
    taken.sort(key=lambda i: (s_list[i], e_list[i]))
    return torch.tensor(taken, dtype=torch.long, device=scores.device)


def distance_bins(distance: torch.Tensor) -> torch.Tensor:
    """Bucket of a positive distance: 1-4 exactly (0 for 0), then 5-7, 8-15, 16-31, 32-63, 64+
    (e2e-coref's ``distance_bins``): (…) long -> (…) long in [0, 9]."""
    log_bin = torch.floor(torch.log2(distance.clamp(min=1).float())).long() + 3
    return torch.where(distance <= 4, distance, log_bin).clamp(0, DISTANCE_BINS - 1)


def antecedent_candidates(m: int, k: int, device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """For each of ``m`` kept spans, its ``min(k, m - 1)`` nearest preceding spans (nearest first).

    Returns:
        ``antecedents`` (M, K') long (clamped to 0 where invalid) and ``valid`` (M, K') bool.
    """
    width = max(1, min(k, m - 1))
    offsets = torch.arange(1, width + 1, device=device)                         # (K',)
    antecedents = torch.arange(m, device=device)[:, None] - offsets[None, :]    # (M, K')
    valid = antecedents >= 0
    return antecedents.clamp(min=0), valid


def clusters_in_window(clusters, offset: int, size: int) -> list[list[tuple[int, int]]]:
    """The mentions of ``clusters`` inside document tokens ``offset .. offset + size - 1``, shifted
    to the window's indices; clusters left empty are dropped."""
    shifted = [[(s - offset, e - offset) for s, e in cluster if offset <= s and e < offset + size]
               for cluster in clusters]
    return [c for c in shifted if c]


def sentence_window(doc: dict, first: int, count: int) -> dict:
    """Sentences ``first .. first + count - 1`` of a collated document, its gold mentions inside
    them shifted to the window's token indices (mentions outside dropped, clusters emptied by it
    too)."""
    lengths = doc["lengths"]
    offset, size = int(lengths[:first].sum()), int(lengths[first:first + count].sum())
    window = {key: doc[key][first:first + count] for key in ("words", "chars", "lengths")}
    window["elmo"] = None if doc.get("elmo") is None else doc["elmo"][first:first + count]
    window["clusters"] = clusters_in_window(doc["clusters"], offset, size)
    # the padded width shrinks to the window's longest sentence
    width = int(window["lengths"].max())
    window["words"], window["chars"] = window["words"][:, :width], window["chars"][:, :width]
    if window["elmo"] is not None:
        window["elmo"] = window["elmo"][:, :, :width]
    return window


class FFNN(nn.Sequential):
    """e2e-coref's ``util.ffnn``: ``depth`` hidden ReLU layers of ``size`` with dropout, then a
    linear output of ``out`` units. (…, in) -> (…, out)."""

    def __init__(self, input_dim: int, depth: int, size: int, out: int, dropout: float):
        layers: list[nn.Module] = []
        for i in range(depth):
            layers += [nn.Linear(input_dim if i == 0 else size, size), nn.ReLU(), nn.Dropout(dropout)]
        layers.append(nn.Linear(size if depth else input_dim, out))
        super().__init__(*layers)


class CorefModel(nn.Module):
    """Lee et al.'s span-ranking model (module docstring).

    Args:
        embeddings: (V, word_dim) word matrix (row 0 padding, row 1 UNK); fixed, as e2e-coref's
            GloVe and Turian vectors are.
        n_chars: character vocabulary size (with PAD and UNK).
        cfg: ``tasks.coref.model`` (char_embedding_dim, char_filters, char_kernels (list),
            lstm_hidden, lstm_layers, feature_dim, ffnn_depth, ffnn_size, dropout, lexical_dropout,
            max_width, mention_ratio, max_antecedents, max_training_sentences).
        elmo: the run's resolved ELMo spec, or None; elmo_shape: (L+1, D) with ``elmo``.
    """

    def __init__(self, embeddings: np.ndarray, n_chars: int, cfg: dict,
                 elmo: ElmoSpec | None = None, elmo_shape: tuple[int, int] | None = None):
        super().__init__()
        self.cfg = dict(cfg)
        self.words = word_lookup(embeddings, True, elmo)
        self.chars = nn.ModuleList(CharCNN(n_chars, cfg["char_embedding_dim"], cfg["char_filters"], k)
                                   for k in cfg["char_kernels"])
        head_dim = self.words.embedding_dim + sum(c.output_dim for c in self.chars)
        self.elmo = ElmoInjection(elmo_shape[0], elmo, elmo_shape[1]) if elmo is not None else None
        if self.elmo is not None and self.elmo.output_dim:
            raise ValueError("coreference takes ELMo at the input only (the paper's placement); got an output mix")
        self.lexical_dropout = nn.Dropout(cfg["lexical_dropout"])
        self.dropout = nn.Dropout(cfg["dropout"])
        extra = self.elmo.input_dim if self.elmo is not None else 0
        self.lstm = BiLSTM(head_dim + extra, cfg["lstm_hidden"], cfg["lstm_layers"], cfg["dropout"])
        context = self.lstm.output_dim
        self.head_scorer = nn.Linear(context, 1)
        self.width_embedding = nn.Embedding(cfg["max_width"], cfg["feature_dim"])
        span_dim = 2 * context + head_dim + cfg["feature_dim"]
        self.mention_scorer = FFNN(span_dim, cfg["ffnn_depth"], cfg["ffnn_size"], 1, cfg["dropout"])
        self.distance_embedding = nn.Embedding(DISTANCE_BINS, cfg["feature_dim"])
        self.pair_scorer = FFNN(3 * span_dim + cfg["feature_dim"], cfg["ffnn_depth"], cfg["ffnn_size"], 1,
                                cfg["dropout"])

    def _tokens(self, doc: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """Head embeddings x_t (N, head_dim) and contextual x*_t (N, 2H) of a document's N tokens."""
        words, lengths = doc["words"], doc["lengths"]                          # (S, T), (S,)
        mask = torch.arange(words.size(1), device=words.device)[None, :] < lengths[:, None]   # (S, T)
        head = self.lexical_dropout(torch.cat([self.words(words), *(c(doc["chars"]) for c in self.chars)], dim=-1))
        x = head
        if self.elmo is not None:
            x = torch.cat([head, self.elmo(doc["elmo"], mask)["input"]], dim=-1)
        context = self.dropout(self.lstm(x, lengths))                          # (S, T, 2H)
        return head[mask], context[mask]                                        # flattened, sentence order

    def _spans(self, head: torch.Tensor, context: torch.Tensor, starts: torch.Tensor,
               ends: torch.Tensor) -> torch.Tensor:
        """g_i (N_spans, span_dim) of the spans [starts, ends]."""
        max_width = self.cfg["max_width"]
        widths = ends - starts                                                  # width - 1
        offsets = torch.arange(max_width, device=head.device)[None, :]          # (1, W)
        index = (starts[:, None] + offsets).clamp(max=head.size(0) - 1)        # (N, W)
        inside = offsets <= widths[:, None]                                     # (N, W)
        logits = take_rows(self.head_scorer(context).squeeze(-1), index).masked_fill(~inside, float("-inf"))
        attention = torch.softmax(logits, dim=1)                                # (N, W)
        head_vector = (attention.unsqueeze(-1) * take_rows(head, index)).sum(1)  # (N, head_dim)
        width = self.dropout(self.width_embedding(widths))
        return torch.cat([take_rows(context, starts), take_rows(context, ends), head_vector, width], dim=-1)

    def _score(self, doc: dict) -> dict:
        """The kept spans, their candidate antecedents and the (M, 1 + K') antecedent scores."""
        head, context = self._tokens(doc)
        starts, ends = enumerate_spans(doc["lengths"].tolist(), self.cfg["max_width"], head.device)
        g = self._spans(head, context, starts, ends)
        mention = self.mention_scorer(g).squeeze(-1)                           # (N_spans,)
        k = int(np.floor(head.size(0) * self.cfg["mention_ratio"]))
        kept = prune_spans(mention.detach(), starts, ends, max(k, 1))
        g, mention, starts, ends = g[kept], mention[kept], starts[kept], ends[kept]
        antecedents, valid = antecedent_candidates(len(kept), self.cfg["max_antecedents"], g.device)
        target = g.unsqueeze(1).expand(-1, antecedents.size(1), -1)             # (M, K', G)
        other = take_rows(g, antecedents)                                       # (M, K', G)
        distance = self.dropout(self.distance_embedding(distance_bins(
            torch.arange(1, antecedents.size(1) + 1, device=g.device))))
        pair = torch.cat([target, other, target * other, distance.unsqueeze(0).expand(len(kept), -1, -1)], dim=-1)
        scores = self.pair_scorer(pair).squeeze(-1) + mention[:, None] + take_rows(mention, antecedents)  # (M, K')
        scores = scores.masked_fill(~valid, float("-inf"))
        scores = torch.cat([scores.new_zeros(len(kept), 1), scores], dim=1)     # ε first, score 0
        return {"starts": starts, "ends": ends, "antecedents": antecedents, "valid": valid, "scores": scores}

    def document_loss(self, doc: dict) -> torch.Tensor:
        """Marginal log-likelihood loss of one document (``doc["clusters"]``: gold spans per cluster)."""
        out = self._score(doc)
        cluster_of = {span: c + 1 for c, spans in enumerate(doc["clusters"]) for span in map(tuple, spans)}
        ids = torch.tensor([cluster_of.get((s, e), 0) for s, e in zip(out["starts"].tolist(), out["ends"].tolist())],
                           device=out["scores"].device)
        same = (ids[out["antecedents"]] == ids[:, None]) & (ids[:, None] > 0) & out["valid"]   # (M, K')
        gold = torch.cat([~same.any(dim=1, keepdim=True), same], dim=1)         # (M, 1 + K')
        scores = out["scores"]
        return (torch.logsumexp(scores, 1) - torch.logsumexp(scores.masked_fill(~gold, float("-inf")), 1)).sum()

    def loss(self, batch: dict) -> torch.Tensor:
        """Sum of the documents' losses (+ the ScalarMix penalty); in training, each document cut
        to a random window of ``max_training_sentences`` sentences first (e2e-coref's
        ``truncate_example``; the window drawn from torch's seeded generator)."""
        limit = self.cfg["max_training_sentences"]
        # the window from the CPU generator, wherever the model is: the same seed, the same windows
        documents = [sentence_window(doc, int(torch.randint(0, len(doc["lengths"]) - limit + 1, (), device="cpu")), limit)
                     if self.training and len(doc["lengths"]) > limit else doc for doc in batch["documents"]]
        total = sum(self.document_loss(doc) for doc in documents)
        return total + self.elmo.penalty() if self.elmo is not None else total

    @torch.no_grad()
    def predict(self, batch: dict) -> list[list[list[tuple[int, int]]]]:
        """Clusters of each document: every kept span linked to its best antecedent (none when ε
        wins); clusters of two or more spans, spans as inclusive token pairs."""
        results = []
        for doc in batch["documents"]:
            out = self._score(doc)
            best = out["scores"].argmax(dim=1).tolist()
            spans = list(zip(out["starts"].tolist(), out["ends"].tolist()))
            cluster_of: dict[int, int] = {}
            clusters: list[list[tuple[int, int]]] = []
            for i, choice in enumerate(best):
                if choice == 0:
                    continue
                j = int(out["antecedents"][i, choice - 1])
                if j not in cluster_of:
                    cluster_of[j] = len(clusters)
                    clusters.append([spans[j]])
                cluster_of[i] = cluster_of[j]
                clusters[cluster_of[j]].append(spans[i])
            results.append(clusters)
        return results
