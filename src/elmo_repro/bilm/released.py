"""The released ELMo format: bilm-tf's ``options.json`` + the HDF5 file of ``dump_weights``
(the files allennlp's ``_ElmoBiLm`` and bilm-tf's ``BidirectionalLanguageModel`` read).

Datasets (F = sum of filter maps, P = projection_dim, C = cells, d = 0 forward / 1 backward):

    char_embed                                           (261, char_dim)   original ids 0..260
    CNN/W_cnn_{i}, CNN/b_cnn_{i}                         (1, width_i, char_dim, n_i), (n_i,)
    CNN_high_{k}/W_carry, b_carry, W_transform, b_transform   (F, F), (F,)
    CNN_proj/W_proj, CNN_proj/b_proj                     (F, P), (P,)
    RNN_{d}/RNN/MultiRNNCell/Cell{k}/LSTMCell/W_0        (P + P, 4C)   [x; h] rows, gates i, j, f, o
    RNN_{d}/RNN/MultiRNNCell/Cell{k}/LSTMCell/B          (4C,)         without the +1 forget bias
    RNN_{d}/RNN/MultiRNNCell/Cell{k}/LSTMCell/W_P_0      (C, P)
    softmax/W, softmax/b                                 (V, P), (V,)  optional

Our modules already follow the original conventions (highway "carry" gate on the transform branch,
forget bias added at run time, max-pool before the activation), so the conversion is only
transposes and the char-embedding padding row; export -> load is bit-exact.

``n_characters`` convention: our char ids are the original ids shifted by +1 (0 = padding token),
so the model's ``char_embed`` always has 262 rows, row 0 zero, and the file always stores the 261
original rows. options.json may say 261 (bilm-tf's training value) or 262 (the released models'
inference value); both load to ``n_characters = 262``, and export writes 262.

The softmax: bilm-tf's ``dump_weights`` skips it (the released files have none); its checkpoint
names it ``softmax/W`` (V, P) and ``softmax/b`` (V,). Export writes those when the model has a
softmax; load reads them when present (the model then has ``n_tokens_vocab = V``), otherwise the
model has no softmax whatever options.json's ``n_tokens_vocab`` says.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import h5py
import numpy as np
import torch

from ..data.character_ids import N_CHARACTERS
from ..data.vocabulary import Vocabulary
from ..io import InputError, atomic_path, read_json, write_json
from .model import BiLM, BiLMConfig

OPTIONS, WEIGHTS, VOCAB = "options.json", "weights.hdf5", "vocab.txt"
FILE_CHARACTERS = N_CHARACTERS - 1   # char_embed rows in the file: the unshifted ids 0..260


def lstm_root(direction: int, layer: int) -> str:
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"


def layout(config: BiLMConfig) -> dict[str, tuple[int, ...]]:
    """Every dataset of the weight file for ``config`` and its shape."""
    dim, p, cells = config.char_dim, config.projection_dim, config.cell_dim
    n_filters = sum(n for _, n in config.filters)
    shapes: dict[str, tuple[int, ...]] = {"char_embed": (FILE_CHARACTERS, dim)}
    for i, (width, n) in enumerate(config.filters):
        shapes[f"CNN/W_cnn_{i}"], shapes[f"CNN/b_cnn_{i}"] = (1, width, dim, n), (n,)
    for k in range(config.n_highway):
        for gate in ("carry", "transform"):
            shapes[f"CNN_high_{k}/W_{gate}"], shapes[f"CNN_high_{k}/b_{gate}"] = (n_filters, n_filters), (n_filters,)
    shapes["CNN_proj/W_proj"], shapes["CNN_proj/b_proj"] = (n_filters, p), (p,)
    for direction in (0, 1):
        for layer in range(config.n_layers):
            root = lstm_root(direction, layer)
            shapes[f"{root}/W_0"], shapes[f"{root}/B"] = (p + p, 4 * cells), (4 * cells,)
            shapes[f"{root}/W_P_0"] = (cells, p)
    if config.n_tokens_vocab:
        shapes["softmax/W"], shapes["softmax/b"] = (config.n_tokens_vocab, p), (config.n_tokens_vocab,)
    return shapes


def model_arrays(model: BiLM) -> dict[str, np.ndarray]:
    """The model's parameters in the file's layout, float32 (``layout(model.config)`` keys)."""
    cnn = model.token_embedder
    out = {"char_embed": cnn.char_embed.weight[1:]}                         # drop the padding row
    for i, conv in enumerate(cnn.convs):
        out[f"CNN/W_cnn_{i}"] = conv.weight.permute(2, 1, 0)[None]          # (n, dim, w) -> (1, w, dim, n)
        out[f"CNN/b_cnn_{i}"] = conv.bias
    for k, (carry, transform) in enumerate(zip(cnn.highway.carry, cnn.highway.transform)):
        out[f"CNN_high_{k}/W_carry"], out[f"CNN_high_{k}/b_carry"] = carry.weight.T, carry.bias
        out[f"CNN_high_{k}/W_transform"], out[f"CNN_high_{k}/b_transform"] = transform.weight.T, transform.bias
    out["CNN_proj/W_proj"], out["CNN_proj/b_proj"] = cnn.projection.weight.T, cnn.projection.bias
    for direction, stack in enumerate((model.forward_lstm, model.backward_lstm)):
        for layer, cell in enumerate(stack.layers):
            root = lstm_root(direction, layer)
            out[f"{root}/W_0"] = torch.cat([cell.input_weight, cell.state_weight])  # (in + P, 4C)
            out[f"{root}/B"], out[f"{root}/W_P_0"] = cell.bias, cell.projection
    if model.softmax is not None:
        out["softmax/W"], out["softmax/b"] = model.softmax.weight, model.softmax.bias
    return {key: np.ascontiguousarray(t.detach().cpu().numpy(), dtype=np.float32) for key, t in out.items()}


@torch.no_grad()
def assign_arrays(model: BiLM, arrays: dict[str, np.ndarray]) -> None:
    """Inverse of :func:`model_arrays`: copy file-layout arrays into the model's parameters."""
    def put(param: torch.Tensor, value: np.ndarray | torch.Tensor) -> None:
        param.copy_(torch.as_tensor(value))

    cnn = model.token_embedder
    put(cnn.char_embed.weight[1:], arrays["char_embed"])
    cnn.char_embed.weight[0].zero_()
    for i, conv in enumerate(cnn.convs):
        put(conv.weight, torch.from_numpy(arrays[f"CNN/W_cnn_{i}"][0]).permute(2, 1, 0))
        put(conv.bias, arrays[f"CNN/b_cnn_{i}"])
    for k, (carry, transform) in enumerate(zip(cnn.highway.carry, cnn.highway.transform)):
        put(carry.weight, arrays[f"CNN_high_{k}/W_carry"].T)
        put(carry.bias, arrays[f"CNN_high_{k}/b_carry"])
        put(transform.weight, arrays[f"CNN_high_{k}/W_transform"].T)
        put(transform.bias, arrays[f"CNN_high_{k}/b_transform"])
    put(cnn.projection.weight, arrays["CNN_proj/W_proj"].T)
    put(cnn.projection.bias, arrays["CNN_proj/b_proj"])
    for direction, stack in enumerate((model.forward_lstm, model.backward_lstm)):
        for layer, cell in enumerate(stack.layers):
            root = lstm_root(direction, layer)
            w_0 = arrays[f"{root}/W_0"]
            put(cell.input_weight, w_0[:cell.input_dim])
            put(cell.state_weight, w_0[cell.input_dim:])
            put(cell.bias, arrays[f"{root}/B"])               # the forget bias stays a run-time +1
            put(cell.projection, arrays[f"{root}/W_P_0"])
    if model.softmax is not None:
        put(model.softmax.weight, arrays["softmax/W"])
        put(model.softmax.bias, arrays["softmax/b"])


