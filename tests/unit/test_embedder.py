"""ELMo API (load_bilm, Elmo, ElmoEmbedder, long documents) and the ``elmo_repro.embed`` CLI
(allennlp ``elmo`` HDF5 layout)."""

import json
import math
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from fp_bounds import U32, UF16, bilm_bound, bilm_step_roundings, gamma, token_roundings

from elmo_repro.bilm.model import BiLM, BiLMConfig
from elmo_repro.bilm.released import export_released, load_released
from elmo_repro.data.character_ids import batch_to_char_ids
from elmo_repro.elmo.embedder import Elmo, ElmoEmbedder, load_bilm, window_spans
from elmo_repro.embed import main
from elmo_repro.io import InputError, write_json

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[3] / "shared/data"
FIXTURES = DATA / "elmo_test_fixtures"
HELDOUT = DATA / "lm1b_heldout_subset/1b_benchmark.test.tokens"

SENTENCES = [["The", "cat", "sat", "."], ["Hello"], [], ["a", "/", "b", "<S>"], ["EU", "rejects", "German", "call"]]

# Windowed vs one full-length call, released fixture model (LSTM 64 cells), window 512, 3,000 tokens
# of 1B Word heldout text, max |difference| over all layers and tokens (max |value| 4.6), measured on
# CPU: overlap 0: 2.3, 8: 0.20, 16: 1.6e-2, 32: 1.9e-4, 64: 7.2e-7 (float rounding: this small LSTM
# forgets within 64 tokens). The tiny-profile biLM of models/bilm (256 cells) measured 1.1e-3 at
# overlap 64 and 2.4e-5 at 128 (max |value| 3.3). The paper's 4096-cell model may remember further;
# not measured (no weights here). These differences are the model's (they are far above rounding),
# so they hold on any CPU; test_long_document_close_to_one_full_call derives its bound from them.


def pair_bound(model: BiLM, steps: int, magnitude) -> float:
    """Two float32 orderings (another batch, a padded row, the token cache) of ``steps`` biLM
    steps: twice the chain bound of fp_bounds.py."""
    return 2 * bilm_bound(model.config, steps, magnitude)


@pytest.fixture(scope="module")
def model() -> BiLM:
    torch.manual_seed(0)
    config = BiLMConfig(filters=((1, 4), (2, 8)), char_dim=4, n_highway=1, cell_dim=16, projection_dim=4,
                        n_layers=2, dropout=0.1)
    return BiLM(config).eval()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, model) -> Path:
    """``model`` saved in this project's layout (weights.pt + options.json, as train.save_model)."""
    out = tmp_path_factory.mktemp("bilm")
    torch.save(model.state_dict(), out / "weights.pt")
    write_json(out / "options.json", model.config.to_options())
    return out


@pytest.fixture(scope="module")
def fixture_model() -> BiLM:
    if not (FIXTURES / "lm_weights.hdf5").is_file():
        pytest.skip(f"allennlp ELMo test fixtures not found at {FIXTURES}")
    return load_released(FIXTURES / "options.json", FIXTURES / "lm_weights.hdf5")


def heldout_tokens(n: int) -> list[str]:
    if not HELDOUT.is_file():
        pytest.skip(f"1B Word heldout text not found at {HELDOUT}")
    tokens: list[str] = []
    with open(HELDOUT, encoding="utf-8") as handle:
        for line in handle:
            tokens += line.split()
            if len(tokens) >= n:
                return tokens[:n]
    pytest.skip("heldout text too short")


def reference_layers(model: BiLM, sentences: list[list[str]]) -> list[np.ndarray]:
    """BiLM.layers of each sentence alone, boundaries removed: (L + 1, n, D)."""
    out = []
    with torch.no_grad():
        for s in sentences:
            full = model.layers(torch.from_numpy(batch_to_char_ids([s])))[0]
            out.append(full[:, 1:len(s) + 1].numpy())
    return out


