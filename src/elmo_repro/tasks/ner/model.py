"""The BiLSTM-CRF tagger of the paper's NER experiments (Peters et al. 2018 §4; Lample et al. 2016,
Peters et al. 2017): [word vector ; char CNN] (; ELMo) -> biLSTM (; ELMo) -> linear -> CRF.

The paper's tagger has two biLSTM layers; ``model.lstm_layers`` sets it (the tiny profile uses one
to fit the 2-core budget).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ...elmo.injection import ElmoInjection
from ...experiments.specs import ElmoSpec
from ...nn.bilstm import BiLSTM
from ...nn.char_cnn import CharCNN
from ...nn.crf import ConditionalRandomField, allowed_transitions
from ..word_embeddings import word_lookup
from .reader import bioul_to_iob2



class NerTagger(nn.Module):
    """dropout([word vector ; char CNN]) (; ELMo) -> biLSTM -> dropout (; ELMo) -> linear -> CRF.

    Args:
        embeddings: (V, word_dim) initial word matrix (row 0 padding, row 1 UNK); fine-tuned.
        n_chars: character vocabulary size (with PAD and UNK).
        labels: BIOUL label strings; the CRF forbids transitions invalid in BIOUL.
        cfg: ``tasks.ner.model`` (char_embedding_dim, char_filters, char_kernel, lstm_hidden,
            lstm_layers, dropout, crf_start_end).
        elmo: the run's resolved ELMo spec, or None (no ELMo).
        elmo_shape: (L+1, D) of the biLM layers; required with ``elmo``.
    """

    def __init__(self, embeddings: np.ndarray, n_chars: int, labels: list[str], cfg: dict,
                 elmo: ElmoSpec | None = None, elmo_shape: tuple[int, int] | None = None):
        super().__init__()
        self.words = word_lookup(embeddings, False, elmo)
        self.chars = CharCNN(n_chars, cfg["char_embedding_dim"], cfg["char_filters"], cfg["char_kernel"])
        self.elmo = ElmoInjection(elmo_shape[0], elmo, elmo_shape[1]) if elmo is not None else None
        extra_in = self.elmo.input_dim if self.elmo is not None else 0
        extra_out = self.elmo.output_dim if self.elmo is not None else 0
        self.dropout = nn.Dropout(cfg["dropout"])
        self.lstm = BiLSTM(self.words.embedding_dim + self.chars.output_dim + extra_in, cfg["lstm_hidden"],
                           cfg["lstm_layers"], cfg["dropout"])
        self.projection = nn.Linear(self.lstm.output_dim + extra_out, len(labels))
        self.crf = ConditionalRandomField(len(labels), allowed_transitions(labels),
                                          include_start_end=cfg["crf_start_end"])
        self.labels = list(labels)

    def emissions(self, batch: dict) -> torch.Tensor:
        """Batch from :meth:`NerTask.collate` -> (B, T, K) tag scores."""
        tokens = self.dropout(torch.cat([self.words(batch["words"]), self.chars(batch["chars"])], dim=-1))
        # The injection applies its own dropout (elmo.dropout) to each mix: not dropped twice.
        mixes = self.elmo(batch["elmo"], batch["mask"]) if self.elmo is not None else {}
        x = torch.cat([tokens, *([mixes["input"]] if "input" in mixes else [])], dim=-1)
        h = self.dropout(self.lstm(x, batch["lengths"]))                        # (B, T, 2H)
        return self.projection(torch.cat([h, *([mixes["output"]] if "output" in mixes else [])], dim=-1))

    def loss(self, batch: dict) -> torch.Tensor:
        """Mean CRF negative log-likelihood per sentence + the ScalarMix L2 penalty."""
        nll = -self.crf.log_likelihood(self.emissions(batch), batch["tags"], batch["mask"]).mean()
        return nll + self.elmo.penalty() if self.elmo is not None else nll

    @torch.no_grad()
    def predict(self, batch: dict) -> list[list[str]]:
        """Constrained Viterbi tags per sentence, converted from BIOUL to IOB2 (the scorer's scheme)."""
        return [bioul_to_iob2([self.labels[k] for k in path])
                for path in self.crf.viterbi_tags(self.emissions(batch), batch["mask"])]
