"""The biLM: stateless layers, perplexity known answers, training determinism and exact resume."""

import math
import re
from pathlib import Path

import pytest
import torch
from fp_bounds import U64, bilm_bound, gamma
from pretrain_settings import settings

from elmo_repro.bilm.evaluate import bilm_perplexity, oov_rate, unigram_perplexity
from elmo_repro.bilm.model import BiLM, BiLMConfig
from elmo_repro.bilm.train import NonFiniteTrainingError, load_model, pretrain, save_model
from elmo_repro.data.character_ids import batch_to_char_ids
from elmo_repro.data.vocabulary import Vocabulary, count_tokens

SENTENCES = [s.split() for s in [
    "the cat sat on the mat", "a dog barked", "the dog sat", "cats and dogs are pets",
    "the mat is red", "a cat is a pet", "dogs bark at cats", "the red dog sat on a mat"]]


def small_config(vocab_size: int = 0) -> BiLMConfig:
    return BiLMConfig(filters=((1, 4), (2, 4)), char_dim=4, n_highway=1, cell_dim=8, projection_dim=4,
                      n_layers=2, dropout=0.1, n_tokens_vocab=vocab_size)


def test_layers_shape_and_statelessness():
    torch.manual_seed(0)
    model = BiLM(small_config()).eval()
    batch = [["a", "b", "c"], ["hello"], ["x", "y"]]
    layers = model.layers(torch.from_numpy(batch_to_char_ids(batch)))
    assert layers.shape == (3, 3, 5, 8)                                  # (B, L+1, T+2, 2P)
    # layer 0 is the token layer duplicated
    torch.testing.assert_close(layers[:, 0, :, :4], layers[:, 0, :, 4:], rtol=0, atol=0)   # a copy
    alone = model.layers(torch.from_numpy(batch_to_char_ids([["hello"]])))
    # another batch, another float32 ordering: both within the 3-step biLM bound (fp_bounds.py)
    bound = 2 * bilm_bound(model.config, 3, alone.abs().amax())
    torch.testing.assert_close(layers[1, :, :3], alone[0], atol=bound, rtol=0)
    assert layers[1, :, 3:].abs().sum() == 0                             # padding is zero


def test_uniform_softmax_gives_perplexity_equal_to_vocabulary_size():
    counts, n = count_tokens(SENTENCES)
    vocab = Vocabulary.build(counts, n)
    model = BiLM(small_config(len(vocab)))
    with torch.no_grad():
        model.softmax.weight.zero_()
        model.softmax.bias.zero_()
    result = bilm_perplexity(model, vocab, SENTENCES[:3])
    # zero logits: each NLL is log V within 3 roundings (log: 2, the shift: 1), a sentence's
    # float32 sum of n + 1 of them adds n; exp turns that absolute error of log V into a relative one
    n = max(map(len, SENTENCES[:3])) + 1
    assert math.isclose(result["perplexity"], len(vocab), rel_tol=gamma(3 + n) * math.log(len(vocab)))
    assert result["targets"] == sum(len(s) + 1 for s in SENTENCES[:3])


def test_unigram_perplexity_and_oov_by_hand():
    vocab = Vocabulary(["<S>", "</S>", "<UNK>", "a", "b"], [2, 2, 1, 3, 2])
    # target distribution excludes <S>: total = 2 + 1 + 3 + 2 = 8
    ppl = unigram_perplexity(vocab, [["a", "zz"]])                        # targets a, <UNK>, </S>
    expected = math.exp(-(math.log(3 / 8) + math.log(1 / 8) + math.log(2 / 8)) / 3)
    # float64 both ways: the exponent E (|E| <= mean |log p|) within 6 roundings of |log p| (counts
    # / total, log 2, 3-term sum 2, / n), then exp (2): each within (6 |E| + 2) u64, twice for both
    e = (abs(math.log(3 / 8)) + abs(math.log(1 / 8)) + abs(math.log(2 / 8))) / 3
    assert math.isclose(ppl, expected, rel_tol=2 * (gamma(6, U64) * e + gamma(2, U64)))
    assert oov_rate(vocab, [["a", "zz"], ["b", "b"]]) == 0.25


def _train(tmp_path: Path, stop_after=None, ckpt="ckpt"):
    counts, n = count_tokens(SENTENCES)
    vocab = Vocabulary.build(counts, n)
    cfg = settings(seed=3, token_budget=4 * 5 * 6, batch_size=4, unroll_steps=5, n_negative_samples=6,
                         checkpoint_every=2, log_every=2)
    return pretrain(small_config(len(vocab)), cfg, SENTENCES, vocab, tmp_path / ckpt, stop_after=stop_after), vocab


