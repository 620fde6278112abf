"""The SRL tagger of the paper's SRL experiments (Peters et al. 2018 §4; He et al. 2017, as
allennlp-models' ``srl`` model): one instance per predicate,

    dropout([word vector ; predicate indicator]) (; ELMo) -> alternating highway LSTM (; ELMo)
    -> linear -> softmax over BIO tags,

trained with token-level cross-entropy, decoded with Viterbi under the BIO constraints.

* Predicate indicator: a learned embedding of "is this token the predicate" (0/1), He et al.'s
  binary feature (100-d in the paper profile).
* ELMo at the input (the paper's placement for SRL) joins the static vectors, as the paper does
  (§3.3: "concatenate the ELMo vector with x_k"); allennlp-models' ``srl_elmo`` config replaces
  them instead, which the representation-type ablation switches by spec, not here. At the output
  it joins the last LSTM layer's states before the tag projection (the placement of Table 3).
* Loss: per-sentence mean of the tokens' cross-entropy, averaged over the batch (allennlp's
  ``sequence_cross_entropy_with_logits``), plus the ScalarMix penalty.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ...elmo.injection import ElmoInjection
from ...experiments.specs import ElmoSpec
from ...nn.highway_lstm import AlternatingHighwayLSTM
from ...nn.viterbi import bio_constraints, constrained_viterbi
from ..word_embeddings import word_lookup


class SrlTagger(nn.Module):
    """He et al.'s deep highway BiLSTM tagger.

    Args:
        embeddings: (V, word_dim) initial word matrix (row 0 padding, row 1 UNK); fine-tuned.
        labels: the BIO tag strings (``O``, ``B-X``, ``I-X``).
        cfg: ``tasks.srl.model`` (predicate_dim, lstm_hidden, lstm_layers, recurrent_dropout,
            embedding_dropout).
        elmo: the run's resolved ELMo spec, or None (no ELMo).
        elmo_shape: (L+1, D) of the biLM layers; required with ``elmo``.
    """

    def __init__(self, embeddings: np.ndarray, labels: list[str], cfg: dict,
                 elmo: ElmoSpec | None = None, elmo_shape: tuple[int, int] | None = None):
        super().__init__()
        self.words = word_lookup(embeddings, False, elmo)
        self.predicate = nn.Embedding(2, cfg["predicate_dim"])
        self.elmo = ElmoInjection(elmo_shape[0], elmo, elmo_shape[1]) if elmo is not None else None
        extra_in = self.elmo.input_dim if self.elmo is not None else 0
        extra_out = self.elmo.output_dim if self.elmo is not None else 0
        self.dropout = nn.Dropout(cfg["embedding_dropout"])
        self.lstm = AlternatingHighwayLSTM(self.words.embedding_dim + cfg["predicate_dim"] + extra_in,
                                           cfg["lstm_hidden"], cfg["lstm_layers"], cfg["recurrent_dropout"])
        self.projection = nn.Linear(self.lstm.output_dim + extra_out, len(labels))
        self.labels = list(labels)
        start, transitions = bio_constraints(self.labels)
        self.register_buffer("allowed_start", start, persistent=False)
        self.register_buffer("allowed_transitions", transitions, persistent=False)

    def logits(self, batch: dict) -> torch.Tensor:
        """Batch (``words`` (B, T), ``predicate`` (B, T) 0/1, ``mask`` (B, T), ``lengths`` (B,),
        ``elmo`` (B, L+1, T, D) or None) -> (B, T, K) tag scores."""
        tokens = self.dropout(torch.cat([self.words(batch["words"]), self.predicate(batch["predicate"])], dim=-1))
        # The injection applies its own dropout (elmo.dropout) to each mix: not dropped twice.
        mixes = self.elmo(batch["elmo"], batch["mask"]) if self.elmo is not None else {}
        x = torch.cat([tokens, *([mixes["input"]] if "input" in mixes else [])], dim=-1)
        h = self.lstm(x, batch["lengths"])                                      # (B, T, H)
        return self.projection(torch.cat([h, *([mixes["output"]] if "output" in mixes else [])], dim=-1))

    def loss(self, batch: dict) -> torch.Tensor:
        """Mean over sentences of the mean token cross-entropy (+ the ScalarMix L2 penalty)."""
        logits, mask = self.logits(batch), batch["mask"]
        token_nll = nn.functional.cross_entropy(logits.transpose(1, 2), batch["tags"], reduction="none")  # (B, T)
        nll = ((token_nll * mask).sum(1) / mask.sum(1)).mean()
        return nll + self.elmo.penalty() if self.elmo is not None else nll

    @torch.no_grad()
    def predict(self, batch: dict) -> list[list[str]]:
        """BIO tags per proposition: Viterbi over the log-probabilities under the BIO constraints."""
        log_probs = torch.log_softmax(self.logits(batch), dim=-1)
        paths = constrained_viterbi(log_probs, batch["mask"], self.allowed_start, self.allowed_transitions)
        return [[self.labels[k] for k in path] for path in paths]
