"""The biattentive classification network (BCN) of the paper's SST-5 experiments (Peters et al.
2018 §4; McCann et al. 2017 §5), following allennlp's ``BiattentiveClassificationNetwork``:

    GloVe (; ELMo) -> ReLU feed-forward -> biLSTM encoder -> biattention of the sentence with
    itself -> integrator biLSTM on [x; x - c; x * c] (; ELMo) -> max, min, mean and self-attentive
    pooling -> maxout network -> class logits.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ...elmo.injection import ElmoInjection
from ...experiments.specs import ElmoSpec
from ...nn.bilstm import BiLSTM
from ...nn.masked import masked_max, masked_mean, masked_min, masked_softmax, weighted_sum
from ...nn.maxout import Maxout
from ..classification import ClassifierHead
from ..word_embeddings import word_lookup



class BiattentiveClassifier(ClassifierHead, nn.Module):
    """BCN sentence classifier.

    Args:
        embeddings: (V, word_dim) word matrix (row 0 padding, row 1 UNK).
        n_classes: C.
        cfg: ``tasks.sst5.model``: freeze_embeddings, embedding_dropout, pre_encode_dim,
            pre_encode_dropout, encoder_hidden, integrator_hidden, integrator_dropout, output_dims
            (hidden maxout widths; a final layer of width C is appended), output_pool_size,
            output_dropout (one per maxout layer, the final one included).
        elmo: the run's resolved ELMo spec, or None (no ELMo).
        elmo_shape: (L+1, D) of the biLM layers; required with ``elmo``.

    Raises:
        ValueError: ``output_dropout`` does not have ``len(output_dims) + 1`` entries.
    """

    def __init__(self, embeddings: np.ndarray, n_classes: int, cfg: dict,
                 elmo: ElmoSpec | None = None, elmo_shape: tuple[int, int] | None = None):
        super().__init__()
        output_dims = [*cfg["output_dims"], n_classes]
        if len(cfg["output_dropout"]) != len(output_dims):
            raise ValueError(f"output_dropout: {len(output_dims)} values expected (output_dims + the "
                             f"final layer), got {len(cfg['output_dropout'])}")
        self.words = word_lookup(embeddings, cfg["freeze_embeddings"], elmo)
        self.elmo = ElmoInjection(elmo_shape[0], elmo, elmo_shape[1]) if elmo is not None else None
        extra_in = self.elmo.input_dim if self.elmo is not None else 0
        extra_out = self.elmo.output_dim if self.elmo is not None else 0
        self.embedding_dropout = nn.Dropout(cfg["embedding_dropout"])
        self.pre_encode = nn.Sequential(nn.Linear(self.words.embedding_dim + extra_in, cfg["pre_encode_dim"]),
                                        nn.ReLU(), nn.Dropout(cfg["pre_encode_dropout"]))
        self.encoder = BiLSTM(cfg["pre_encode_dim"], cfg["encoder_hidden"], 1, 0.0)
        self.integrator = BiLSTM(3 * self.encoder.output_dim, cfg["integrator_hidden"], 1, 0.0)
        pooled_dim = self.integrator.output_dim + extra_out
        self.self_attentive_pooling = nn.Linear(pooled_dim, 1)
        self.integrator_dropout = nn.Dropout(cfg["integrator_dropout"])
        self.output = Maxout(4 * pooled_dim, output_dims, cfg["output_pool_size"], cfg["output_dropout"])

    def logits(self, batch: dict) -> torch.Tensor:
        """Batch from the SST-5 collate ("words", "mask", "lengths", "elmo") -> (B, C) logits."""
        mask, lengths = batch["mask"], batch["lengths"]
        # ELMo's own dropout (in the injection) stands in for allennlp's dropout of the concatenation.
        mixes = self.elmo(batch["elmo"]["tokens"], mask) if self.elmo is not None else {}
        x = torch.cat([self.embedding_dropout(self.words(batch["words"])),
                       *([mixes["input"]] if "input" in mixes else [])], dim=-1)
        encoded = self.encoder(self.pre_encode(x), lengths)                    # (B, T, 2H)
        # Biattention of the sentence with itself: each position attends over the real positions.
        attention = masked_softmax(encoded @ encoded.transpose(1, 2), mask[:, None, :])  # (B, T, T)
        context = weighted_sum(encoded, attention)                             # (B, T, 2H)
        integrated = self.integrator(torch.cat([encoded, encoded - context, encoded * context], dim=-1),
                                     lengths)                                  # (B, T, 2H')
        if "output" in mixes:
            integrated = torch.cat([integrated, mixes["output"]], dim=-1)
        scores = masked_softmax(self.self_attentive_pooling(integrated).squeeze(-1), mask)  # (B, T)
        pooled = torch.cat([masked_max(integrated, mask), masked_min(integrated, mask),
                            masked_mean(integrated, mask), weighted_sum(integrated, scores)], dim=-1)
        return self.output(self.integrator_dropout(pooled))                    # (B, C)
