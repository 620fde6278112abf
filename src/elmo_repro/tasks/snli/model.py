"""The ESIM of the paper's SNLI experiments (Peters et al. 2018 §4; Chen et al. 2017), following
allennlp's ``ESIM`` and its ``esim_elmo.jsonnet`` initialisation:

    variational dropout(words) (; ELMo) -> shared biLSTM encoder (; ELMo) -> dot-product soft
    alignment both ways -> enhancement [a; ã; a - ã; a * ã] -> ReLU projection -> variational
    dropout -> shared composition biLSTM -> mean and max pooling -> dropout -> ReLU feed-forward
    -> dropout -> class logits.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ...elmo.injection import ElmoInjection
from ...experiments.specs import ElmoSpec
from ...nn.bilstm import BiLSTM
from ...nn.masked import masked_max, masked_mean, masked_softmax, weighted_sum
from ...nn.variational_dropout import InputVariationalDropout
from ..classification import ClassifierHead
from ..word_embeddings import word_lookup

SIDES = ("premise", "hypothesis")


class Esim(ClassifierHead, nn.Module):
    """ESIM sentence-pair classifier.

    One :class:`ElmoInjection` serves both sentences (allennlp shares one embedder), and the two
    biLSTMs are shared by premise and hypothesis.

    Args:
        embeddings: (V, word_dim) word matrix (row 0 padding, row 1 UNK).
        n_classes: C.
        cfg: ``tasks.snli.model``: freeze_embeddings, dropout, encoder_hidden, projection_dim,
            inference_hidden, output_hidden.
        elmo: the run's resolved ELMo spec, or None (no ELMo).
        elmo_shape: (L+1, D) of the biLM layers; required with ``elmo``.
    """

    def __init__(self, embeddings: np.ndarray, n_classes: int, cfg: dict,
                 elmo: ElmoSpec | None = None, elmo_shape: tuple[int, int] | None = None):
        super().__init__()
        self.words = word_lookup(embeddings, cfg["freeze_embeddings"], elmo)
        self.elmo = ElmoInjection(elmo_shape[0], elmo, elmo_shape[1]) if elmo is not None else None
        extra_in = self.elmo.input_dim if self.elmo is not None else 0
        extra_out = self.elmo.output_dim if self.elmo is not None else 0
        self.rnn_input_dropout = InputVariationalDropout(cfg["dropout"])
        self.encoder = BiLSTM(self.words.embedding_dim + extra_in, cfg["encoder_hidden"], 1, 0.0)
        encoded_dim = self.encoder.output_dim + extra_out
        self.projection = nn.Sequential(nn.Linear(4 * encoded_dim, cfg["projection_dim"]), nn.ReLU())
        self.inference = BiLSTM(cfg["projection_dim"], cfg["inference_hidden"], 1, 0.0)
        self.dropout = nn.Dropout(cfg["dropout"])
        self.output_hidden = nn.Sequential(nn.Linear(4 * self.inference.output_dim, cfg["output_hidden"]),
                                           nn.ReLU(), nn.Dropout(cfg["dropout"]))
        self.output_logit = nn.Linear(cfg["output_hidden"], n_classes)
        self._initialise()

    def _initialise(self) -> None:
        """esim_elmo.jsonnet's initializer: xavier-uniform Linear and LSTM input weights, zero
        biases, orthogonal recurrent weights, forget-gate hidden bias 1 (allennlp's
        ``lstm_hidden_bias``). The word matrix and the ELMo mixes keep their values."""
        for module in (self.projection, self.output_hidden, self.output_logit):
            for layer in module.modules():
                if isinstance(layer, nn.Linear):
                    nn.init.xavier_uniform_(layer.weight)
                    nn.init.zeros_(layer.bias)
        for bilstm in (self.encoder, self.inference):
            for lstm in bilstm.modules():
                if not isinstance(lstm, nn.LSTM):
                    continue
                for name, p in lstm.named_parameters():
                    if name.startswith("weight_ih"):
                        nn.init.xavier_uniform_(p)
                    elif name.startswith("weight_hh"):
                        nn.init.orthogonal_(p)
                    else:
                        nn.init.zeros_(p)
                        if name.startswith("bias_hh"):
                            # torch's gate order is i, f, g, o: the second quarter is the forget gate.
                            hidden = p.numel() // 4
                            with torch.no_grad():
                                p[hidden:2 * hidden].fill_(1.0)

    def logits(self, batch: dict) -> torch.Tensor:
        """Batch from the SNLI collate (``premise_*``, ``hypothesis_*``, "elmo") -> (B, C) logits."""
        masks = {s: batch[f"{s}_mask"] for s in SIDES}
        lengths = {s: batch[f"{s}_lengths"] for s in SIDES}
        encoded = {}
        for s in SIDES:
            mixes = self.elmo(batch["elmo"][s], masks[s]) if self.elmo is not None else {}
            # The injection drops out its own mixes (elmo.dropout): the variational dropout, which
            # allennlp applies to [GloVe; ELMo] with ELMo's dropout 0, covers the word vectors only.
            x = torch.cat([self.rnn_input_dropout(self.words(batch[f"{s}_words"])),
                           *([mixes["input"]] if "input" in mixes else [])], dim=-1)
            h = self.encoder(x, lengths[s])                                    # (B, T_s, 2H)
            encoded[s] = torch.cat([h, *([mixes["output"]] if "output" in mixes else [])], dim=-1)
        p, h = encoded["premise"], encoded["hypothesis"]
        similarity = p @ h.transpose(1, 2)                                     # (B, Tp, Th)
        attended = {  # ã: each side's soft alignment over the other side's real tokens
            "premise": weighted_sum(h, masked_softmax(similarity, masks["hypothesis"][:, None, :])),
            "hypothesis": weighted_sum(p, masked_softmax(similarity.transpose(1, 2),
                                                         masks["premise"][:, None, :])),
        }
        pooled = []
        for s in SIDES:
            a, a_tilde = encoded[s], attended[s]
            enhanced = torch.cat([a, a_tilde, a - a_tilde, a * a_tilde], dim=-1)
            v = self.inference(self.rnn_input_dropout(self.projection(enhanced)), lengths[s])
            pooled += [masked_mean(v, masks[s]), masked_max(v, masks[s])]
        return self.output_logit(self.output_hidden(self.dropout(torch.cat(pooled, dim=-1))))