def same_parameters(a: BiLM, b: BiLM) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


# ---- load_bilm ------------------------------------------------------------------------------------
def test_load_bilm_both_layouts(tmp_path, model, model_dir):
    assert same_parameters(load_bilm(model_dir), model)
    released = tmp_path / "released"
    export_released(model, released)
    assert same_parameters(load_bilm(released), model)                                   # directory
    assert same_parameters(load_bilm(released / "options.json", released / "weights.hdf5"), model)
    assert same_parameters(load_bilm(released / "weights.hdf5"), model)                  # options beside
    assert not load_bilm(model_dir).training


def test_load_bilm_clear_errors(tmp_path, model_dir):
    with pytest.raises(InputError, match="no biLM here: expected weights.pt"):
        load_bilm(tmp_path)
    with pytest.raises(InputError, match="not found"):
        load_bilm(tmp_path / "missing")
    with pytest.raises(InputError, match="weight file not found"):
        load_bilm(model_dir / "options.json", tmp_path / "w.hdf5")
    (tmp_path / "bad.pt").write_bytes(b"not a torch file")
    with pytest.raises(InputError, match="bad.pt: not a state dict"):
        load_bilm(model_dir / "options.json", tmp_path / "bad.pt")


def test_a_directory_with_both_weight_files_is_refused(tmp_path, model, model_dir):
    """issue 30: weights.pt was picked silently over weights.hdf5 in the same directory."""
    both = tmp_path / "both"
    export_released(model, both)
    shutil.copy(model_dir / "weights.pt", both / "weights.pt")
    with pytest.raises(InputError, match=r"both.*holds both weights.pt and weights.hdf5.*ambiguous"):
        load_bilm(both)
    assert same_parameters(load_bilm(both, both / "weights.hdf5"), model)        # named explicitly: fine
    assert same_parameters(load_bilm(both, both / "weights.pt"), model)


# ---- Elmo module ----------------------------------------------------------------------------------
def test_elmo_layers_equal_bilm_layers_and_mask(model):
    elmo = Elmo(model)
    out = elmo(SENTENCES)
    lengths = [len(s) for s in SENTENCES]
    assert out.layers.shape == (5, 3, max(lengths), 8) and out.representations == []
    assert out.mask.dtype == torch.bool and out.mask.sum(-1).tolist() == lengths
    with torch.no_grad():
        batched = model.layers(torch.from_numpy(batch_to_char_ids(SENTENCES)))   # (B, L+1, T+2, D)
    for b, n in enumerate(lengths):
        assert torch.equal(out.layers[b, :, :n], batched[b, :, 1:n + 1])       # same call, boundaries cut
        assert not out.layers[b, :, n:].any()                                   # padding is zero
    for layers, ref in zip(out.layers, reference_layers(model, SENTENCES)):  # each sentence alone
        bound = pair_bound(model, ref.shape[1] + 2, np.abs(ref).max(initial=0))
        np.testing.assert_allclose(layers[:, :ref.shape[1]].numpy(), ref, rtol=0, atol=bound)


def test_elmo_char_id_input_matches_token_input(model):
    elmo = Elmo(model)
    from_tokens = elmo(SENTENCES)
    from_ids = elmo(elmo.char_ids(SENTENCES))                     # (B, T, 50), no boundaries
    assert torch.equal(from_ids.layers, from_tokens.layers) and torch.equal(from_ids.mask, from_tokens.mask)
    with pytest.raises(TypeError, match="sentence 0: expected a tokenized sentence"):
        elmo(["The", "cat"])                                       # one sentence is not a batch
    empty = elmo([[], []])
    assert empty.layers.shape == (2, 3, 0, 8) and empty.mask.shape == (2, 0)


