"""Bidirectional attention (Seo et al. 2017, BiDAF) and self-attention as Clark and Gardner (2018)
use them in their document-qa reader (``BiAttention`` and ``StaticAttentionSelf`` over a
``TriLinear`` similarity), the SQuAD model of the ELMo paper.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .masked import masked_max, masked_softmax


class TriLinear(nn.Module):
    """Similarity s_ij = w₁·x_i + w₂·y_j + w₃·(x_i ⊙ y_j) + b (BiDAF's α, document-qa's ``TriLinear``
    with ``bias=True``), computed without materialising the (Tx, Ty, D) product.

    Initialisation as document-qa's (Keras ``glorot_uniform`` on a 1-D weight, whose fan-in and
    fan-out are both √D): each weight vector uniform in ±√(3/√D), the bias uniform in ±√3.

    Args:
        dim: D, the width of both inputs.
    """

    def __init__(self, dim: int):
        super().__init__()
        bound = math.sqrt(3.0 / math.sqrt(dim))
        self.w_x = nn.Parameter(torch.empty(dim).uniform_(-bound, bound))
        self.w_y = nn.Parameter(torch.empty(dim).uniform_(-bound, bound))
        self.w_xy = nn.Parameter(torch.empty(dim).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(()).uniform_(-math.sqrt(3.0), math.sqrt(3.0)))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """(B, Tx, D), (B, Ty, D) -> (B, Tx, Ty) similarities."""
        cross = torch.bmm(x * self.w_xy, y.transpose(1, 2))                   # (B, Tx, Ty)
        return cross + (x @ self.w_x)[:, :, None] + (y @ self.w_y)[:, None, :] + self.bias


class BiAttention(nn.Module):
    """Context-to-question and question-to-context attention (BiDAF §2.4; document-qa's
    ``BiAttention(TriLinear(bias=True), q2c=True)``).

    c2q: each context word's softmax over the question's words, applied to the question states.
    q2c: a softmax over context words of each word's best similarity to any question word, applied
    to the context states (one vector per paragraph, repeated at every position).
    Output per context word: [c; c2q; c ⊙ c2q; c ⊙ q2c].

    Args:
        dim: D, the width of the context and question states.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.similarity = TriLinear(dim)
        self.output_dim = 4 * dim

    def forward(self, context: torch.Tensor, question: torch.Tensor, context_mask: torch.Tensor,
                question_mask: torch.Tensor) -> torch.Tensor:
        """(B, Tc, D), (B, Tq, D), (B, Tc) bool, (B, Tq) bool -> (B, Tc, 4D)."""
        s = self.similarity(context, question)                                # (B, Tc, Tq)
        c2q = torch.bmm(masked_softmax(s, question_mask[:, None, :]), question)
        best = masked_max(s, question_mask[:, None, :], dim=2)                  # (B, Tc)
        q2c_weights = masked_softmax(best, context_mask)                      # (B, Tc)
        q2c = torch.bmm(q2c_weights[:, None, :], context)                     # (B, 1, D)
        return torch.cat([context, c2q, context * c2q, context * q2c], dim=-1)


class SelfAttention(nn.Module):
    """Self-attention over one sequence in which a word cannot attend to itself (document-qa's
    ``StaticAttentionSelf(TriLinear(bias=True), ConcatWithProduct())``).

    a_i = Σ_j w_ij x_j over j ≠ i (the diagonal and padding masked out), with document-qa's
    learned no-alignment bias b (``alignment_bias=True``, b starts at −1):
    w_ij = exp(s_ij) / (Σ_k exp(s_ik) + exp(b)), so a word may attend to almost nothing;
    output [x; a; x ⊙ a].

    Args:
        dim: D, the width of the states.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.similarity = TriLinear(dim)
        self.no_alignment = nn.Parameter(torch.tensor(-1.0))
        self.output_dim = 3 * dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, T, D), (B, T) bool -> (B, T, 3D); a one-word paragraph attends to nothing (a = 0)."""
        s = self.similarity(x, x)                                             # (B, T, T)
        b, t = s.shape[0], s.shape[1]
        eye = torch.eye(t, dtype=torch.bool, device=x.device)
        allowed = mask[:, None, :] & ~eye[None]
        # the bias as one more, always allowed, logit: a softmax over [s_i1 .. s_iT, b], stable
        logits = torch.cat([s, self.no_alignment.expand(b, t, 1)], dim=-1)
        allowed = torch.cat([allowed.expand(b, t, t), allowed.new_ones(b, t, 1)], dim=-1)
        weights = masked_softmax(logits, allowed)[:, :, :t]
        attended = torch.bmm(weights, x)
        return torch.cat([x, attended, x * attended], dim=-1)
