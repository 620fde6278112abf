"""The NER BiLSTM-CRF: components, a tiny reproducible training run, and the train_ner stage."""

import contextlib
import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from elmo_repro.data.conll import read_conll2003
from elmo_repro.tasks.char_cnn import CharCNN, build_char_vocab, encode_chars
from elmo_repro.tasks.ner import BiLSTM, build_embeddings, train_and_evaluate, train_batches, word_id

CONLL = Path(__file__).resolve().parents[3] / "shared" / "data" / "conll2003"
CFG = {
    "seeds": [0], "variants": ["baseline", "elmo"], "max_train_sentences": 200, "epochs": 1,
    "batch_size": 32, "learning_rate": 0.01, "char_embedding_dim": 8, "char_filters": 16, "char_kernel": 3,
    "lstm_hidden": 16, "dropout": 0.5,
    "elmo": {"do_layer_norm": False, "l2_coef": 0.001, "dropout": 0.5, "at_output": True},
}
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
    for b, n in enumerate(lengths.tolist()):
        torch.testing.assert_close(got[b, :n], expected[b, :n])


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
    torch.testing.assert_close(out[0, :2], alone[0])
    assert (out[1] == 0).all() and out.shape == (2, 3, 6)


def test_embeddings_exact_then_lowercase_then_unk():
    index, matrix = build_embeddings((["the", "Paris", "x"], np.eye(3, dtype=np.float32)),
                                     [{"tokens": ["The", "Paris", "paris", "unseen"]}], seed=0)
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


def run_logged(cfg, data, vectors, features, seed):
    logged = []
    result = train_and_evaluate(cfg, data, vectors, features, seed, log_metrics=lambda m, s: logged.append((s, m)))
    return result, logged


def test_baseline_trains_and_reproduces(data, vectors):
    cfg = dict(CFG, epochs=4, learning_rate=0.05, dropout=0.1)    # enough to leave the all-O start
    first, logged = run_logged(cfg, data, vectors, None, seed=0)
    assert 0.0 < first["dev_f1"] <= 100.0 and 0.0 < first["test_f1"] <= 100.0
    assert first["epochs"] == 4 and first["train_sentences"] == 200
    assert [step for step, _ in logged] == [1, 2, 3, 4]
    assert logged[first["best_epoch"] - 1][1]["epoch_dev_f1"] == first["dev_f1"] == max(first["dev_f1_per_epoch"])
    again, logged_again = run_logged(cfg, data, vectors, None, seed=0)
    other, logged_other = run_logged(cfg, data, vectors, None, seed=1)
    for key in ("dev_f1", "test_f1", "dev_precision", "test_recall", "best_epoch"):
        assert again[key] == first[key]
    assert [m["train_loss"] for _, m in logged_again] == [m["train_loss"] for _, m in logged]
    assert [m["train_loss"] for _, m in logged_other] != [m["train_loss"] for _, m in logged]
    assert (other["dev_f1"], other["test_f1"]) != (first["dev_f1"], first["test_f1"])


def test_elmo_variant_trains_and_reproduces(data, vectors):
    features = synthetic_features(data)
    cfg = dict(CFG, epochs=2)
    first = train_and_evaluate(cfg, data, vectors, features, seed=0)
    assert 0.0 <= first["dev_f1"] <= 100.0 and first["best_epoch"] in (1, 2)
    assert len(first["dev_f1_per_epoch"]) == 2 and first["dev_f1"] == max(first["dev_f1_per_epoch"])
    again = train_and_evaluate(cfg, data, vectors, features, seed=0)
    assert (again["dev_f1"], again["test_f1"]) == (first["dev_f1"], first["test_f1"])


def test_feature_shape_mismatch_is_rejected(data, vectors):
    features = synthetic_features(data)
    features["dev"][3] = features["dev"][3][:, :-1]
    with pytest.raises(ValueError, match="sentence 3"):
        train_and_evaluate(CFG, data, vectors, features, seed=0)


def write_allennlp_hdf5(path, sentences, features):
    """allennlp ``elmo --all`` layout: one dataset per sentence index + ``sentence_to_index`` JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as out:
        for i, layers in enumerate(features):
            out.create_dataset(str(i), data=layers)
        index = {" ".join(s["tokens"]): str(i) for i, s in enumerate(sentences)}
        out.create_dataset("sentence_to_index", data=json.dumps(index))


def test_stage_writes_ner_json(tmp_path, monkeypatch, data, vectors):
    from elmo_repro.data.conll import write_jsonl
    from elmo_repro.vectors import save_word2vec_text
    from stages import train_ner as stage

    small = {split: sents[:120] for split, sents in data.items()}
    features = synthetic_features(small)
    monkeypatch.chdir(tmp_path)
    for split in ("train", "dev", "test"):
        Path("data/conll2003").mkdir(parents=True, exist_ok=True)
        with open(f"data/conll2003/{split}.jsonl", "w", encoding="utf-8") as handle:
            write_jsonl(handle, small[split])
        write_allennlp_hdf5(Path(f"data/features/conll2003/{split}.hdf5"), small[split], features[split])
    save_word2vec_text("data/vectors/vectors.txt", *vectors)

    children = []

    class FakeRun:
        run_id = "stage-run"

        def __init__(self, name="stage"):
            self.name, self.metrics = name, []
            self.run_id = f"id-{name}"

        def log_metrics(self, metrics, step=None):
            self.metrics.append((step, dict(metrics)))

        def log_artifact(self, path):
            assert Path(path).is_file()

        @contextlib.contextmanager
        def child(self, name, params=None, tags=None):
            assert tags == {"variant": params["variant"], "seed": str(params["seed"])}
            children.append(FakeRun(name))
            yield children[-1]

    @contextlib.contextmanager
    def fake_stage_run(name, params, sections):
        assert name == "train_ner" and sections == ["ner"]
        yield FakeRun()

    monkeypatch.setattr(stage, "stage_run", fake_stage_run)
    monkeypatch.setattr(stage, "load_params", lambda: {"ner": dict(CFG, seeds=[0, 1], max_train_sentences=0)})
    stage.main([])
    out = json.loads(Path("results/metrics/ner.json").read_text(encoding="utf-8"))
    assert (out["task"], out["dataset"], out["metric"], out["stage_run_id"]) == ("ner", "conll2003", "span_f1",
                                                                                 "id-stage")
    assert [c.name for c in children] == ["baseline-seed0", "baseline-seed1", "elmo-seed0", "elmo-seed1"]
    for variant in ("baseline", "elmo"):
        summary = out["variants"][variant]
        runs = summary["runs"]
        assert [r["seed"] for r in runs] == [0, 1]
        assert runs[0]["mlflow_run_id"] == f"id-{variant}-seed0" and runs[0]["best_epoch"] == 1
        test = np.array([r["test_f1"] for r in runs])
        assert summary["test_f1_mean"] == pytest.approx(test.mean())
        assert summary["test_f1_std"] == pytest.approx(test.std(ddof=1))
    epoch_logs = [m for step, m in children[0].metrics if step == 1]
    assert "epoch_dev_f1" in epoch_logs[0]