def test_scalar_mix_outputs(model):
    elmo = Elmo(model, n_outputs=2, do_layer_norm=False)
    with torch.no_grad():
        elmo.mixes[0].scalar_parameters.copy_(torch.tensor([1.0, -1.0, 0.5]))
        elmo.mixes[1].gamma.fill_(2.0)
    out = elmo(SENTENCES)
    assert len(out.representations) == 2
    for mix, rep in zip(elmo.mixes, out.representations):
        s = torch.softmax(mix.scalar_parameters, 0)
        expected = mix.gamma * (s[None, :, None, None] * out.layers).sum(1)
        assert rep.shape == (5, 4, 8)
        # the same weights s; products (1), a 3-term sum (2) and gamma (1) in either order: each
        # within gamma_4 |gamma| sum_l s_l |h_l| <= gamma_4 |gamma| max|h| of the exact mix
        bound = 2 * gamma(4) * float(mix.gamma.detach().abs()) * float(out.layers.abs().amax())
        torch.testing.assert_close(rep, expected, rtol=0, atol=bound)
    gap = (out.representations[0] - out.representations[1]).abs().amax()
    assert gap > 100 * bound, (gap, bound)                    # other mixes: far more than rounding apart
    # only the mixes train; the biLM is frozen and stays in eval mode
    elmo.train()
    assert not elmo.bilm.training and all(not p.requires_grad for p in elmo.bilm.parameters())
    assert {n for n, p in elmo.named_parameters() if p.requires_grad} == {
        "mixes.0.scalar_parameters", "mixes.0.gamma", "mixes.1.scalar_parameters", "mixes.1.gamma"}
    sum(r.sum() for r in elmo(SENTENCES).representations).backward()
    assert elmo.mixes[0].scalar_parameters.grad is not None
    normed = Elmo(model, n_outputs=1, do_layer_norm=True)(SENTENCES)
    assert normed.representations[0].shape == (5, 4, 8)
    assert not normed.representations[0][~normed.mask].any()     # padding stays zero


def test_elmo_token_cache_gives_the_same_layers(model):
    words = ["The", "cat", "Hello", "<S>", "</S>"]
    plain, cached = Elmo(model)(SENTENCES), Elmo(model, vocab_to_cache=words)(SENTENCES)
    bound = pair_bound(model, max(map(len, SENTENCES)) + 2, plain.layers.abs().amax())
    torch.testing.assert_close(cached.layers, plain.layers, atol=bound, rtol=0)
    with pytest.raises(ValueError, match="frozen"):
        Elmo(model, fine_tune=True, vocab_to_cache=words)


# ---- ElmoEmbedder ---------------------------------------------------------------------------------
def test_embedder_sentences(model):
    embedder = ElmoEmbedder(model, batch_size=2)
    one = embedder.embed_sentence(["The", "cat", "sat", "."])
    assert one.shape == (3, 4, 8) and one.dtype == np.float32
    outs = list(embedder.embed_sentences(iter(SENTENCES)))            # input order, lazily batched
    assert [o.shape for o in outs] == [(3, len(s), 8) for s in SENTENCES]
    for got, ref in zip(outs, reference_layers(model, SENTENCES)):
        bound = pair_bound(model, ref.shape[1] + 2, np.abs(ref).max(initial=0))
        np.testing.assert_allclose(got, ref, rtol=0, atol=bound)
    np.testing.assert_allclose(outs[0], one, rtol=0, atol=pair_bound(model, 4 + 2, np.abs(one).max()))


def test_window_spans_tile_the_document():
    for n, window, overlap in [(513, 512, 64), (1000, 512, 64), (10_000, 512, 64), (37, 10, 4), (11, 10, 0),
                               (100, 3, 1)]:
        spans = window_spans(n, window, overlap)
        kept = [(a, b) for _, a, b in spans]
        assert kept[0][0] == 0 and kept[-1][1] == n
        assert all(b0 == a1 for (_, b0), (a1, _) in zip(kept, kept[1:])) and all(a < b for a, b in kept)
        for start, a, b in spans:
            assert 0 <= start <= a and start + window <= n and b <= start + window
            assert a - start >= overlap or start == 0                   # left context
            assert start + window - b >= overlap or start + window == n  # right context


