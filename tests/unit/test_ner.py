"""The NER BiLSTM-CRF: components, reproducible training runs on real data, and the floor."""

from pathlib import Path

import numpy as np
import pytest
import torch
from fp_bounds import ELEMENTWISE, U32, gamma
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from elmo_repro.tasks.ner.reader import read_conll2003
from elmo_repro.experiments.specs import ElmoSpec, RunSpec
from elmo_repro.nn.bilstm import BiLSTM
from elmo_repro.nn.char_cnn import CharCNN, build_char_vocab, encode_chars
from elmo_repro.tasks.ner.task import TASK, build_embeddings, word_id
from elmo_repro.training.trainer import train_batches, train_run

CONLL = Path(__file__).resolve().parents[3] / "shared" / "data" / "conll2003"
N_LAYERS, ELMO_DIM = 3, 8


@pytest.fixture(scope="module")
def data():
    if not CONLL.is_dir():
        pytest.skip("CoNLL-2003 mirror not present")
    # 200 training sentences are taken by max_train_sentences; dev/test cut here to keep it fast.
    return {"train": read_conll2003(CONLL / "eng.train")[:400],
            "dev": read_conll2003(CONLL / "eng.testa")[:150],
            "test": read_conll2003(CONLL / "eng.testb")[:150]}


@pytest.fixture(scope="module")
def vectors(data):
    words = sorted({t.lower() for s in data["train"][:300] for t in s["tokens"]})
    return words, np.random.default_rng(0).normal(size=(len(words), 10)).astype(np.float32)


def synthetic_features(data, seed=0):
    rng = np.random.default_rng(seed)
    return {split: [rng.normal(size=(N_LAYERS, len(s["tokens"]), ELMO_DIM)).astype(np.float16) for s in sents]
            for split, sents in data.items()}


def test_bilstm_equals_packed_nn_lstm():
    torch.manual_seed(0)
    ours = BiLSTM(5, 4, layers=2, dropout=0.0)
    ref = torch.nn.LSTM(5, 4, num_layers=2, bidirectional=True, batch_first=True)
    with torch.no_grad():
        for layer in range(2):
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(ref, f"{name}_l{layer}").copy_(getattr(ours.forward_lstms[layer], f"{name}_l0"))
                getattr(ref, f"{name}_l{layer}_reverse").copy_(getattr(ours.backward_lstms[layer], f"{name}_l0"))
    x, lengths = torch.randn(3, 6, 5), torch.tensor([6, 2, 4])
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    expected, _ = pad_packed_sequence(ref(packed)[0], batch_first=True)
    got = ours(x, lengths)
    # two float32 orderings of the same 2-layer LSTM chain over 6 steps (fp_bounds.py): a step is
    # the gate dot products (input 5 or 8, hidden 4, 2 biases) and the elementwise gate roundings,
    # relative to the largest |value| in play (the inputs; |h| <= 1)
    roundings = 2 * 6 * (8 + 4 + 2 + ELEMENTWISE)
    bound = 2 * roundings * U32 * max(float(x.abs().amax()), 1.0)
    for b, n in enumerate(lengths.tolist()):
        torch.testing.assert_close(got[b, :n], expected[b, :n], rtol=0, atol=bound)


def test_char_cnn_ignores_padding():
    vocab = build_char_vocab(["abc", "de"])
    assert vocab == {"a": 2, "b": 3, "c": 4, "d": 5, "e": 6}
    ids = encode_chars(["abc", "dz"], vocab)
    assert ids.tolist() == [[2, 3, 4], [5, 1, 0]]                    # z unseen -> UNK, then padding
    torch.manual_seed(0)
    cnn = CharCNN(7, 4, 6, 3)
    alone = cnn(torch.from_numpy(ids)[None])                          # (1, 2, 6)
    wider = torch.zeros(2, 3, 9, dtype=torch.long)                    # more words and characters
    wider[0, :2, :3] = torch.from_numpy(ids)
    out = cnn(wider)
    # another batch, another float32 ordering of each convolution (4 x 3 products, their sum and
    # the bias: 13 roundings relative to sum|terms|); the max and the ReLU are exact
    terms = cnn.embedding.weight.detach().abs().amax() * cnn.conv.weight.detach().abs().sum((1, 2)) \
        + cnn.conv.bias.detach().abs()
    torch.testing.assert_close(out[0, :2], alone[0], rtol=0, atol=2 * gamma(13) * float(terms.amax()))
    assert (out[1] == 0).all() and out.shape == (2, 3, 6)


def test_embeddings_exact_then_lowercase_then_unk():
    index, matrix = build_embeddings((["the", "Paris", "x"], np.eye(3, dtype=np.float32)),
                                     ["The", "Paris", "paris", "unseen"], seed=0)
    assert matrix.shape == (4, 3) and (matrix[0] == 0).all()          # PAD, UNK, Paris, the ("x" dropped)
    assert word_id("The", index) == word_id("the", index) and np.array_equal(matrix[word_id("The", index)],
                                                                               [1, 0, 0])
    assert word_id("unseen", index) == 1 and word_id("paris", index) == 1


