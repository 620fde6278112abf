"""The CoVe translation model: data, model, BLEU, training and resume."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from elmo_repro.cove.bleu import corpus_bleu, detokenize
from elmo_repro.cove.published_bleu import tokenized_lowercased_bleu
from elmo_repro.cove.model import BOS_ID, EOS_ID, CoVeConfig, CoVeTranslator
from elmo_repro.cove.train import CoVeTrainConfig, SourceVectors, pad, train_cove
from elmo_repro.data.multi30k import SIZES, Pair, build_vocabulary, drop_held_out_pairs, read_pairs
from elmo_repro.io import InputError

from fp_bounds import ELEMENTWISE, gamma, lstm_step_roundings

pytestmark = pytest.mark.usefixtures("one_thread")

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def test_bleu_of_a_pair_worked_by_hand():
    # unigrams 5/6 (the second "the" is clipped), bigrams 3/5, trigrams 2/4, 4-grams 1/3, no brevity
    # penalty: BLEU = (5/6 * 3/5 * 1/2 * 1/3) ** (1/4) = 53.73
    bleu, line, signature = corpus_bleu(["the cat sat on the mat"], ["the cat sat on a mat"])
    assert bleu == pytest.approx(100 * (5 / 6 * 3 / 5 * 1 / 2 * 1 / 3) ** 0.25)
    assert "tok:13a" in signature and "case:mixed" in signature and line.startswith("BLEU = 53.73")
    # a short hypothesis: BP = exp(1 - 6/5); every n-gram of "the cat sat on a" is in the reference
    short, _, _ = corpus_bleu(["the cat sat on a"], ["the cat sat on a mat"])
    assert short == pytest.approx(100 * np.exp(1 - 6 / 5))
    with pytest.raises(ValueError, match="1 hypotheses for 2 references"):
        corpus_bleu(["a"], ["a", "b"])


def test_tokenized_lowercased_bleu_as_published_scores_are_computed():
    hypotheses = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee."]
    references = ["Ein Mann fährt ein Fahrrad.", "Zwei hunde spielen im Schnee."]
    bleu, line, signature = tokenized_lowercased_bleu(hypotheses, references)
    # Moses splits the full stops and lower-casing makes "Hunde" match: 11 hypothesis tokens, all in
    # the references (11/11); bigrams 3/4 + 5/5 = 8/9; trigrams 1/3 + 4/4 = 5/7; 4-grams 0/2 + 3/3 = 3/5;
    # brevity penalty exp(1 - 12/11).
    expected = 100 * math.exp(1 - 12 / 11) * (1 * 8 / 9 * 5 / 7 * 3 / 5) ** 0.25
    assert bleu == pytest.approx(expected, rel=1e-9) and "100.0/88.9/71.4/60.0" in line
    assert "case:lc" in signature and "tok:none" in signature
    cased, _, cased_signature = corpus_bleu(hypotheses, references)
    assert cased < bleu and "case:mixed" in cased_signature and "tok:13a" in cased_signature


def test_german_detokenization():
    assert detokenize(["Ein", "Mann", ",", "der", '"', "Hallo", '"', "sagt", "."]) == 'Ein Mann, der "Hallo" sagt.'


def test_multi30k_counts_and_the_snli_filter():
    raw = SHARED / "multi30k" / "raw"
    pairs = {split: read_pairs(raw, split) for split in SIZES}
    assert {split: len(p) for split, p in pairs.items()} == SIZES
    first = pairs["train"][0]
    assert first.target[-2:] == ["Büsche", "."] and first.reference.endswith("Büsche.") and first.source[0] == "Two"
    kept, dropped = drop_held_out_pairs(pairs["train"], [["two", "young", ",", "White", "males", "are", "outside",
                                                          "near", "many", "bushes"]])
    assert dropped == 1 and kept[0] == pairs["train"][1]


def test_target_vocabulary_order():
    assert build_vocabulary([["b", "a", "b"], ["c", "a"]], 2) == ["<pad>", "<unk>", "<s>", "</s>", "a", "b"]


def tiny_model(n_vectors=12, n_target=10, seed=0):
    torch.manual_seed(seed)
    vectors = torch.cat([torch.zeros(1, 6), torch.randn(n_vectors - 1, 6)])
    return CoVeTranslator(vectors, n_target, CoVeConfig(hidden=8, layers=2, target_dim=5, dropout=0.0)).eval()


def test_loss_shape_and_padding_does_not_change_a_sentence():
    model = tiny_model()
    source, lengths = pad([[4, 5, 6, 7], [8, 9]])
    target, _ = pad([[BOS_ID, 4, 5, EOS_ID], [BOS_ID, 6, EOS_ID]])
    losses = model(source, lengths, target)
    assert losses.shape == (2, 3) and losses[1, 2] == 0 and (losses[0] > 0).all()
    alone = model(torch.tensor([[8, 9]]), torch.tensor([2]), torch.tensor([[BOS_ID, 6, EOS_ID]]))
    # the same math in another batch: both within the float32 chain bound of the exact value
    # (fp_bounds): the encoder's 2 steps x 2 layers, then per decoder step 2 LSTM cells (input
    # 5 + 16 or 16, recurrent 16), the attention (16-term dot products, a 2-way softmax and sum),
    # W2 (32 terms), the output layer (16) and the 10-way log-softmax
    encoder = 2 * lstm_step_roundings(16, 8, 8, 2)
    decoder = 2 * (21 + 16 + 1 + ELEMENTWISE) + 16 + 4 + 2 + 32 + 2 + 16 + 10 + 4
    bound = 2 * gamma(encoder + 2 * decoder) * float(losses.detach().abs().max())
    assert (alone[0] - losses[1, :2]).abs().max() <= bound


def test_beam_of_one_is_greedy():
    model = tiny_model(seed=3)
    source = [[4, 5, 6], [7, 8, 9, 10, 11]]
    greedy = model.greedy(*pad(source), max_length=7)
    assert [model.beam(torch.tensor([s]), len(s), 1, 7) for s in source] == greedy


def copy_task(n, rng):
    """German word i+4 translates English vector i+1; word order kept."""
    pairs = []
    for line in range(n):
        ids = rng.integers(0, 8, size=rng.integers(2, 6))
        pairs.append(Pair(line + 1, [f"e{i}" for i in ids], [f"g{i}" for i in ids], " ".join(f"g{i}" for i in ids)))
    return pairs


def test_the_model_learns_a_word_for_word_translation():
    rng = np.random.default_rng(0)
    vectors = SourceVectors([f"e{i}" for i in range(8)], np.eye(8, dtype=np.float32))
    config = CoVeTrainConfig(epochs=30, batch_size=16, lr=0.01, min_count=1, max_length=8, beam_size=2, seed=0)
    model, words, result = train_cove(copy_task(400, rng), copy_task(50, rng), copy_task(50, rng), vectors,
                                      CoVeConfig(hidden=16, layers=2, target_dim=8, dropout=0.0), config,
                                      log=lambda m: None)
    assert result.metrics["test_bleu"] > 90 and result.metrics["source_coverage"] == 1.0
    assert len(result.history) == 30 and words[:4] == ["<pad>", "<unk>", "<s>", "</s>"]


def test_a_killed_run_resumes_with_identical_weights(tmp_path):
    rng = np.random.default_rng(1)
    data = copy_task(60, rng), copy_task(10, rng), copy_task(10, rng)
    vectors = SourceVectors([f"e{i}" for i in range(8)], np.eye(8, dtype=np.float32))
    model_config = CoVeConfig(hidden=6, layers=2, target_dim=4, dropout=0.3)     # dropout: the RNG resumes too

    messages = []

    def run(epochs, checkpoint, lr=0.01):
        config = CoVeTrainConfig(epochs=epochs, batch_size=8, lr=lr, min_count=1, max_length=6, beam_size=1, seed=5)
        return train_cove(*data, vectors, model_config, config, checkpoint, log=messages.append)

    whole, _, whole_result = run(3, tmp_path / "whole.pt")
    run(2, tmp_path / "killed.pt")                           # "killed" after epoch 2
    messages.clear()
    resumed, _, resumed_result = run(3, tmp_path / "killed.pt")
    assert "resumed after epoch 2" in messages
    def no_time(history):
        return [{k: v for k, v in row.items() if k != "seconds"} for row in history]

    assert no_time(resumed_result.history) == no_time(whole_result.history) and len(whole_result.history) == 3
    saved_whole = torch.load(tmp_path / "whole.pt", weights_only=False)["model"]
    saved_resumed = torch.load(tmp_path / "killed.pt", weights_only=False)["model"]
    assert all(torch.equal(saved_whole[k], saved_resumed[k]) for k in saved_whole)
    assert all(torch.equal(a, b) for a, b in zip(whole.state_dict().values(), resumed.state_dict().values()))
    # a checkpoint of another configuration is never resumed
    messages.clear()
    run(3, tmp_path / "killed.pt", lr=0.02)
    assert not any(m.startswith("resumed") for m in messages) and any("afresh" in m for m in messages)
    # nor one past the run's last epoch (its best epoch could lie beyond it)
    messages.clear()
    run(2, tmp_path / "killed.pt", lr=0.02)
    assert any("beyond epochs=2" in m for m in messages)
    # the fixed input vectors are never checkpointed
    assert "encoder.embedding.weight" not in torch.load(tmp_path / "killed.pt", weights_only=False)["model"]


def test_standardized_vectors_and_a_saved_encoder_round_trip(tmp_path):
    import json

    from elmo_repro.cove.features import load_cove

    raw = np.array([[1.0, 10.0], [3.0, 10.0], [5.0, 10.0]])
    vectors = SourceVectors(["a", "b", "c"], raw, standardize=True)
    standardized = vectors.matrix[1:].double().numpy()
    assert np.allclose(standardized[:, 0], [-1.224744871, 0.0, 1.224744871]) and np.allclose(standardized[:, 1], 0.0)
    assert vectors.matrix[0].abs().sum() == 0                # the unknown word stays the zero row
    model = tiny_model()
    words = [f"w{i}" for i in range(11)]
    torch.save(model.state_dict(), tmp_path / "weights.pt")
    (tmp_path / "config.json").write_text(json.dumps({"model": {"hidden": 8, "layers": 2, "target_dim": 5,
                                                                "dropout": 0.0}}))
    (tmp_path / "source_words.txt").write_text("\n".join(words) + "\n")
    encoder, loaded = load_cove(tmp_path)
    ids, lengths = pad([loaded.ids(["w3", "W5", "zzz"])])
    assert ids.tolist() == [[4, 6, 0]]
    expected, _ = model.encoder.layers(ids, lengths)
    got, _ = encoder.layers(ids, lengths)
    assert all(torch.equal(a, b) for a, b in zip(expected, got))
    (tmp_path / "source_words.txt").write_text("\n".join(words[:5]) + "\n")
    with pytest.raises(InputError, match="source_words.txt: 5 words, but the weights hold 11"):
        load_cove(tmp_path)


def test_cove_features_are_the_encoder_layers_in_the_biLM_layout(tmp_path):
    from elmo_repro.cove.features import write_cove_features
    from elmo_repro.elmo.features import read_all

    model = tiny_model()
    vectors = SourceVectors([f"w{i}" for i in range(11)], model.encoder.embedding.weight[1:].numpy())
    sentences = [["w1", "W2", "zzz"], ["w4"], ["w5", "w6", "w7", "w8", "w9"]]
    write_cove_features(tmp_path / "cove.hdf5", model.encoder, vectors, sentences, batch_size=2, dtype="float32")
    layers = read_all(tmp_path / "cove.hdf5")
    assert [a.shape for a in layers] == [(2, 3, 16), (2, 1, 16), (2, 5, 16)]
    # "W2" falls back to "w2"; "zzz" is the zero vector of unknown words
    ids, lengths = pad([[2, 3, 0]])
    outputs, _ = model.encoder.layers(ids, lengths)
    # alone vs in a batch of two: within twice the chain bound over 3 steps of 2 layers (fp_bounds)
    reference = torch.stack(outputs, 1)[0].detach().numpy()
    bound = 2 * gamma(3 * lstm_step_roundings(16, 8, 8, 2)) * np.abs(reference).max()
    assert np.abs(layers[0] - reference).max() <= bound
    with pytest.raises(ValueError, match="sentence 1 is empty"):
        write_cove_features(tmp_path / "bad.hdf5", model.encoder, vectors, [["w1"], []])


def test_cove_is_a_layer_source_for_task_runs(tmp_path):
    """A run spec with ``bilm: cove`` reads CoVe's layers from models/cove through the same feature
    files and injection module as the biLM's (two layers here, layer 0 = CoVe's first)."""
    from elmo_repro.cove.features import write_cove_features
    from elmo_repro.elmo.injection import ElmoInjection
    from elmo_repro.elmo.layer_source import CachedLayers
    from elmo_repro.experiments.specs import ElmoSpec, render_elmo_features

    runs = {"analysis": {"train_ner_elmo": {"ner-cove-s0": {"task": "ner", "elmo": {"bilm": "cove"}}}}}
    assert render_elmo_features(runs, "models/bilm") == {"main": {}, "analysis": {"ner-cove": {
        "task": "ner", "bilm": "cove", "model": "models/cove", "data": "data/conll2003",
        "out": "data/features/conll2003/cove"}}}
    model = tiny_model()
    vectors = SourceVectors([f"w{i}" for i in range(11)], model.encoder.embedding.weight[1:].numpy())
    write_cove_features(tmp_path / "train.hdf5", model.encoder, vectors, [["w1", "w2"], ["w3"]], dtype="float32")
    source = CachedLayers(tmp_path / "train.hdf5", expected=2)
    assert (source.n_layers, source.dim) == (2, 16)
    injection = ElmoInjection(source.n_layers, ElmoSpec(bilm="cove", placement="input", mix="fixed", layer=1),
                              source.dim)
    layers = torch.from_numpy(np.stack([np.pad(a, ((0, 0), (0, 1), (0, 0))) if a.shape[1] == 1 else a
                                        for a in source.batch([0, 1])]))
    mixed = injection(layers, torch.tensor([[True, True], [True, False]]))
    assert next(iter(mixed.values())).shape == (2, 2, 16)


def test_cove_table_shows_both_bleu_conventions_with_their_signatures():
    from elmo_repro.views.probes import render_cove

    bleu = {"test_bleu": 21.5, "score": "BLEU = 21.50 ...", "signature": "nrefs:1|case:mixed|tok:13a",
            "history": [{"epoch": 1, "val_bleu": 10.0}, {"epoch": 2, "val_bleu": 12.0}]}
    published = {"test_bleu": 24.25, "score": "BLEU = 24.25 ...", "signature": "nrefs:1|case:lc|tok:none"}
    data = {"train_pairs": 29000, "dropped_snli_pairs": 3, "dropped_eval_pairs": 1}
    text = render_cove(bleu, published, data, "tiny")
    assert "| **21.50** | **24.25** | 12.00 | 2 | 29,000 | 3 / 1 |" in text
    assert "`nrefs:1|case:mixed|tok:13a`" in text and "`nrefs:1|case:lc|tok:none`" in text
    assert "Compare the second with published numbers" in text