def test_long_document_shape_and_short_input_exact(model):
    embedder = ElmoEmbedder(model)
    tokens = [f"w{i % 997}" for i in range(10_000)]
    out = embedder.embed_long(tokens, window=512, overlap=64)
    assert out.shape == (3, 10_000, 8) and np.isfinite(out).all()
    pieces = list(embedder.iter_long(tokens[:1500], window=512, overlap=64))   # what embed_long assembles
    assert [start for start, _ in pieces] == [0, 448, 832, 1216] and sum(p.shape[1] for _, p in pieces) == 1500
    np.testing.assert_array_equal(np.concatenate([p for _, p in pieces], axis=1),
                                  embedder.embed_long(tokens[:1500], window=512, overlap=64))
    for short in (tokens[:100], tokens[:512]):                    # shorter than / equal to the window
        np.testing.assert_array_equal(embedder.embed_long(short, 512, 64), embedder.embed_sentence(short))
    with pytest.raises(ValueError, match="window > 2"):
        embedder.embed_long(tokens, window=128, overlap=64)


def test_long_document_close_to_one_full_call(fixture_model):
    embedder = ElmoEmbedder(fixture_model)
    tokens = heldout_tokens(3_000)
    full = embedder.embed_sentence(tokens)
    windowed = embedder.embed_long(tokens, window=512, overlap=64)
    assert windowed.shape == full.shape == (3, 3_000, 32)
    # the token layer has no context, but its words are embedded in other batches (another float32
    # ordering): twice the token layer's chain bound (fp_bounds.py)
    bound = 2 * token_roundings(fixture_model.config) * U32 * np.abs(full[0]).max()
    np.testing.assert_allclose(windowed[0], full[0], rtol=0, atol=bound)
    diff = np.abs(windowed - full).max()
    # At overlap 64 the truncation is below 1e-6 (the measured decay above: /84 from overlap 16 to
    # 32, so about 2e-8 at 64), and a rounding error made more than 64 steps back is forgotten the
    # same way; so each run's rounding is that of its last 64 steps. Their worst case (fp_bounds.py,
    # 2e-2) would not tell overlap 64 from 16, so this uses the typical bound: independent
    # roundings add in quadrature, sqrt(64 x step roundings) u max|value| for each run (2e-4 in
    # all; measured 7e-7 and 1.2e-6 in two runs; overlap 16 is off by 2e-2).
    rounding = math.sqrt(64 * bilm_step_roundings(fixture_model.config)) * U32 * np.abs(full).max()
    assert diff <= 1e-6 + 2 * rounding, diff
    short_context = np.abs(embedder.embed_long(tokens, window=512, overlap=16) - full).max()
    assert short_context > diff                                    # the overlap is what buys the accuracy


# ---- CLI ------------------------------------------------------------------------------------------
CLI_LINES = ["The cat sat .", "Hello", "", "a / b <S>", "The cat sat .", "x </S> y z", "  ", "EU rejects it"]


def write_input(path: Path, lines: list[str], bom: bool = True, crlf: bool = True) -> None:
    text = ("\r\n" if crlf else "\n").join(lines) + "\n"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))


