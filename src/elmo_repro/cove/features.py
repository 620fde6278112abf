"""CoVe as a layer source: the MT-LSTM's two layers per sentence, in the same HDF5 layout as the
biLM's features (:mod:`elmo_repro.elmo.features`), so a table can put "CoVe layer 1 / 2" wherever it
puts a biLM layer (paper §5.3, Tables 5 and 6).

Each sentence's dataset is ``(2, n_tokens, 2 * hidden)``: index 0 the first biLSTM layer, 1 the
second (McCann et al.'s CoVe). The input word vectors are not a layer here: unlike the biLM's char
CNN layer they are not learned by the translation model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np
import torch

from ..checks import check_batch, check_count
from ..elmo.features import write_layer_file
from ..io import InputError, read_json
from .model import MTLSTM, CoVeConfig
from .train import SourceVectors, pad


def load_cove(directory: str | Path) -> tuple[MTLSTM, SourceVectors]:
    """The MT-LSTM (eval mode) and its input vectors from a ``train_cove`` model directory
    (``weights.pt``, ``config.json``, ``source_words.txt``).

    Raises:
        InputError: a missing file, or weights whose vectors do not match ``source_words.txt``.
    """
    directory = Path(directory)
    for name in ("weights.pt", "config.json", "source_words.txt"):
        if not (directory / name).is_file():
            raise InputError(directory / name, "not found (a CoVe model directory, written by stage train_cove)")
    state = torch.load(directory / "weights.pt", map_location="cpu", weights_only=True)
    prefix = "encoder."
    encoder_state = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    if "embedding.weight" not in encoder_state:
        raise InputError(directory / "weights.pt", "no encoder.embedding.weight: not a CoVe translator's "
                         "state dict (stage train_cove)")
    matrix = encoder_state["embedding.weight"]
    words = (directory / "source_words.txt").read_text(encoding="utf-8").splitlines()
    if matrix.shape[0] != len(words) + 1:
        raise InputError(directory / "source_words.txt", f"{len(words)} words, but the weights hold "
                         f"{matrix.shape[0] - 1} vectors (+ the unknown word's)")
    vectors = SourceVectors(words, matrix[1:].numpy())
    encoder = MTLSTM(vectors.matrix, CoVeConfig(**read_json(directory / "config.json")["model"]))
    encoder.load_state_dict(encoder_state)
    return encoder.eval(), vectors


@torch.no_grad()
def cove_layers(encoder: MTLSTM, vectors: SourceVectors, sentences: list[list[str]], batch_size: int = 64
                ) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(index, layers)``, layers ``(2, n_tokens, 2 * hidden)`` float32, in length-bucketed
    order, computed on the encoder's device. Each sentence is encoded on its own (padding is packed
    away), so its vectors do not depend on its batch.

    Raises:
        TypeError: not a list of token lists; ValueError: an empty sentence or ``batch_size`` < 1.
    """
    sentences = check_batch(sentences, "cove_layers")
    check_count(batch_size, "batch_size")
    if any(not s for s in sentences):
        raise ValueError(f"sentence {next(i for i, s in enumerate(sentences) if not s)} is empty")
    encoder.eval()
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    device = next(encoder.parameters()).device
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        ids, lengths = pad([vectors.ids(sentences[i]) for i in idx])
        outputs, _ = encoder.layers(ids.to(device), lengths)               # lengths stay on the CPU (packing)
        stacked = torch.stack(outputs, 1).cpu()                             # (B, 2, T, 2H)
        for b, i in enumerate(idx):
            yield i, stacked[b, :, :len(sentences[i])].numpy()


def write_cove_features(path: str | Path, encoder: MTLSTM, vectors: SourceVectors, sentences: list[list[str]],
                        batch_size: int = 64, dtype: str = "float16") -> None:
    """Encode ``sentences`` with CoVe and write them atomically to ``path``."""
    write_layer_file(path, cove_layers(encoder, vectors, sentences, batch_size), sentences, dtype)
