"""The SQuAD reader of the ELMo paper: Clark and Gardner (2018)'s BiDAF + self-attention model
(allenai/document-qa, its ELMo configuration), written after its model code:

    [word vectors (fixed); char CNN] (; ELMo) -> variational dropout -> shared BiGRU over
    question and context -> variational dropout (; ELMo: document-qa's ``append_before_atten``) -> bidirectional
    attention -> ReLU linear -> residual [variational dropout -> BiGRU -> variational dropout ->
    self-attention (no word attends to itself) -> ReLU linear] -> variational dropout ->
    start BiGRU -> linear start scores; end BiGRU over [x; start states] -> linear end scores.

Loss: cross-entropy of the gold start plus that of the gold end (+ the ScalarMix penalty).
Prediction: the best span of at most ``max_span_tokens`` (:func:`.decode.best_spans`).

The context's embedding and shared GRU do not depend on the question, so a batch runs them once
per distinct paragraph (the speed-up the issue allows; ``context_index`` repeats the states for each
question). Exact in evaluation; in training the questions of a paragraph in one batch share the
input dropout mask and the ELMo mixes' dropout of that paragraph (document-qa draws them per
question); the dropout after the shared GRU is still drawn per question.

Departures, for the tiny profile's CPU budget and this project's shared layers: the char CNN is
:class:`~elmo_repro.nn.char_cnn.CharCNN` (same-padded convolution, no dropout on the character
embeddings); sizes come from the profile (document-qa: GRU 90, char 20/100 width 5, dropout 0.2).
Also: PyTorch's default initialisation of the GRUs and linear layers (document-qa: truncated
normal 0.05 and Glorot); the UNK word row random and, with ``freeze_embeddings``, fixed
(document-qa: zeros); the ELMo layer weights regularised with the run's ``l2_coef`` (the shared
spec's 0.001; document-qa's SQuAD script leaves them unregularised).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ...elmo.injection import ElmoInjection
from ...experiments.specs import ElmoSpec
from ...nn.attention import BiAttention, SelfAttention
from ...nn.bigru import BiGRU
from ...nn.char_cnn import CharCNN
from ...nn.rows import take_rows
from ...nn.variational_dropout import InputVariationalDropout
from ..word_embeddings import word_lookup
from .decode import best_spans

SIDES = ("question", "context")


class SquadReader(nn.Module):
    """BiDAF + self-attention span predictor.

    Args:
        embeddings: (V, word_dim) word matrix (row 0 padding, row 1 UNK); kept fixed with
            ``freeze_embeddings`` (document-qa never trains its GloVe vectors).
        n_chars: size of the character vocabulary (PAD and UNK included).
        cfg: ``tasks.squad.model``: freeze_embeddings, char_embedding_dim, char_filters,
            char_kernel, hidden (GRU units per direction), dropout, max_span_tokens.
        elmo: the run's resolved ELMo spec, or None; one injection serves question and context
            (document-qa shares one ELMo and its mixes between them).
        elmo_shape: (L+1, D) of the biLM layers; required with ``elmo``.
    """

    def __init__(self, embeddings: np.ndarray, n_chars: int, cfg: dict,
                 elmo: ElmoSpec | None = None, elmo_shape: tuple[int, int] | None = None):
        super().__init__()
        self.max_span_tokens = cfg["max_span_tokens"]
        self.words = word_lookup(embeddings, cfg["freeze_embeddings"], elmo)
        self.chars = CharCNN(n_chars, cfg["char_embedding_dim"], cfg["char_filters"], cfg["char_kernel"])
        self.elmo = ElmoInjection(elmo_shape[0], elmo, elmo_shape[1]) if elmo is not None else None
        extra_in = self.elmo.input_dim if self.elmo is not None else 0
        extra_out = self.elmo.output_dim if self.elmo is not None else 0
        hidden = cfg["hidden"]
        self.dropout = InputVariationalDropout(cfg["dropout"])
        self.encoder = BiGRU(self.words.embedding_dim + self.chars.output_dim + extra_in, hidden)
        encoded = 2 * hidden + extra_out
        self.attention = BiAttention(encoded)
        self.attention_projection = nn.Linear(self.attention.output_dim, 2 * hidden)
        self.self_encoder = BiGRU(2 * hidden, hidden)
        self.self_attention = SelfAttention(2 * hidden)
        self.self_projection = nn.Linear(self.self_attention.output_dim, 2 * hidden)
        self.start_encoder = BiGRU(2 * hidden, hidden)
        self.end_encoder = BiGRU(4 * hidden, hidden)
        self.start_scorer = nn.Linear(2 * hidden, 1)
        self.end_scorer = nn.Linear(2 * hidden, 1)

    def _encode(self, batch: dict, side: str, rows: torch.Tensor | None = None) -> torch.Tensor:
        """Embeddings -> dropout -> shared BiGRU (-> the rows ``rows`` of it) -> dropout (+ ELMo at
        both points): (N, T_side, 2H [+ D]), N the side's rows in the batch or ``len(rows)``."""
        mixes = self.elmo(batch["elmo"][side], batch[f"{side}_mask"]) if self.elmo is not None else {}
        x = torch.cat([self.words(batch[f"{side}_words"]), self.chars(batch[f"{side}_chars"]),
                       *([mixes["input"]] if "input" in mixes else [])], dim=-1)
        h = self.encoder(self.dropout(x), batch[f"{side}_lengths"])
        if rows is not None:
            h, mixes = take_rows(h, rows), {point: take_rows(mix, rows) for point, mix in mixes.items()}
        return torch.cat([self.dropout(h), *([mixes["output"]] if "output" in mixes else [])], dim=-1)

    def scores(self, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """Batch from the SQuAD collate -> (start, end) scores, each (B, Tc); padding arbitrary.

        Each distinct paragraph of the batch is embedded and run through the shared GRU once (it
        does not depend on the question), then repeated for its questions (``context_index``)."""
        rows = batch["context_index"]
        question, context = self._encode(batch, "question"), self._encode(batch, "context", rows)
        mask, lengths = batch["context_mask"][rows], batch["context_lengths"][rows]
        x = torch.relu(self.attention_projection(
            self.attention(context, question, mask, batch["question_mask"])))
        inner = self.dropout(self.self_encoder(self.dropout(x), lengths))
        x = self.dropout(x + torch.relu(self.self_projection(self.self_attention(inner, mask))))
        m1 = self.start_encoder(x, lengths)
        m2 = self.end_encoder(torch.cat([x, m1], dim=-1), lengths)
        return self.start_scorer(m1).squeeze(-1), self.end_scorer(m2).squeeze(-1)

    def loss(self, batch: dict) -> torch.Tensor:
        """Mean over questions of −log p(gold start) − log p(gold end) (+ the ScalarMix penalty);
        ``batch["spans"]`` is (B, 2) inclusive token indices."""
        start, end = self.scores(batch)
        mask, gold = batch["context_mask"][batch["context_index"]], batch["spans"]
        nll = 0.0
        for scores, target in ((start, gold[:, 0]), (end, gold[:, 1])):
            log_p = scores.masked_fill(~mask, torch.finfo(scores.dtype).min).log_softmax(dim=-1)
            nll = nll - log_p.gather(1, target[:, None]).mean()
        return nll + self.elmo.penalty() if self.elmo is not None else nll

    @torch.no_grad()
    def predict(self, batch: dict) -> list[list[int]]:
        """The best span [first, last] (inclusive token indices) per question."""
        start, end = self.scores(batch)
        mask = batch["context_mask"][batch["context_index"]]
        return [list(span) for span in best_spans(start, end, mask, self.max_span_tokens)]
