"""ELMo feature files: allennlp `elmo --all` layout, stateless vectors, float16 storage."""


import h5py
import numpy as np
import pytest
import torch
from fp_bounds import UF16, bilm_bound

from elmo_repro.bilm.model import BiLM, BiLMConfig
from elmo_repro.elmo.features import read_all, read_sentence_index, write_features
from elmo_repro.io import InputError

SENTENCES = [["The", "cat", "sat", "."], ["Hello"], ["The", "cat", "sat", "."], ["a", "/", "b", "<S>"],
             ["EU", "rejects", "German", "call"]]


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = BiLMConfig(filters=((1, 4), (2, 4)), char_dim=4, n_highway=1, cell_dim=8, projection_dim=4, n_layers=2)
    return BiLM(config).eval()


def test_layout_and_round_trip(tmp_path, model):
    path = tmp_path / "f.hdf5"
    write_features(path, model, SENTENCES, batch_size=2, dtype="float16")
    with h5py.File(path) as handle:
        assert set(handle.keys()) == {"0", "1", "2", "3", "4", "sentence_to_index"}
        assert handle["0"].shape == (3, 4, 8) and handle["0"].dtype == np.float16
        index = read_sentence_index(handle)
    assert index["Hello"] == "1" and index["a / b <S>"] == "3"
    layers = read_all(path)
    assert [a.shape[1] for a in layers] == [len(s) for s in SENTENCES]
    # duplicates keep their own index; their float32 vectors come from other batches (within twice the
    # chain bound, fp_bounds.py), and float16 storage moves each by at most |stored| 2^-11 (2^-25
    # below float16's normal range): a bit-exact match would depend on the CPU
    a, b = layers[0].astype(np.float32), layers[2].astype(np.float32)
    chain = 2 * bilm_bound(model.config, len(SENTENCES[0]) + 2, np.abs(a).max())
    np.testing.assert_allclose(a, b, rtol=0, atol=chain + UF16 * (np.abs(a).max() + np.abs(b).max()) + 2.0 ** -24)


def test_vectors_do_not_depend_on_the_batch(tmp_path, model):
    write_features(tmp_path / "a.hdf5", model, SENTENCES, batch_size=1, dtype="float32")
    write_features(tmp_path / "b.hdf5", model, SENTENCES[::-1], batch_size=5, dtype="float32")
    alone, together = read_all(tmp_path / "a.hdf5"), read_all(tmp_path / "b.hdf5")[::-1]
    steps = max(map(len, SENTENCES)) + 2
    for x, y in zip(alone, together):
        # other batches, other float32 orderings: twice the biLM chain bound (fp_bounds.py)
        np.testing.assert_allclose(x, y, rtol=0, atol=2 * bilm_bound(model.config, steps, np.abs(x).max()))


def test_truncated_file_is_a_clear_error(tmp_path, model):
    path = tmp_path / "f.hdf5"
    write_features(path, model, SENTENCES)
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(InputError, match="f.hdf5"):
        read_all(path)