def test_cli_round_trip_allennlp_layout(tmp_path, model, model_dir):
    src, dst = tmp_path / "in.txt", tmp_path / "out.hdf5"
    write_input(src, CLI_LINES)
    assert main([str(src), str(dst), "--model", str(model_dir), "--all", "--batch-size", "3"]) == 0
    sentences = [line.split() for line in CLI_LINES]
    refs = reference_layers(model, [s or ["x"] for s in sentences])
    with h5py.File(dst, "r") as handle:
        assert set(handle) == {str(i) for i in range(len(CLI_LINES))} | {"sentence_to_index"}
        index_ds = handle["sentence_to_index"]
        assert index_ds.shape == (1,)
        index = json.loads(index_ds[0])
        arrays = [handle[str(i)][()] for i in range(len(CLI_LINES))]
    for i, (s, array) in enumerate(zip(sentences, arrays)):
        assert array.dtype == np.float32 and array.shape == (3, len(s), 8), i
        if s:
            bound = pair_bound(model, len(s) + 2, np.abs(refs[i]).max())
            np.testing.assert_allclose(array, refs[i], rtol=0, atol=bound)
    # blank lines keep their index with an empty dataset and are not in sentence_to_index
    assert arrays[2].shape == (3, 0, 8) and arrays[6].shape == (3, 0, 8)
    assert index == {"The cat sat .": "4", "Hello": "1", "a / b <S>": "3", "x </S> y z": "5", "EU rejects it": "7"}
    # duplicates: both datasets kept (from other batches: within twice the chain bound, fp_bounds.py)
    bound = pair_bound(model, 4 + 2, np.abs(arrays[0]).max())
    np.testing.assert_allclose(arrays[0], arrays[4], rtol=0, atol=bound)
    # literal boundary tokens: one vector each, with the boundary's token layer; neighbours unshifted
    with torch.no_grad():
        boundary = model.layers(torch.from_numpy(batch_to_char_ids([[]])))[0, 0]   # (T=2, D): <S>, </S>
    # the token layer (no context) in another batch: twice its chain bound (fp_bounds.py)
    bound = 2 * token_roundings(model.config) * U32 * float(boundary.abs().amax())
    np.testing.assert_allclose(arrays[3][0, 3], boundary[0].numpy(), rtol=0, atol=bound)
    np.testing.assert_allclose(arrays[5][0, 1], boundary[1].numpy(), rtol=0, atol=bound)


def test_cli_top_average_and_float16(tmp_path, model, model_dir):
    src = tmp_path / "in.txt"
    write_input(src, CLI_LINES, bom=False, crlf=False)
    outputs = {}
    for flag in ("--all", "--top", "--average"):
        dst = tmp_path / f"{flag[2:]}.hdf5"
        assert main([str(src), str(dst), "--model", str(model_dir), flag]) == 0
        with h5py.File(dst, "r") as handle:
            outputs[flag] = [handle[str(i)][()] for i in range(len(CLI_LINES))]
    for all_, top, avg, line in zip(outputs["--all"], outputs["--top"], outputs["--average"], CLI_LINES):
        n = len(line.split())
        assert top.shape == avg.shape == (n, 8)
        np.testing.assert_array_equal(top, all_[-1])
        # float32 mean of 3 layers either way: a 3-term sum (2) and the division (1), each within
        # gamma_3 max|h| of the exact mean
        bound = 2 * gamma(3) * np.abs(all_).max(initial=0)
        np.testing.assert_allclose(avg, all_.mean(axis=0), rtol=0, atol=bound)
    dst = tmp_path / "half.hdf5"
    assert main([str(src), str(dst), "--model", str(model_dir), "--dtype", "float16"]) == 0
    with h5py.File(dst, "r") as handle:                            # default --all
        assert handle["0"].dtype == np.float16 and handle["0"].shape == (3, 4, 8)
        # float16 storage moves x by at most |x| 2^-11 (2^-25 below its normal range); the float32
        # x of this run may differ from the --all run's by twice the chain bound (fp_bounds.py)
        x = outputs["--all"][0]
        chain = pair_bound(model, x.shape[1] + 2, np.abs(x).max())
        np.testing.assert_allclose(handle["0"][()], x, rtol=UF16, atol=chain * (1 + UF16) + 2.0 ** -25)