def read_config(options_path: str | Path, n_tokens_vocab: int = 0) -> BiLMConfig:
    """Our config from a bilm-tf options.json (``n_characters`` 261 or 262 -> 262; see module doc),
    with ``n_tokens_vocab`` rows of softmax (0: none) instead of the file's value.

    Raises:
        InputError: missing/malformed file, missing or invalid entries, or a declared
            ``n_tokens_vocab`` that contradicts a non-zero ``n_tokens_vocab``.
    """
    options = read_json(options_path)
    try:
        config = BiLMConfig.from_options(options, n_tokens_vocab=n_tokens_vocab)
        declared = int(options.get("n_tokens_vocab") or 0)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise InputError(options_path, f"not a bilm-tf options file ({type(err).__name__}: {err})") from None
    if n_tokens_vocab and declared and declared != n_tokens_vocab:
        raise InputError(options_path, f"n_tokens_vocab is {declared} but the weight file's softmax/W "
                         f"has {n_tokens_vocab} rows")
    if config.n_characters not in (FILE_CHARACTERS, N_CHARACTERS):
        raise InputError(options_path, f"char_cnn.n_characters must be {FILE_CHARACTERS} or "
                         f"{N_CHARACTERS}, got {config.n_characters}")
    return dataclasses.replace(config, n_characters=N_CHARACTERS)


