"""Domain fine-tuning (paper §3.4, issue 12): the task text, the start from the pretraining
checkpoint with its Adagrad state, a vocabulary that does not match the weights, exact resume
after a kill, and that no dev or test sentence reaches the fine-tuning text."""

import json
from pathlib import Path

import pytest
import torch

from pretrain_settings import settings

from elmo_repro.bilm.finetune import drop_held_out, finetuning_text, load_start
from elmo_repro.bilm.model import BiLMConfig
from elmo_repro.bilm.train import CHECKPOINT, PretrainConfig, pretrain, save_model
from elmo_repro.data.contamination import sentence_key
from elmo_repro.data.examples import write_split
from elmo_repro.data.vocabulary import Vocabulary, count_tokens
from elmo_repro.io import InputError

pytestmark = pytest.mark.usefixtures("one_thread")
PRETRAIN = [s.split() for s in [
    "the cat sat on the mat", "a dog barked", "the dog sat", "cats and dogs are pets",
    "the mat is red", "a cat is a pet", "dogs bark at cats", "the red dog sat on a mat"]]
TASK = [s.split() for s in ["a red cat sat", "the pets bark", "a mat is a mat", "dogs sat on cats"]]


def _config(vocab: Vocabulary) -> BiLMConfig:
    return BiLMConfig(filters=((1, 4), (2, 4)), char_dim=4, n_highway=1, cell_dim=8, projection_dim=4,
                      n_layers=2, dropout=0.0, n_tokens_vocab=len(vocab))


def _cfg(batches: int, **changes) -> PretrainConfig:
    return settings(**{**dict(seed=3, token_budget=4 * 5 * batches, batch_size=4, unroll_steps=5,
                                    n_negative_samples=6, checkpoint_every=2, log_every=2), **changes})


@pytest.fixture
def pretrained(tmp_path) -> Path:
    """A biLM pretrained 6 batches, saved as pretrain_bilm saves it, its checkpoint beside it."""
    vocab = Vocabulary.build(*count_tokens(PRETRAIN))
    model, _ = pretrain(_config(vocab), _cfg(6), PRETRAIN, vocab, tmp_path / "bilm_checkpoints")
    save_model(model, vocab, tmp_path / "bilm")
    return tmp_path


def test_the_text_is_each_distinct_field_sentence_once_in_order():
    examples = [{"premise": ["A", "man", "sleeps"], "hypothesis": ["He", "rests"]},
                {"premise": ["A", "man", "sleeps"], "hypothesis": ["Nobody", "sleeps"]},
                {"premise": ["Two", "dogs"], "hypothesis": ["He", "rests"]}]
    assert finetuning_text(examples, ("premise", "hypothesis")) == [
        ["A", "man", "sleeps"], ["He", "rests"], ["Nobody", "sleeps"], ["Two", "dogs"]]


def test_no_held_out_sentence_reaches_the_text_whatever_its_length_or_spelling():
    text = [["A", "man", "is", "sleeping", "."], ["The", "cat", "sat"], ["Dogs", "run"], ["..."]]
    held_out = [["a", "man", "is", "sleeping"], ["dogs", "run", "."]]
    kept, dropped = drop_held_out(text, held_out)
    assert kept == [["The", "cat", "sat"], ["..."]] and dropped == 2
    keys = {sentence_key(s) for s in held_out}
    assert not any(sentence_key(s) in keys for s in kept)


def test_the_stage_builds_its_text_from_the_training_split_only(tmp_path, monkeypatch):
    from stages.finetune_bilm import task_text
    data = tmp_path / "data"
    write_split(data, "train", [{"tokens": ["a", "b", "c"], "ner": ["O"] * 3},
                                {"tokens": ["seen", "in", "dev"], "ner": ["O"] * 3},
                                {"tokens": ["seen", "in", "test"], "ner": ["O"] * 3}], ("tokens",))
    write_split(data, "dev", [{"tokens": ["Seen", "in", "dev", "."], "ner": ["O"] * 4},
                              {"tokens": ["only", "dev"], "ner": ["O"] * 2}], ("tokens",))
    write_split(data, "test", [{"tokens": ["seen", "in", "test"], "ner": ["O"] * 3}], ("tokens",))
    text, dev_text, counts = task_text("ner", data)
    assert text == [["a", "b", "c"]]
    assert dev_text == [["Seen", "in", "dev", "."], ["only", "dev"]]
    assert counts["dropped_held_out_sentences"] == 2 and counts["text_tokens"] == 3


def test_a_vocabulary_that_does_not_match_the_softmax_names_both_files(pretrained):
    bilm = pretrained / "bilm"
    lines = (bilm / "vocab.txt").read_text(encoding="utf-8").splitlines()
    (bilm / "vocab.txt").write_text("\n".join(lines + ["zebra"]) + "\n", encoding="utf-8")
    (bilm / "counts.tsv").unlink()
    with pytest.raises(InputError) as err:
        load_start(bilm, pretrained / "bilm_checkpoints" / CHECKPOINT)
    assert err.value.path == str(bilm / "vocab.txt")
    assert f"holds {len(lines) + 1} tokens but the softmax of {bilm / 'weights.pt'} has {len(lines)} rows" \
        in err.value.problem