def test_training_learns_is_deterministic_and_resumes_exactly(tmp_path):
    (model, summary), vocab = _train(tmp_path, ckpt="a")
    (again, _), _ = _train(tmp_path, ckpt="b")
    for (name, p), q in zip(model.state_dict().items(), again.state_dict().values()):
        assert torch.equal(p, q), name
    # interrupted after 3 batches (checkpoint at 2), then resumed from the checkpoint
    _train(tmp_path, stop_after=3, ckpt="c")
    (resumed, _), _ = _train(tmp_path, ckpt="c")
    for (name, p), q in zip(model.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(p, q), name
    assert summary["train_sampled_softmax_loss"] > 0
    # resumed from its final checkpoint, a finished run trains nothing and reports the same statistics
    (finished, again_summary), _ = _train(tmp_path, ckpt="a")
    for p, q in zip(model.state_dict().values(), finished.state_dict().values()):
        assert torch.equal(p, q)
    assert {k: v for k, v in again_summary.items() if k != "tokens_per_second"} == \
        {k: v for k, v in summary.items() if k != "tokens_per_second"}
    save_model(model, vocab, tmp_path / "model")
    loaded, loaded_vocab = load_model(tmp_path / "model")
    assert loaded_vocab.tokens == vocab.tokens
    for p, q in zip(model.state_dict().values(), loaded.state_dict().values()):
        assert torch.equal(p, q)


def test_a_checkpoint_from_another_configuration_is_not_resumed(tmp_path):
    _train(tmp_path, stop_after=2, ckpt="d")
    counts, n = count_tokens(SENTENCES)
    vocab = Vocabulary.build(counts, n)
    cfg = settings(seed=3, token_budget=4 * 5 * 6, batch_size=4, unroll_steps=5, n_negative_samples=6,
                         checkpoint_every=2, log_every=2, learning_rate=0.1)   # changed configuration
    changed, _ = pretrain(small_config(len(vocab)), cfg, SENTENCES, vocab, tmp_path / "d")
    fresh, _ = pretrain(small_config(len(vocab)), cfg, SENTENCES, vocab, tmp_path / "e")
    for p, q in zip(changed.state_dict().values(), fresh.state_dict().values()):
        assert torch.equal(p, q)


def test_saved_weights_are_byte_identical_for_equal_weights(tmp_path):
    """DVC hashes bytes: the same weights saved twice (atomic writes through differently named
    temporary files) must give the same file, or every re-run would look like a new model."""
    counts, n = count_tokens(SENTENCES)
    vocab = Vocabulary.build(counts, n)
    torch.manual_seed(0)
    model = BiLM(small_config(len(vocab)))
    save_model(model, vocab, tmp_path / "a")
    save_model(model, vocab, tmp_path / "b")
    for name in ("weights.pt", "options.json", "vocab.txt"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.parametrize("change, message", [
    ({"n_negative_samples": 0}, "pretrain.n_negative_samples: Input should be greater than or equal to 1 (got 0)"),
    ({"n_negative_samples": -1}, "pretrain.n_negative_samples: Input should be greater than or equal to 1 (got -1)"),
    ({"batch_size": 0}, "pretrain.batch_size: Input should be greater than or equal to 1 (got 0)"),
    ({"learning_rate": 0.0}, "pretrain.learning_rate: Input should be greater than 0 (got 0.0)"),
    ({"learning_rate": float("inf")}, "pretrain.learning_rate: Input should be a finite number (got inf)"),
    ({"grad_clip": float("nan")}, "pretrain.grad_clip: Input should be a finite number (got nan)"),
    ({"token_budget": -5}, "pretrain.token_budget: Input should be greater than or equal to 0 (got -5)"),
])
def test_settings_outside_their_domain_stop_before_training(tmp_path, change, message):
    # issue 14 part 1: n_negative_samples 0 (or -1) used to train to NaN weights without an error.
    # The training configuration is the params schema's pretrain section: checked when it is made,
    # and again by pretrain() (a model_copy is not validated)
    counts, n = count_tokens(SENTENCES)
    vocab = Vocabulary.build(counts, n)
    base = dict(seed=3, token_budget=120, batch_size=4, unroll_steps=5, n_negative_samples=6, checkpoint_every=2,
                log_every=2)
    with pytest.raises(ValueError, match=re.escape(message)):
        settings(**{**base, **change})
    with pytest.raises(ValueError, match=re.escape(message)):
        pretrain(small_config(len(vocab)), settings(**base).model_copy(update=change), SENTENCES, vocab,
                 tmp_path / "ckpt")
    assert not (tmp_path / "ckpt").exists() or not any((tmp_path / "ckpt").iterdir())


def test_a_non_finite_loss_stops_naming_the_batch_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    # issue 14 part 1: training never silently produces non-finite weights
    from elmo_repro.bilm.sampled_softmax import SoftmaxLayer
    real, calls = SoftmaxLayer.sampled_loss, []

    def poisoned(self, *args, **kwargs):
        calls.append(1)
        loss = real(self, *args, **kwargs)
        return loss * float("nan") if len(calls) > 2 * 3 else loss      # two directions per batch: from batch 4

    monkeypatch.setattr(SoftmaxLayer, "sampled_loss", poisoned)
    with pytest.raises(NonFiniteTrainingError, match=r"pretraining batch 4: non-finite loss \(nan\).* "
                       r"the last good checkpoint is .*checkpoint\.pt"):
        _train(tmp_path)                                                  # checkpoint_every=2, 6 batches
    ckpt = torch.load(tmp_path / "ckpt" / "checkpoint.pt", weights_only=True)
    assert ckpt["batch"] == 2
    assert all(torch.isfinite(v).all() for v in ckpt["model"].values())


def test_weights_that_overflow_are_never_checkpointed(tmp_path):
    # a finite loss and gradient can still step a weight to inf: checked before each checkpoint
    from elmo_repro.bilm.nonfinite import stop_if_non_finite_weights
    model = BiLM(small_config(5))
    stop_if_non_finite_weights(model, 3, tmp_path / "checkpoint.pt")                # finite: no error
    with torch.no_grad():
        model.forward_lstm.layers[1].bias[0] = float("inf")
    with pytest.raises(NonFiniteTrainingError, match=r"pretraining batch 3: the update left non-finite weights "
                       r"in forward_lstm\.layers\.1\.bias; not saved, no checkpoint was written yet"):
        stop_if_non_finite_weights(model, 3, tmp_path / "checkpoint.pt")
