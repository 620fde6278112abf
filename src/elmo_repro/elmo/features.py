"""ELMo feature files: every biLM layer per sentence, in allennlp's ``elmo --all`` HDF5 layout.

One dataset per sentence, named by the sentence's index in the input (``"0"``, ``"1"``, ...),
shape (L + 1, n_tokens, 2 * projection_dim), sentence boundaries removed; plus a
``sentence_to_index`` dataset holding a JSON object mapping the space-joined sentence to its index
(for duplicates the last index wins, as in allennlp — the per-index datasets stay complete).
Vectors are computed statelessly (zero LSTM state per sentence), so a sentence gets the same
vectors whatever else is in its batch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import h5py
import numpy as np
import torch

from ..checks import check_batch, check_count
from ..console import Progress
from ..data.character_ids import char_ids_of
from ..device import autocast
from ..io import InputError, atomic_path

if TYPE_CHECKING:   # annotations only, so train_ner reads features without importing the biLM code
    from ..bilm.model import BiLM


@torch.no_grad()
def embed_sentences(model: BiLM, sentences: list[list[str]], batch_size: int = 64, precision: str = "fp32"
                    ) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(index, layers)`` with layers (L + 1, n_tokens, 2P) float32, in length-bucketed order,
    computed on the model's device (``precision`` ``bf16``: under bf16 autocast, on CUDA).

    Raises:
        TypeError: ``sentences`` is not a list of token lists (naming the first bad sentence).
        ValueError: an empty sentence (it has no vectors; allennlp rejects it too), or ``batch_size`` < 1.
    """
    sentences = check_batch(sentences, "embed_sentences")
    check_count(batch_size, "batch_size")
    model.eval()
    for i, sentence in enumerate(sentences):
        if not sentence:
            raise ValueError(f"sentence {i} is empty")
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    device = model.token_embedder.char_embed.weight.device
    with Progress("embedding", len(order), "sentences") as progress:
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            char_ids = torch.from_numpy(char_ids_of([sentences[i] for i in idx])).to(device)   # checked above
            with autocast(device, precision):
                layers = model.layers(char_ids)                               # (B, L+1, T+2, 2P)
            layers = layers.float().cpu()                                     # no copy on the CPU in fp32
            for b, i in enumerate(idx):
                yield i, layers[b, :, 1:len(sentences[i]) + 1].numpy()
            progress.advance(len(idx))


def write_features(path: str | Path, model: BiLM, sentences: list[list[str]], batch_size: int = 64,
                   dtype: str = "float16", precision: str = "fp32") -> None:
    """Embed ``sentences`` on the model's device and write them atomically to ``path`` (see module docstring)."""
    write_layer_file(path, embed_sentences(model, sentences, batch_size, precision), sentences, dtype)


def write_layer_file(path: str | Path, layers: Iterator[tuple[int, np.ndarray]], sentences: list[list[str]],
                     dtype: str = "float16") -> None:
    """Write ``(index, (n_layers, n_tokens, dim))`` pairs of any layer source (the biLM, CoVe) and
    the sentence index atomically to ``path``, in the layout of the module docstring.

    Raises:
        ValueError: not every sentence index was written exactly once.
    """
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as out:
            for i, array in layers:
                out.create_dataset(str(i), data=array.astype(dtype))
            if len(out) != len(sentences):
                raise ValueError(f"{path}: {len(out)} sentences written for {len(sentences)}")
            write_sentence_index(out, {" ".join(s): str(i) for i, s in enumerate(sentences)})


def write_sentence_index(out: h5py.File, index: dict[str, str]) -> None:
    """allennlp's ``sentence_to_index`` (``commands/elmo.py``): a (1,) variable-length string
    dataset holding the JSON object {sentence text: index key}."""
    dataset = out.create_dataset("sentence_to_index", (1,), dtype=h5py.string_dtype())
    dataset[0] = json.dumps(index)


def read_sentence_index(handle: h5py.File) -> dict[str, str]:
    """The {sentence text: index key} map of a feature file (see :func:`write_sentence_index`)."""
    return json.loads(handle["sentence_to_index"][0])


def read_all(path: str | Path) -> list[np.ndarray]:
    """All sentences' layers in index order, as stored (e.g. float16), each (L + 1, n, D).

    Raises:
        InputError: missing or unreadable file, or indices that are not 0..N-1.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "feature file not found")
    try:
        with h5py.File(path, "r") as handle:
            keys = [k for k in handle.keys() if k != "sentence_to_index"]
            if sorted(keys, key=int) != [str(i) for i in range(len(keys))]:
                raise InputError(path, "sentence keys are not the indices 0..N-1")
            return [handle[str(i)][()] for i in range(len(keys))]
    except (OSError, ValueError) as err:
        if isinstance(err, InputError):
            raise
        raise InputError(path, f"unreadable HDF5 feature file ({err})") from None
