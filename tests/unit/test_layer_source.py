"""Layer sources: cached HDF5 layers (read lazily) and the live biLM agree within float16 rounding."""

import h5py
import numpy as np
import pytest
import torch
from fp_bounds import UF16, bilm_bound

from elmo_repro.bilm.model import BiLM, BiLMConfig
from elmo_repro.data.examples import read_split, read_texts, write_split
from elmo_repro.elmo.features import write_features
from elmo_repro.elmo.layer_source import CachedLayers, cached_example_layers, feature_path
from elmo_repro.elmo.live_layers import LiveLayers
from elmo_repro.io import InputError

SENTENCES = [["The", "cat", "sat", "."], ["Hello"], ["EU", "rejects", "German", "call", "to", "boycott"],
             ["a", "/", "b"], ["The", "cat"]]


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = BiLMConfig(filters=((1, 4), (2, 4)), char_dim=4, n_highway=1, cell_dim=8, projection_dim=4, n_layers=2)
    model = BiLM(config).eval()
    with torch.no_grad():                      # larger activations so float16 rounding is visible
        for p in model.parameters():
            p.mul_(3.0)
    return model


def test_cached_and_live_layers_agree_within_float16_rounding(tmp_path, model):
    write_features(tmp_path / "f.hdf5", model, SENTENCES, batch_size=2, dtype="float16")
    cached = CachedLayers(tmp_path / "f.hdf5", expected=len(SENTENCES))
    live = LiveLayers(model, SENTENCES, cache_words=sorted({w for s in SENTENCES for w in s}))
    assert (cached.n_layers, cached.dim) == (live.n_layers, live.dim) == (3, 8)
    order = [4, 0, 2]
    for a, b in zip(cached.batch(order), live.batch(order)):
        assert a.dtype == np.float16 and b.dtype == np.float32 and a.shape == b.shape
        # float16 keeps 11 significant bits: storing x moves it by at most |x|·2^-11 (half an ulp),
        # or 2^-25 below float16's normal range; x itself comes from other batches (and the token
        # cache) than b: within twice the biLM chain bound (fp_bounds.py) of b
        chain = 2 * bilm_bound(model.config, max(map(len, SENTENCES)) + 2, np.abs(b).max())
        bound = (np.abs(b) + chain) * UF16 + 2.0 ** -25 + chain
        assert (np.abs(a.astype(np.float32) - b) <= bound).all()
        assert not np.array_equal(a.astype(np.float32), b)          # the rounding is really there


def test_cached_layers_read_lazily(tmp_path, model):
    write_features(tmp_path / "f.hdf5", model, SENTENCES, dtype="float16")
    cached = CachedLayers(tmp_path / "f.hdf5")
    # Nothing is held in memory but the open file: every batch reads its datasets from disk.
    assert not any(isinstance(v, np.ndarray) for v in vars(cached).values())
    first = cached.batch([1])[0]
    with h5py.File(tmp_path / "f.hdf5", "r") as handle:
        np.testing.assert_array_equal(first, handle["1"][()])
    cached.close()


def test_cached_layers_errors_name_the_file(tmp_path, model):
    with pytest.raises(InputError, match="missing.hdf5.*not found"):
        CachedLayers(tmp_path / "missing.hdf5")
    write_features(tmp_path / "f.hdf5", model, SENTENCES, dtype="float16")
    with pytest.raises(InputError, match="holds 5 sentences, the split has 6"):
        CachedLayers(tmp_path / "f.hdf5", expected=6)
    with h5py.File(tmp_path / "gap.hdf5", "w") as out:
        out.create_dataset("0", data=np.zeros((3, 1, 8)))
        out.create_dataset("2", data=np.zeros((3, 1, 8)))
    with pytest.raises(InputError, match="gap.hdf5.*0..N-1"):
        CachedLayers(tmp_path / "gap.hdf5")
    (tmp_path / "junk.hdf5").write_text("not hdf5")
    with pytest.raises(InputError, match="unreadable"):
        CachedLayers(tmp_path / "junk.hdf5")