def test_fine_tuning_continues_the_adagrad_state_and_resumes_exactly_after_a_kill(pretrained):
    model, vocab, start, restored = load_start(pretrained / "bilm", pretrained / "bilm_checkpoints" / CHECKPOINT)
    assert restored                                               # the checkpoint holds these weights
    saved = torch.load(pretrained / "bilm_checkpoints" / CHECKPOINT, weights_only=True)
    steps = {int(s["step"]) for s in saved["optimizer"]["state"].values()}
    assert steps == {6}
    cfg = _cfg(6)                                                 # 6 batches (the text cycles)
    tuned, summary = pretrain(model.config, cfg, TASK, vocab, pretrained / "ft_full", start=start)
    after = torch.load(pretrained / "ft_full" / CHECKPOINT, weights_only=True)
    n = int(summary["batches"])
    # bilm-tf's restart: the accumulators and the step count go on from pretraining
    assert {int(s["step"]) for s in after["optimizer"]["state"].values()} == {6 + n}
    assert not torch.equal(tuned.forward_lstm.layers[0].bias, model.forward_lstm.layers[0].bias)
    # killed after its first checkpoint (batch 2 of 6), then resumed: the same weights, bit for bit
    pretrain(model.config, cfg, TASK, vocab, pretrained / "ft_kill", stop_after=3, start=start)
    resumed, _ = pretrain(model.config, cfg, TASK, vocab, pretrained / "ft_kill", start=start)
    for name, value in tuned.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[name]), name


def test_without_the_matching_checkpoint_the_accumulators_start_afresh(pretrained):
    other = pretrained / "other_checkpoints"
    vocab = Vocabulary.build(*count_tokens(PRETRAIN))
    pretrain(_config(vocab), _cfg(4, seed=9), PRETRAIN, vocab, other)      # other weights
    _, _, start, restored = load_start(pretrained / "bilm", other / CHECKPOINT)
    assert not restored and start.optimizer is None
    _, _, start, restored = load_start(pretrained / "bilm", None)          # released weights: none
    assert not restored and start.optimizer is None


def test_the_profiles_fine_tune_what_their_runs_read():
    from elmo_repro.experiments.tasks import TASKS
    from workflow.profile import render
    tiny, ablations = render("tiny"), render("ablations")
    # the main job fine-tunes every task and extracts its layers once; the analysis job reuses them
    assert tiny["finetune_tasks"] == {"main": {t: {"data": TASKS[t].data_dir, "out": f"models/finetuned/{t}"}
                                               for t in ("coref", "ner", "snli", "squad", "srl", "sst5")}, "analysis": {}}
    assert set(tiny["elmo_features"]["main"]) == {"ner-finetuned", "sst5-finetuned", "snli-finetuned",
                                                  "squad-finetuned", "srl-finetuned", "coref-finetuned"}
    assert tiny["elmo_features"]["analysis"] == {}
    assert all(spec["elmo"]["bilm"] == "finetuned" for job in tiny["runs"].values() for fam, items in job.items()
               if fam.endswith("_elmo") for spec in items.values())
    # the ablations profile adds the same +ELMo runs on the base biLM, same seeds, in the analysis job
    assert ablations["elmo_features"]["main"] == tiny["elmo_features"]["main"]
    assert set(ablations["elmo_features"]["analysis"]) == {"ner-base", "sst5-base", "snli-base"}
    base_runs = {rid for items in ablations["runs"]["analysis"].values() for rid, spec in items.items()
                 if spec["elmo_name"] == "elmo_base"}
    assert base_runs == {f"{t}-elmo_base-s{s}" for t in ("ner", "sst5", "snli") for s in (0, 1, 2)}
    assert json.dumps(ablations["elmo_features"]["analysis"]["ner-base"]) == json.dumps(
        {"task": "ner", "bilm": "base", "model": "models/bilm", "data": "data/conll2003",
         "out": "data/features/conll2003/base"})


def test_the_fine_tuning_table_reports_perplexities_and_the_with_without_comparison():
    from elmo_repro.views.finetuning import finetuning_rows, render_finetuning_markdown
    from elmo_repro.views.runs import Run
    metrics = {"ner": {"train_examples": 10, "text_sentences": 9, "text_tokens": 90, "dropped_held_out_sentences": 1,
                       "dev_sentences": 5, "dev_tokens": 40, "optimizer_state_restored": True, "batches": 3.0,
                       "target_tokens_per_direction": 960.0, "dev_perplexity_base": 200.0,
                       "dev_perplexity_finetuned": 150.0}}

    def run(name: str, seed: int, score: float) -> Run:
        return Run(f"ner-{name}-s{seed}", {"task": "ner", "elmo_name": name, "seed": seed, "train_fraction": 1.0},
                   {"test_f1": score, "dev_f1": score, "best_epoch": 1, "epochs": 2})
    runs = [run("elmo", 0, 86.0), run("elmo", 1, 88.0), run("elmo_base", 0, 85.0), run("elmo_base", 1, 86.0)]
    spec = {"runs": {"tasks": ["ner"], "elmo": ["elmo", "elmo_base"], "seeds": [0, 1]},
            "finetuned": "elmo", "base": "elmo_base"}
    (row,) = finetuning_rows(metrics, runs, spec)
    assert row["dev_perplexity_change_percent"] == -25.0                      # (150 - 200) / 200
    assert row["finetuned"]["mean"] == 87.0 and row["base"]["mean"] == 85.5 and row["difference"] == 1.5
    assert row["welch_p"] is not None and 0 < row["welch_p"] < 1
    text = render_finetuning_markdown([row], "ablations", spec)
    assert "| NER | 9 / 90 | 1 | 960 per direction | continued from pretraining | 5 / 40 | 200.0 | 150.0 | -25.0% |" in text
    assert "| NER | f1 | 87.00 ± 1.41 (86.00, 88.00) | 85.50 ± 0.71 (85.00, 86.00) | +1.50 |" in text
    (alone,) = finetuning_rows(metrics, runs, {})                            # the default profile: no runs
    assert "finetuned" not in alone and "+ELMo with and without" not in render_finetuning_markdown([alone], "tiny", {})
