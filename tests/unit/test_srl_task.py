"""SRL's prepare stage and task contract on the invented release of tests/fixtures/srl (no
licensed text): what the stage writes, the cap, the reader's errors, per-domain scoring and the floor."""

import importlib.util
import json
from pathlib import Path

import pytest

from elmo_repro.data.examples import read_texts
from elmo_repro.io import InputError
from elmo_repro.tasks.base import get_task
from elmo_repro.tasks.srl import prepare as prepare_srl

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "srl"
_spec = importlib.util.spec_from_file_location("srl_make_fixture", FIXTURE / "make_fixture.py")
make_fixture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_fixture)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("srl_conll2005")
    make_fixture.write_release(root)
    return root


def test_prepare_writes_one_example_per_proposition_and_each_sentence_once(release, tmp_path):
    stats = {}
    for split, parts in prepare_srl.read_release(release, 0).items():
        stats.update(prepare_srl.write_part(split, parts, tmp_path))
    # 20 sections x (4 sentences + 1 without a verb); 16 + 1 in dev and in each test set
    assert stats["train_sentences"] == 100 and stats["dev_sentences"] == 17
    assert stats["test_wsj_sentences"] == 17 and stats["test_brown_sentences"] == 17
    examples = [json.loads(line) for line in (tmp_path / "test.jsonl").read_text().splitlines()]
    assert len(examples) == stats["test_propositions"] == stats["test_wsj_propositions"] + stats["test_brown_propositions"]
    domains = [e["domain"] for e in examples]
    assert domains == sorted(domains, key=["wsj", "brown"].index)            # WSJ first, then Brown
    texts = read_texts(tmp_path / "test.texts.jsonl")
    # the sentences without a verb have no proposition and are not embedded; no sentence twice
    assert len(texts) == len({tuple(t) for t in texts}) <= 32
    assert all(["Fine", "weather", "."] != t for t in texts)
    # a relative clause: two propositions point at one text
    ids = [e["text_ids"]["tokens"] for e in examples]
    assert len(set(ids)) < len(ids)
    for e in examples:
        tokens = texts[e["text_ids"]["tokens"]]
        assert len(e["tags"]) == len(tokens) and e["tags"][e["predicate"]] == "B-V"


def test_training_cap_is_nested_and_spread_over_sections(release):
    small = prepare_srl.read_release(release, 20)["train"][0][1]
    large = prepare_srl.read_release(release, 60)["train"][0][1]
    key = lambda s: (s["section"], s["index"])   # noqa: E731
    assert len(small) == 20 and len(large) == 60
    assert {key(s) for s in small} <= {key(s) for s in large}
    assert {s["section"] for s in small} == set(make_fixture.TRAIN_SECTIONS)   # one per section


def test_reader_names_file_and_line_of_a_bad_proposition(tmp_path):
    task = get_task("srl")
    for name in ("texts.jsonl", "jsonl"):
        (tmp_path / f"dev.{name}").write_text((FIXTURE / f"dev.{name}").read_text())
    lines = (tmp_path / "dev.jsonl").read_text().splitlines()
    bad = json.loads(lines[2])
    bad["predicate"] = 99
    lines[2] = json.dumps(bad)
    (tmp_path / "dev.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"dev\.jsonl:3: 'predicate' 99"):
        task.read("dev", tmp_path)
    bad["predicate"], bad["tags"] = 0, bad["tags"][:-1]
    lines[2] = json.dumps(bad)
    (tmp_path / "dev.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"dev\.jsonl:3: .*tags for a sentence of"):
        task.read("dev", tmp_path)


def test_score_reports_wsj_as_primary_and_brown_beside_it():
    task = get_task("srl")
    test = task.read("test", FIXTURE)
    gold = [list(e["tags"]) for e in test]
    # perfect on WSJ; on Brown every argument dropped (only the verb kept, which is not scored)
    predicted = [g if e["domain"] == "wsj" else ["B-V" if t == "B-V" else "O" for t in g] for e, g in zip(test, gold)]
    scores = task.score(test, predicted)
    assert scores["f1"] == 100.0 and scores["precision"] == 100.0
    assert scores["brown_recall"] == 0.0 and scores["brown_f1"] == 0.0
    dev = task.read("dev", FIXTURE)
    assert "brown_f1" not in task.score(dev, [list(e["tags"]) for e in dev])


def test_floor_is_the_position_rule_fitted_on_train():
    task = get_task("srl")
    train = task.read("train", FIXTURE)
    test = task.read("test", FIXTURE)
    predicted = task.floor(train, test)
    assert all(p[e["predicate"]] == "B-V" for e, p in zip(test, predicted))   # position 0: always the verb
    floor = task.score(test, predicted)["f1"]
    assert 0.0 < floor < 100.0