def test_example_layers_point_at_shared_texts(tmp_path, model):
    # SNLI-like: two pairs share a premise; one hypothesis is also another pair's premise
    pairs = [{"premise": SENTENCES[0], "hypothesis": SENTENCES[1]},
             {"premise": SENTENCES[0], "hypothesis": SENTENCES[2]},
             {"premise": SENTENCES[2], "hypothesis": SENTENCES[3]}]
    assert write_split(tmp_path, "dev", pairs, ("premise", "hypothesis")) == {"examples": 3, "texts": 4, "references": 6}
    examples = read_split(tmp_path, "dev", ("premise", "hypothesis"))
    assert [e["text_ids"] for e in examples] == [{"premise": 0, "hypothesis": 1}, {"premise": 0, "hypothesis": 2},
                                                 {"premise": 2, "hypothesis": 3}]
    assert [{f: e[f] for f in ("premise", "hypothesis")} for e in examples] == pairs
    texts = read_texts(tmp_path / "dev.texts.jsonl")
    assert texts == SENTENCES[:4]
    write_features(feature_path(tmp_path, "dev"), model, texts, dtype="float16")
    layers = cached_example_layers(tmp_path, "dev", examples, ("premise", "hypothesis"))
    assert (layers.n_layers, layers.dim, len(layers)) == (3, 8, 3)
    stored = CachedLayers(feature_path(tmp_path, "dev")).batch(range(4))
    batch = layers.batch([2, 0, 1])
    assert [sorted(item) for item in batch] == [["hypothesis", "premise"]] * 3
    for item, example in zip(batch, [examples[2], examples[0], examples[1]]):
        for field in ("premise", "hypothesis"):
            np.testing.assert_array_equal(item[field], stored[example["text_ids"][field]])
    # a text shared within the batch is read once: the two examples hold the same array
    assert batch[1]["premise"] is batch[2]["premise"]
    assert batch[0]["premise"] is batch[2]["hypothesis"]
    with pytest.raises(ValueError, match=r"example 1: hypothesis refers to text 7, not one of the 4 texts of .*dev.hdf5"):
        cached_example_layers(tmp_path, "dev", [examples[0], {"text_ids": {"premise": 0, "hypothesis": 7}}],
                              ("premise", "hypothesis"))
    with pytest.raises(InputError, match="test.hdf5.*not found"):
        cached_example_layers(tmp_path, "test", examples, ("premise", "hypothesis"))


def test_a_document_gets_the_layers_of_each_of_its_sentences(tmp_path, model):
    documents = [{"sentences": [SENTENCES[0], SENTENCES[1], SENTENCES[0]]}, {"sentences": [SENTENCES[2]]}]
    write_split(tmp_path, "dev", documents, ("sentences",))
    examples = read_split(tmp_path, "dev", ("sentences",))
    write_features(feature_path(tmp_path, "dev"), model, read_texts(tmp_path / "dev.texts.jsonl"), dtype="float16")
    layers = cached_example_layers(tmp_path, "dev", examples, ("sentences",))
    stored = CachedLayers(feature_path(tmp_path, "dev")).batch(range(3))
    first, second = layers.batch([0, 1])
    assert [a.shape[1] for a in first["sentences"]] == [4, 1, 4] and len(second["sentences"]) == 1
    np.testing.assert_array_equal(first["sentences"][1], stored[1])
    np.testing.assert_array_equal(second["sentences"][0], stored[2])
    assert first["sentences"][0] is first["sentences"][2]                  # one read per text
    with pytest.raises(ValueError, match=r"example 1: sentences refers to text \[0, 9\], not one of the 3 texts"):
        cached_example_layers(tmp_path, "dev", [examples[0], {"text_ids": {"sentences": [0, 9]}}], ("sentences",))
