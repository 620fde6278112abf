"""ELMo from Python: load a biLM, get its layers or ScalarMix-ed ELMo vectors for tokenized text,
and embed documents longer than one call should hold.

Three levels, as in allennlp (``allennlp.modules.elmo.Elmo`` and ``allennlp.commands.elmo.ElmoEmbedder``):

* :func:`load_bilm`: a trained model directory of this project (``weights.pt`` + ``options.json``)
  or a released ELMo pair (bilm-tf ``options.json`` + ``weights.hdf5``) -> :class:`BiLM` in eval mode.
* :class:`Elmo` (an ``nn.Module`` for task models): token lists or char ids -> every biLM layer
  ``(B, L + 1, T, D)`` with the token mask ``(B, T)``, plus ``n_outputs`` separately weighted
  ScalarMix representations ``(B, T, D)`` (paper Eq. 1). The sentence boundaries ``<S>``/``</S>``
  are added inside and removed from the output.
* :class:`ElmoEmbedder` (numpy, no gradients): ``embed_sentence`` -> ``(L + 1, T, D)`` float32,
  ``embed_sentences`` (an iterator, batched by length within a look-ahead window, yielded in
  input order), ``embed_long`` for long documents.

Units: ``T`` counts tokens (whitespace-separated words, boundaries excluded), ``L`` is the number of
LSTM layers, ``D = 2 * projection_dim`` (1024 for the paper's model). Layer 0 is the token layer
duplicated to ``D``; layer j >= 1 is [forward; backward] LSTM layer j. Vectors are computed
statelessly: every sentence (every window of a long document) starts from zero LSTM state, so its
vectors do not depend on what else is in the batch or what was embedded before (allennlp's
``ElmoEmbedder`` carries the LSTM state across batches instead; see ``bilm/stateful.py``).

Long inputs. One stateless call over T tokens needs working memory linear in T (the char CNN
over the distinct tokens, each layer's (2, T, P) outputs, the ``(L + 1, T, D)`` output; the LSTM
input gates are computed 64 steps at a time), and nothing caps T except that memory: for a
paper-size biLM (4096 cells, 2048 char filters) on the CPU in float32 the peak grew by about
0.086 MiB per token (81 MiB for 512 tokens, 213 MiB for 2,048; docs/using-the-bilm.md, "Long documents"), i.e.
~0.9 GB for a 10,000-token call. The LSTM weights with their gates reordered for the run
(~290 MB at that size) are built once per model, at its first call (``bilm.lstm.stacked_run_time_weights``).
:meth:`ElmoEmbedder.embed_long` bounds it: the document is cut into windows of ``window`` tokens;
each window is embedded alone (with ``<S>``/``</S>`` around it, as a sentence), and only its centre
is kept, ``overlap`` tokens of context on each side
being computed and dropped (the first and last windows keep their outer edge). Peak working memory
is then O(batch_size * window) (about batch_size x 514 x 0.086 MiB for window 512 and the paper's
sizes), independent of the document length; only the returned array,
``4 * (L + 1) * N * D`` bytes for N tokens (12 KiB per token for the paper's model), grows with the
document, and :meth:`ElmoEmbedder.iter_long` yields the pieces instead so that they can be written
out as they come. A document no longer than ``window`` is one plain call (identical to
``embed_sentence``). Longer documents differ from a single full-length call: an LSTM has unbounded
context, and windowing truncates it to ``overlap`` tokens on each side (see
``tests/unit/test_embedder.py`` for the measured difference).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, NamedTuple, Sequence

import numpy as np
import torch
from torch import nn

from ..bilm.model import BiLM, BiLMConfig
from ..bilm.released import load_released
from ..bilm.token_cache import TokenCache
from ..checks import check_batch, check_count, check_fraction, check_sentence, checked_stream
from ..data.character_ids import BOS_TOKEN, EOS_TOKEN, char_ids_of, token_to_char_ids
from ..io import InputError, read_json
from .scalar_mix import ScalarMix

OPTIONS, TORCH_WEIGHTS, HDF5_WEIGHTS = "options.json", "weights.pt", "weights.hdf5"
DEFAULT_WINDOW, DEFAULT_OVERLAP = 512, 64
DEFAULT_LOOKAHEAD_BATCHES = 8   # embed_sentences sorts this many batches' sentences by length


# ---- loading --------------------------------------------------------------------------------------
def load_bilm(path: str | Path, weight_file: str | Path | None = None) -> BiLM:
    """A biLM in eval mode on the CPU, from either layout.

    Args:
        path: one of
            * a directory with ``weights.pt`` and ``options.json`` (this project's ``save_model``;
              ``vocab.txt`` is not needed for embedding);
            * a directory with ``options.json`` and ``weights.hdf5`` (a released ELMo model);
            * a bilm-tf options file, with ``weight_file`` or a ``weights.hdf5`` beside it;
            * a ``.hdf5`` weight file with ``options.json`` beside it.
        weight_file: explicit weights (``.hdf5``: released layout; ``.pt``: our state dict) to
            combine with the options file (or directory holding ``options.json``) ``path``.

    Raises:
        InputError: nothing usable at ``path`` (naming what was looked for), a directory holding
            both weight files (ambiguous), or bad options/weights (naming the file, and for HDF5
            the dataset and shapes).
    """
    path = Path(path)
    if weight_file is not None:
        options = path / OPTIONS if path.is_dir() else path
        return _load_pair(options, Path(weight_file))
    if path.is_dir():
        if (path / TORCH_WEIGHTS).is_file() and (path / HDF5_WEIGHTS).is_file():
            raise InputError(path, f"holds both {TORCH_WEIGHTS} and {HDF5_WEIGHTS}: which biLM is meant is "
                             "ambiguous; pass the weight file explicitly (--weight-file, weight_file=) or "
                             "remove the other")
        if (path / TORCH_WEIGHTS).is_file():
            return _load_pair(path / OPTIONS, path / TORCH_WEIGHTS)
        if (path / HDF5_WEIGHTS).is_file():
            return _load_pair(path / OPTIONS, path / HDF5_WEIGHTS)
        raise InputError(path, f"no biLM here: expected {TORCH_WEIGHTS} + {OPTIONS} (a trained model) or "
                         f"{HDF5_WEIGHTS} + {OPTIONS} (released ELMo); for other file names pass the "
                         "options file and the weight file explicitly")
    if path.suffix in (".hdf5", ".h5"):
        return _load_pair(path.parent / OPTIONS, path)
    if path.is_file():
        return _load_pair(path, path.parent / HDF5_WEIGHTS)
    raise InputError(path, "biLM not found (expected a model directory, an options.json or a weight file); "
                     "models/bilm is made by the main job (`dvc repro`), and `python -m elmo_repro.fetch --only "
                     "elmo_released` fetches the original ELMo's weights to embed with instead")


def _load_pair(options: Path, weights: Path) -> BiLM:
    if not options.is_file():
        raise InputError(options, f"options file not found (needed for the weights {weights})")
    if not weights.is_file():
        raise InputError(weights, f"weight file not found (options: {options})")
    if weights.suffix != ".pt":
        return load_released(options, weights)
    try:
        model = BiLM(BiLMConfig.from_options(read_json(options)))
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        if isinstance(err, InputError):
            raise
        raise InputError(options, f"not a biLM options file ({type(err).__name__}: {err})") from None
    try:
        state = torch.load(weights, map_location="cpu", weights_only=True)
        if model.softmax is None and isinstance(state, dict):
            # the one weight a model file may hold unused: its softmax, which embedding never needs
            state = {k: v for k, v in state.items() if not k.startswith("softmax.")}
        model.load_state_dict(state)                              # strict: every other key is used
    except Exception as err:  # unpickling and state-dict mismatches raise many types
        raise InputError(weights, f"not a state dict for {options} ({type(err).__name__}: {err})") from None
    return model.eval()


# ---- the module -----------------------------------------------------------------------------------
class ElmoOutput(NamedTuple):
    """What :class:`Elmo` returns.

    Attributes:
        layers: (B, L + 1, T, D) every biLM layer, boundaries removed, zero at padded positions.
        mask: (B, T) bool, True at real tokens.
        representations: ``n_outputs`` tensors (B, T, D), one ScalarMix each (dropout applied in
            training mode); empty when ``n_outputs`` is 0.
    """

    layers: torch.Tensor
    mask: torch.Tensor
    representations: list[torch.Tensor]


class Elmo(nn.Module):
    """ELMo for task models (allennlp ``Elmo``): a frozen (by default) biLM plus ``n_outputs``
    ScalarMixes, each with its own softmax-normalised layer weights, ``gamma`` and optional layer norm.

    Args:
        bilm: the biLM (see :func:`load_bilm`).
        n_outputs: number of mixed representations (e.g. 2 for the paper's input + output ELMo).
        do_layer_norm: normalise each layer over the unmasked entries before mixing.
        dropout: dropout on each mixed representation (allennlp's default is 0.5; here 0).
        l2_coef: lambda of the ScalarMix regulariser (:meth:`penalty`).
        fine_tune: train the biLM too (allennlp ``requires_grad``). False: its parameters are
            frozen (``requires_grad_(False)`` on the given module, in place), it always runs in eval
            mode (no biLM dropout) and without autograd.
        vocab_to_cache: words whose token layer is precomputed (:class:`TokenCache`; same values,
            skips the char CNN for them). Not allowed with ``fine_tune`` (the cache would go stale).
    """

    def __init__(self, bilm: BiLM, n_outputs: int = 0, do_layer_norm: bool = False, dropout: float = 0.0,
                 l2_coef: float = 0.0, fine_tune: bool = False, vocab_to_cache: Sequence[str] | None = None):
        super().__init__()
        check_count(n_outputs, "Elmo n_outputs", minimum=0)
        check_fraction(dropout, "Elmo dropout")
        if fine_tune and vocab_to_cache is not None:
            raise ValueError("vocab_to_cache needs a frozen biLM (fine_tune=False)")
        self.bilm, self.fine_tune = bilm, fine_tune
        if not fine_tune:
            bilm.requires_grad_(False)
            bilm.eval()
        self.mixes = nn.ModuleList(ScalarMix(bilm.n_layers, do_layer_norm, l2_coef) for _ in range(n_outputs))
        self.dropout = nn.Dropout(dropout)
        self._cache_words = (check_sentence(vocab_to_cache, "Elmo vocab_to_cache")
                             if vocab_to_cache is not None else None)
        self._cache: TokenCache | None = None

    @property
    def n_layers(self) -> int:
        """L + 1."""
        return self.bilm.n_layers

    @property
    def output_dim(self) -> int:
        """D = 2 * projection_dim."""
        return self.bilm.output_dim

    def train(self, mode: bool = True) -> "Elmo":
        super().train(mode)
        if not self.fine_tune:
            self.bilm.eval()
        return self

    def penalty(self) -> torch.Tensor:
        """Sum of the ScalarMix regularisers (a scalar; 0 without mixes or ``l2_coef``)."""
        zero = torch.zeros((), device=self.bilm.token_embedder.char_embed.weight.device)
        return sum((mix.penalty() for mix in self.mixes), zero)

    def char_ids(self, sentences: Sequence[Sequence[str]]) -> torch.Tensor:
        """(B, T, max_chars) int64 char ids of a padded batch, without boundaries (the input
        :meth:`forward` also accepts)."""
        return self._char_ids(check_batch(sentences, "Elmo.char_ids"))

    def _char_ids(self, sentences: list[list[str]]) -> torch.Tensor:
        """:meth:`char_ids` of an already checked batch."""
        return torch.from_numpy(char_ids_of(sentences, add_boundaries=False,
                                            max_chars=self.bilm.config.max_characters_per_token))

    def forward(self, inputs: Sequence[Sequence[str]] | torch.Tensor) -> ElmoOutput:
        """Embed a batch.

        Args:
            inputs: B tokenized sentences (lists of str, any lengths, empty allowed), or their char ids
                (B, T, max_chars) int64 as :meth:`char_ids` or allennlp's ``batch_to_ids`` make them:
                shifted ids, all-zero rows for padding after each sentence's last token, no
                ``<S>``/``</S>`` (they are added here; a literal ``<S>`` token inside a sentence gets
                the boundary ids, as in the original).

        Returns:
            :class:`ElmoOutput`: layers (B, L + 1, T, D), mask (B, T), representations
            ``n_outputs`` x (B, T, D), on the biLM's device, in its dtype.
        """
        device = self.bilm.token_embedder.char_embed.weight.device
        if not self.fine_tune and self.bilm.training:
            # the caller put the shared biLM in train mode after this Elmo was built: a frozen biLM
            # embeds as at inference (its dropout would change every vector by ~0.1)
            self.bilm.eval()
        ids = inputs if isinstance(inputs, torch.Tensor) else self._char_ids(check_batch(inputs, "Elmo"))
        if ids.dim() != 3:
            raise ValueError(f"expected (B, T, max_chars) char ids, got shape {tuple(ids.shape)}")
        ids = ids.to(device=device, dtype=torch.long)
        mask = (ids > 0).any(-1)                                             # (B, T)
        batch, steps = mask.shape
        if batch == 0:
            layers = self.bilm.token_embedder.char_embed.weight.new_zeros(0, self.n_layers, steps,
                                                                          self.output_dim)
        else:
            with torch.set_grad_enabled(self.fine_tune and torch.is_grad_enabled()):
                full = self.bilm.layers(_add_boundaries(ids, mask), self._token_cache(device))
            layers = full[:, :, 1:steps + 1] * mask[:, None, :, None]       # (B, L+1, T, D)
        representations = [self.dropout(mix(layers, mask)) for mix in self.mixes]
        return ElmoOutput(layers, mask, representations)

    def _token_cache(self, device: torch.device) -> TokenCache | None:
        if self._cache_words is None:
            return None
        if self._cache is None or self._cache.embeddings.device != device:
            self._cache = TokenCache(self.bilm, self._cache_words)           # built on the biLM's device
        return self._cache


def _add_boundaries(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, T, C) ids without boundaries -> (B, T + 2, C) with ``<S>`` first and ``</S>`` after each
    row's last token (padding stays at the end)."""
    batch, steps, n_chars = ids.shape
    lengths = mask.sum(-1)                                                   # (B,)
    out = ids.new_zeros(batch, steps + 2, n_chars)
    out[:, 1:steps + 1] = ids
    out[:, 0] = torch.tensor(token_to_char_ids(BOS_TOKEN, n_chars), device=ids.device)
    out[torch.arange(batch, device=ids.device), lengths + 1] = torch.tensor(
        token_to_char_ids(EOS_TOKEN, n_chars), device=ids.device)
    return out


# ---- numpy embedder -------------------------------------------------------------------------------
class ElmoEmbedder:
    """All biLM layers as numpy arrays (allennlp's ``ElmoEmbedder``, but stateless).

    Args:
        model: a :class:`BiLM`, or a path for :func:`load_bilm` (with ``weight_file``).
        weight_file: see :func:`load_bilm`.
        vocab: words to precompute the token layer for (:class:`TokenCache`); optional, same values.
        device: where to run (default: where the model is; a loaded model is on the CPU).
        batch_size: sentences per biLM call in :meth:`embed_sentences`.
        lookahead: sentences :meth:`embed_sentences` reads ahead and sorts by length before
            batching (default ``8 * batch_size``); the outputs of one look-ahead window are held
            until they are yielded, so it bounds the memory (about 12 KiB per token at the
            paper's size). ``lookahead <= batch_size`` batches in input order.

    Raises:
        ValueError: ``batch_size`` or ``lookahead`` below 1.
    """

    def __init__(self, model: BiLM | str | Path, weight_file: str | Path | None = None,
                 vocab: Sequence[str] | None = None, device: str | torch.device | None = None,
                 batch_size: int = 64, lookahead: int | None = None):
        self.batch_size = check_count(batch_size, "batch_size")
        self.lookahead = check_count(lookahead if lookahead is not None else DEFAULT_LOOKAHEAD_BATCHES * batch_size,
                                     "lookahead")
        bilm = model if isinstance(model, BiLM) else load_bilm(model, weight_file)
        if device is not None:
            bilm = bilm.to(device)
        self.elmo = Elmo(bilm, n_outputs=0, vocab_to_cache=vocab)

    @property
    def n_layers(self) -> int:
        """L + 1."""
        return self.elmo.n_layers

    @property
    def output_dim(self) -> int:
        """D."""
        return self.elmo.output_dim

    @torch.no_grad()
    def embed_batch(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """One biLM call: a list of (L + 1, len(sentence), D) float32 arrays; an empty sentence gives
        (L + 1, 0, D).

        Raises:
            TypeError: ``sentences`` is not a list of token lists (e.g. a str, or a list of str).
        """
        sentences = check_batch(sentences, "ElmoEmbedder.embed_batch")
        if not sentences:
            return []
        out = self.elmo(sentences)
        layers = out.layers.float().cpu().numpy()
        return [layers[b, :, :len(s)].copy() for b, s in enumerate(sentences)]

    def embed_sentence(self, tokens: Sequence[str]) -> np.ndarray:
        """(L + 1, len(tokens), D) float32 for one tokenized sentence (one call: see the module
        docstring for long inputs).

        Raises:
            TypeError: ``tokens`` is not a list of str (a plain str is refused, not split into characters).
        """
        return self.embed_batch([check_sentence(tokens, "ElmoEmbedder.embed_sentence")])[0]

    def embed_sentences(self, sentences: Iterable[Sequence[str]], batch_size: int | None = None,
                        lookahead: int | None = None) -> Iterator[np.ndarray]:
        """(L + 1, len_i, D) float32 per sentence, yielded in input order.

        ``sentences`` is read lazily, ``lookahead`` sentences at a time; each such window is
        sorted by length and embedded ``batch_size`` sentences per call, so that short sentences do
        not pay for a long one's padding, and its outputs are yielded in input order. Vectors do
        not depend on the batching (stateless), so the order only changes the speed.

        Args:
            sentences: an iterable of token lists.
            batch_size: sentences per biLM call (default: the embedder's).
            lookahead: sentences sorted together (default: the embedder's); bounds the memory.

        Raises:
            TypeError: a sentence that is not a list of str (naming its index), or a str as ``sentences``.
            ValueError: ``batch_size`` or ``lookahead`` below 1.
        """
        size = check_count(batch_size if batch_size is not None else self.batch_size, "batch_size")
        ahead = check_count(lookahead if lookahead is not None else self.lookahead, "lookahead")
        window: list[list[str]] = []
        for sentence in checked_stream(sentences, "ElmoEmbedder.embed_sentences"):
            window.append(sentence)
            if len(window) == ahead:
                yield from self._embed_window(window, size)
                window = []
        yield from self._embed_window(window, size)

    def _embed_window(self, window: list[list[str]], batch_size: int) -> list[np.ndarray]:
        """Embed ``window`` in length-sorted batches; the outputs in ``window``'s order."""
        order = sorted(range(len(window)), key=lambda i: len(window[i]))
        out: list[np.ndarray | None] = [None] * len(window)
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            for i, layers in zip(idx, self.embed_batch([window[i] for i in idx])):
                out[i] = layers
        return out  # type: ignore[return-value]

    def iter_long(self, tokens: Sequence[str], window: int = DEFAULT_WINDOW, overlap: int = DEFAULT_OVERLAP,
                  batch_size: int = 8) -> Iterator[tuple[int, np.ndarray]]:
        """Embed a long token sequence by stateless overlapping windows; yield ``(start, layers)``
        pieces in order, layers (L + 1, n, D) float32 for tokens ``start .. start + n - 1``, together
        covering every token once.

        Args:
            tokens: the document, any length.
            window: tokens per biLM call (each call embeds ``<S> window tokens </S>``).
            overlap: context tokens computed and dropped on each inner side of a window;
                ``window - 2 * overlap`` >= 1 tokens of each inner window are kept.
            batch_size: windows per call; peak working memory is O(batch_size * window).

        Raises:
            TypeError: ``tokens`` is not a list of str (a plain str is refused, not split into characters).
            ValueError: ``window`` < 1, ``overlap`` < 0, ``window`` <= 2 * ``overlap`` or ``batch_size`` < 1.
        """
        tokens = check_sentence(tokens, "ElmoEmbedder.iter_long")
        check_count(window, "window")
        check_count(overlap, "overlap", minimum=0)
        check_count(batch_size, "batch_size")
        if window <= 2 * overlap:
            raise ValueError(f"need window > 2 * overlap; got window={window}, overlap={overlap}")
        if len(tokens) <= window:
            yield 0, self.embed_sentence(tokens)
            return
        spans = window_spans(len(tokens), window, overlap)
        for first in range(0, len(spans), batch_size):
            group = spans[first:first + batch_size]
            arrays = self.embed_batch([tokens[start:start + window] for start, _, _ in group])
            for (start, keep_from, keep_to), layers in zip(group, arrays):
                yield keep_from, layers[:, keep_from - start:keep_to - start]

    def embed_long(self, tokens: Sequence[str], window: int = DEFAULT_WINDOW, overlap: int = DEFAULT_OVERLAP,
                   batch_size: int = 8) -> np.ndarray:
        """(L + 1, len(tokens), D) float32 for a document of any length, by :meth:`iter_long`
        (arguments and errors there). Equals :meth:`embed_sentence` when ``len(tokens) <= window``."""
        tokens = check_sentence(tokens, "ElmoEmbedder.embed_long")
        out = np.empty((self.n_layers, len(tokens), self.output_dim), dtype=np.float32)
        for start, layers in self.iter_long(tokens, window, overlap, batch_size):
            out[:, start:start + layers.shape[1]] = layers
        return out


def window_spans(n_tokens: int, window: int, overlap: int) -> list[tuple[int, int, int]]:
    """``(start, keep_from, keep_to)`` per window for a document of ``n_tokens`` > ``window``:
    the window is tokens ``[start, start + window)``, its kept part ``[keep_from, keep_to)``; the kept
    parts tile ``[0, n_tokens)`` in order. Every window has exactly ``window`` tokens (the last one is
    moved left to fit, which gives it more left context); inner edges keep ``overlap`` tokens of
    context."""
    spans, keep_from = [], 0
    while keep_from < n_tokens:
        start = max(0, min(keep_from - overlap, n_tokens - window))
        end = start + window
        keep_to = n_tokens if end >= n_tokens else end - overlap
        spans.append((start, keep_from, keep_to))
        keep_from = keep_to
    return spans