def read_arrays(weights_path: str | Path, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """The datasets ``shapes`` names, checked (present, shape, floating dtype, finite), as float32.
    Every dataset of the file must be named: weights the options do not describe (a second LSTM
    layer under ``n_layers: 1``, a highway layer more) would otherwise be dropped silently.

    Raises:
        InputError: naming the dataset, its expected and actual shape or dtype, or the datasets
            the options do not describe.
    """
    weights_path = Path(weights_path)
    if not weights_path.is_file():
        raise InputError(weights_path, "weight file not found")
    try:
        handle = h5py.File(weights_path, "r")
    except OSError as err:
        raise InputError(weights_path, f"not a readable HDF5 file ({err})") from None
    arrays = {}
    with handle:
        for key, shape in shapes.items():
            dataset = _dataset(handle, key)
            if dataset is None:
                raise InputError(weights_path, f"missing dataset {key!r} (expected shape {shape})")
            if dataset.shape != shape:
                raise InputError(weights_path, f"dataset {key!r}: expected shape {shape}, got {dataset.shape}")
            if dataset.dtype.kind != "f":
                raise InputError(weights_path, f"dataset {key!r}: expected float32, got dtype {dataset.dtype}")
            value = dataset[()].astype(np.float32)
            if not np.isfinite(value).all():
                raise InputError(weights_path, f"dataset {key!r} holds non-finite values")
            arrays[key] = value
        unused = sorted(set(_dataset_names(handle)) - set(shapes))
    if unused:
        shown = ", ".join(unused[:8]) + (f" and {len(unused) - 8} more" if len(unused) > 8 else "")
        raise InputError(weights_path, f"holds {len(unused)} dataset(s) the options do not describe: "
                         f"{shown}; the options file does not match these weights (layers, highway "
                         "layers, filters?): loading would silently drop them")
    return arrays


def _dataset_names(handle: h5py.File) -> list[str]:
    """Every dataset's full path in the file (groups excluded)."""
    names: list[str] = []
    handle.visititems(lambda name, node: names.append(name) if isinstance(node, h5py.Dataset) else None)
    return names


def _dataset(handle: h5py.File, key: str) -> h5py.Dataset | None:
    """``handle[key]`` if it is a dataset; None if any part of the path is missing or not a group."""
    node = handle
    for part in key.split("/"):
        if not isinstance(node, h5py.Group) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, h5py.Dataset) else None


def _softmax_rows(weights_path: Path) -> int:
    """Rows of ``softmax/W`` if the file has one (0 otherwise); the shape is checked later."""
    try:
        with h5py.File(weights_path, "r") as handle:
            dataset = _dataset(handle, "softmax/W")
            return int(dataset.shape[0]) if dataset is not None and dataset.ndim == 2 else 0
    except OSError:
        return 0  # read_arrays reports the unreadable file


def load_released(options_path: str | Path, weights_path: str | Path) -> BiLM:
    """A :class:`BiLM` (eval mode) from bilm-tf's options.json and ``dump_weights`` HDF5 file.

    Accepts models with or without skip connections, any number of layers/highways/filters, and
    ``n_characters`` 261 or 262 (module docstring).

    Raises:
        InputError: bad options (naming the options file) or a weight file with a missing or unused
            dataset, wrong shape, non-float dtype or non-finite values (naming the dataset and the
            shapes).
    """
    weights_path = Path(weights_path)
    vocab_rows = _softmax_rows(weights_path) if weights_path.is_file() else 0
    config = read_config(options_path, n_tokens_vocab=vocab_rows)
    try:
        model = BiLM(config)
    except ValueError as err:
        raise InputError(options_path, str(err)) from None
    assign_arrays(model, read_arrays(weights_path, layout(config)))
    return model.eval()


def export_released(model: BiLM, out_dir: str | Path, vocab: Vocabulary | None = None) -> None:
    """Write ``options.json``, ``weights.hdf5`` (bilm-tf layout plus ``softmax/{W,b}`` when the
    model has a softmax) and, if given, ``vocab.txt`` into ``out_dir``, each atomically;
    ``load_released`` of the result reproduces the parameters bit for bit.

    Raises:
        ValueError: a model this format cannot hold (``n_characters`` other than 262, a non-zero
            padding row in ``char_embed``, or a vocabulary that does not match the softmax).
    """
    config = model.config
    if config.n_characters != N_CHARACTERS:
        raise ValueError(f"the released format needs n_characters={N_CHARACTERS}, got {config.n_characters}")
    if bool(model.token_embedder.char_embed.weight[0].any()):
        raise ValueError("char_embed row 0 (padding id) must be zero: the released format does not store it")
    if vocab is not None and model.softmax is not None and len(vocab) != config.n_tokens_vocab:
        raise ValueError(f"vocabulary has {len(vocab)} tokens, the softmax {config.n_tokens_vocab}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(out_dir / WEIGHTS) as tmp:
        with h5py.File(tmp, "w") as out:
            for key, value in model_arrays(model).items():
                out.create_dataset(key, data=value)
    write_json(out_dir / OPTIONS, {**config.to_options(), "bidirectional": True})
    if vocab is not None:
        vocab.save(out_dir / VOCAB)