def test_cli_window_for_long_lines(tmp_path, model, model_dir):
    long_line = [f"t{i % 13}" for i in range(100)]
    src, dst = tmp_path / "in.txt", tmp_path / "out.hdf5"
    write_input(src, ["short line", " ".join(long_line)])
    assert main([str(src), str(dst), "--model", str(model_dir), "--window", "32", "--overlap", "8"]) == 0
    with h5py.File(dst, "r") as handle:
        got = handle["1"][()]
        assert handle["0"].shape == (3, 2, 8)
    np.testing.assert_array_equal(got, ElmoEmbedder(model).embed_long(long_line, 32, 8))


def test_cli_invalid_utf8_is_a_one_line_error(tmp_path, model_dir, capsys):
    src, dst = tmp_path / "in.txt", tmp_path / "out.hdf5"
    src.write_bytes(b"fine line\nalso fine\nbad \xff byte\n")
    assert main([str(src), str(dst), "--model", str(model_dir)]) == 1
    err = capsys.readouterr().err
    assert f"{src}:3" in err and "UTF-8" in err and "Traceback" not in err
    assert not dst.exists() and not list(tmp_path.glob(".out.hdf5.*"))
    assert main([str(src), str(dst), "--model", str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err
    assert "biLM not found" in err and "made by the main job (`dvc repro`)" in err and "elmo_released" in err


def test_cli_on_real_text_with_the_released_fixture(tmp_path, fixture_model):
    if not HELDOUT.is_file():
        pytest.skip(f"1B Word heldout text not found at {HELDOUT}")
    with open(HELDOUT, encoding="utf-8") as handle:
        lines = [next(handle).rstrip("\n") for _ in range(50)]
    src, dst = tmp_path / "heldout50.txt", tmp_path / "heldout50.hdf5"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "elmo_repro.embed", str(src), str(dst), "--model",
                             str(FIXTURES / "options.json"), "--weight-file", str(FIXTURES / "lm_weights.hdf5"),
                             "--top", "--batch-size", "16"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    expected = ElmoEmbedder(fixture_model).embed_sentences([line.split() for line in lines], batch_size=16)
    with h5py.File(dst, "r") as handle:
        assert len(handle) == 51
        index = json.loads(handle["sentence_to_index"][0])
        for i, (line, ref) in enumerate(zip(lines, expected)):
            got = handle[str(i)][()]
            assert got.shape == (len(line.split()), 32)
            bound = pair_bound(fixture_model, len(line.split()) + 2, np.abs(ref[-1]).max())   # another process
            np.testing.assert_allclose(got, ref[-1], rtol=0, atol=bound)
            last = max(j for j, other in enumerate(lines) if other.strip() == line.strip())
            assert index[line.strip()] == str(last)


def test_console_script_is_registered():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["elmo-embed"] == "elmo_repro.embed:main"


def test_cli_refuses_to_overwrite_its_input_or_a_directory(tmp_path, model_dir, capsys):
    """The output may not be the input (same path, another name for it, a hard link) nor a
    directory: the text is left untouched and the error names both files."""
    import os

    src = tmp_path / "in.txt"
    write_input(src, CLI_LINES)
    before = src.read_bytes()
    link = tmp_path / "link.txt"
    os.link(src, link)
    for output in (src, tmp_path / "." / "in.txt", link):
        with pytest.raises(SystemExit) as exit_info:
            main([str(src), str(output), "--model", str(model_dir)])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert "is the input file" in err and str(src) in err
    assert src.read_bytes() == before
    with pytest.raises(SystemExit):
        main([str(src), str(tmp_path), "--model", str(model_dir)])
    assert f"output {tmp_path} is a directory" in capsys.readouterr().err


def test_cli_cuda_without_a_gpu_and_threads(tmp_path, model_dir, capsys, monkeypatch):
    src, dst = tmp_path / "in.txt", tmp_path / "out.hdf5"
    write_input(src, CLI_LINES)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit):
        main([str(src), str(dst), "--model", str(model_dir), "--device", "cuda"])
    err = capsys.readouterr().err
    assert "--device cuda: no CUDA device is available" in err and "Traceback" not in err
    # issue 30: any other unusable device (mps here, a CPU build) was a bare traceback
    for device in ("mps", "meta"):
        with pytest.raises(SystemExit) as exit_:
            main([str(src), str(dst), "--model", str(model_dir), "--device", device])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and f"--device {device}: " in err and "use --device cpu" in err
        assert "Traceback" not in err and not dst.exists()
    with pytest.raises(SystemExit):
        main([str(src), str(dst), "--model", str(model_dir), "--threads", "0"])
    assert "--threads must be at least 1" in capsys.readouterr().err
    threads = torch.get_num_threads()
    try:
        assert main([str(src), str(dst), "--model", str(model_dir), "--threads", "1"]) == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    assert h5py.File(dst, "r")["sentence_to_index"].shape == (1,)


def test_cli_old_mac_line_endings_are_an_error(tmp_path, model_dir, capsys):
    src, dst = tmp_path / "in.txt", tmp_path / "out.hdf5"
    src.write_bytes(b"The cat sat .\rHello\rEU rejects it\r")
    assert main([str(src), str(dst), "--model", str(model_dir)]) == 1
    err = capsys.readouterr().err
    assert f"{src}:1" in err and "old Mac" in err and "Traceback" not in err
    assert not dst.exists() and not list(tmp_path.glob(".out.hdf5.*"))


def test_cli_sigterm_leaves_nothing_behind(tmp_path, model_dir):
    """A batch scheduler's SIGTERM mid-run: exit status 143, no output, no temporary file."""
    import signal
    import subprocess
    import sys
    import time

    src, dst = tmp_path / "in.txt", tmp_path / "out.hdf5"
    write_input(src, ["the cat sat on the mat in the sun"] * 50000, bom=False, crlf=False)
    process = subprocess.Popen([sys.executable, "-m", "elmo_repro.embed", str(src), str(dst), "--model",
                                str(model_dir), "--batch-size", "8", "--threads", "1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".out.hdf5.*")) and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert list(tmp_path.glob(".out.hdf5.*")), "the run never started writing"
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 128 + signal.SIGTERM
    assert not dst.exists() and not list(tmp_path.glob(".out.hdf5.*"))


def test_cli_names_a_wrong_weight_file_or_swapped_arguments(tmp_path, model_dir, capsys):
    src, dst = tmp_path / "in.txt", tmp_path / "out.hdf5"
    write_input(src, CLI_LINES)
    options, weights = model_dir / "options.json", model_dir / "weights.pt"
    cases = [(["--model", str(options), "--weight-file", str(tmp_path)], f"--weight-file {tmp_path} is a directory"),
             (["--model", str(weights), "--weight-file", str(options)], "look swapped")]
    for args, problem in cases:
        with pytest.raises(SystemExit):
            main([str(src), str(dst), *args])
        assert problem in capsys.readouterr().err
    assert main([str(src), str(dst), "--model", str(options), "--weight-file", str(weights)]) == 0


def test_a_frozen_biLM_put_in_train_mode_still_embeds_at_inference(model):
    """issue 30: `model.train()` on the biLM after building ElmoEmbedder/Elmo applied its dropout
    inside embedding (outputs differed by ~0.1 between calls)."""
    embedder = ElmoEmbedder(model)
    expected = embedder.embed_sentence(SENTENCES[0])
    model.train()
    try:
        np.testing.assert_array_equal(embedder.embed_sentence(SENTENCES[0]), expected)
        assert not model.training                              # set back to eval by the frozen Elmo
        elmo = Elmo(model, n_outputs=1)
        model.train()
        elmo.train()                                           # the task model trains; the biLM does not
        torch.testing.assert_close(elmo([SENTENCES[0]]).layers[0].numpy(), expected, rtol=0, atol=0)
    finally:
        model.eval()