def test_batches_are_length_sorted_and_seeded():
    lengths = np.array([5, 1, 3, 5, 2, 1, 4, 3, 2, 5])
    first = train_batches(lengths, 3, np.random.default_rng(0))
    assert sorted(i for b in first for i in b) == list(range(10))
    # Each batch is a contiguous run of the length-sorted order.
    spans = sorted((min(lengths[b]), max(lengths[b])) for b in first)
    assert all(prev[1] <= nxt[0] for prev, nxt in zip(spans, spans[1:]))
    assert first == train_batches(lengths, 3, np.random.default_rng(0))
    assert first != train_batches(lengths, 3, np.random.default_rng(1))


def train(data, vectors, seed, features=None, epochs=2, lr=0.01, dropout=0.5, log=None):
    cfg = {"trainer": {"epochs": epochs, "batch_size": 32, "eval_batch_size": 128,
                       "optimizer": {"name": "adam", "lr": lr}, "grad_clip": 5.0, "max_train_examples": 200},
           "model": {"char_embedding_dim": 8, "char_filters": 16, "char_kernel": 3, "lstm_hidden": 16,
                     "lstm_layers": 1, "dropout": dropout, "crf_start_end": False}}
    elmo = ElmoSpec(placement="both", l2_coef=0.001) if features is not None else None
    spec = RunSpec(task="ner", elmo_name="elmo" if elmo else "baseline", elmo=elmo, seed=seed, train_fraction=1.0)
    layers = None
    if features is not None:
        layers = {split: ListLayers(f) for split, f in features.items()}
    return train_run(TASK, spec, cfg, data, vectors, layers, log)


class ListLayers:
    """An in-memory layer source (the interface of CachedLayers)."""

    def __init__(self, features):
        self.features, self.n_layers, self.dim = features, features[0].shape[0], features[0].shape[2]

    def batch(self, indices):
        return [{"tokens": self.features[i]} for i in indices]


def test_baseline_trains_and_reproduces(data, vectors):
    logged = []
    first = train(data, vectors, 0, epochs=4, lr=0.05, dropout=0.1, log=lambda m, s: logged.append((s, m)))
    m = first.metrics
    assert 0.0 < m["dev_f1"] <= 100.0 and 0.0 < m["test_f1"] <= 100.0
    assert m["epochs"] == 4 and m["train_examples"] == 200
    assert [step for step, _ in logged] == [1, 2, 3, 4]
    assert logged[m["best_epoch"] - 1][1]["epoch_dev_f1"] == m["dev_f1"] == max(h["dev_f1"] for h in first.history)
    again = train(data, vectors, 0, epochs=4, lr=0.05, dropout=0.1)
    other = train(data, vectors, 1, epochs=4, lr=0.05, dropout=0.1)
    assert again.metrics == m and again.history == first.history
    assert [h["train_loss"] for h in other.history] != [h["train_loss"] for h in first.history]
    assert (other.metrics["dev_f1"], other.metrics["test_f1"]) != (m["dev_f1"], m["test_f1"])


def test_elmo_run_trains_and_reproduces(data, vectors):
    features = synthetic_features(data)
    first = train(data, vectors, 0, features)
    assert 0.0 <= first.metrics["dev_f1"] <= 100.0 and first.metrics["best_epoch"] in (1, 2)
    assert set(first.mixes) == {"input", "output"}
    again = train(data, vectors, 0, features)
    assert again.metrics == first.metrics


def test_feature_shape_mismatch_is_rejected(data, vectors):
    features = synthetic_features(data)
    features["dev"][3] = features["dev"][3][:, :-1]
    with pytest.raises(ValueError, match="do not match an example of"):
        train(data, vectors, 0, features)


def test_floor_is_each_tokens_most_frequent_training_tag():
    train_set = [{"tokens": ["Paris", "is", "big"], "ner": ["I-LOC", "O", "O"]},
                 {"tokens": ["Paris", "Hilton"], "ner": ["I-PER", "I-PER"]},
                 {"tokens": ["Paris", "again"], "ner": ["I-LOC", "O"]}]
    test = [{"tokens": ["Paris", "Hilton", "is", "new"], "ner": ["I-PER", "I-PER", "O", "O"]}]
    predicted = TASK.floor(train_set, test)
    assert predicted == [["B-LOC", "B-PER", "O", "O"]]            # Paris -> LOC (2 of 3), Hilton -> PER
    # gold has one entity (Paris Hilton, PER); predicted two, none matching: P = R = F1 = 0
    assert TASK.score(test, predicted) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
