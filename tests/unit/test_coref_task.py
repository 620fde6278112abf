"""Coreference's prepare stage and task contract on the invented stories of tests/fixtures/coref (no
LitBank text): the split by document, what the stage writes, the reader's errors, scoring without
and with singletons, the training window and pruning."""

import importlib.util
import json
import random
from pathlib import Path

import pytest
import torch

from elmo_repro.bilm.finetune import finetuning_text
from elmo_repro.tasks.coref.reader import evenly_spaced, read_coref_conll, split_documents
from elmo_repro.io import InputError
from elmo_repro.tasks.base import get_task
from elmo_repro.tasks.coref.model import prune_spans, sentence_window

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "coref"
_spec = importlib.util.spec_from_file_location("coref_make_fixture", FIXTURE / "make_fixture.py")
make_fixture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_fixture)


def test_the_split_by_document_is_evenly_spaced_and_fixed():
    assert evenly_spaced(100, 20)[:4] == [2, 7, 12, 17] and evenly_spaced(10, 1) == [5]
    documents = [{"doc_key": f"d{i:03d}"} for i in range(100)][::-1]          # input order does not matter
    parts = split_documents(documents, 10, 20)
    assert [len(parts[s]) for s in ("train", "dev", "test")] == [70, 10, 20]
    assert parts["test"][0]["doc_key"] == "d002" and parts["dev"][0]["doc_key"] == "d005"   # rest[4]: d002 is test
    keys = [d["doc_key"] for part in parts.values() for d in part]
    assert sorted(keys) == sorted(d["doc_key"] for d in documents)            # each document in one part
    with pytest.raises(ValueError, match="leave none of 5"):
        split_documents(documents[:5], 2, 3)


def test_prepare_writes_documents_as_sentence_ids(tmp_path, monkeypatch):
    from elmo_repro.tasks.coref import prepare

    make_fixture.write_documents(tmp_path / "mirror" / "litbank_coref" / "conll")
    params = {"data": {"mirror": str(tmp_path / "mirror")},
              "tasks": {"coref": {"data": {"source": "litbank", "ontonotes_dir": None, "dev_documents": 2,
                                           "test_documents": 4, "max_train_documents": 0}}}}
    cfg, mirror = params["tasks"]["coref"]["data"], tmp_path / "mirror"
    parts = prepare.read_parts(cfg, mirror)
    assert [len(parts[s]) for s in ("train", "dev", "test")] == [10, 2, 4]
    stats = prepare.counts("test", parts["test"])
    assert stats["test_doc_keys"] == [d["doc_key"] for d in parts["test"]]
    # woman, man, thing and place in each story; three stories name their place or thing once
    assert stats["test_clusters"] == 4 * 4 and stats["test_singletons"] == 3
    params["tasks"]["coref"]["data"]["max_train_documents"] = 3
    assert [d["doc_key"] for d in prepare.read_parts(cfg, mirror)["train"]] == \
        [d["doc_key"] for d in parts["train"][:3]]
    params["tasks"]["coref"]["data"].update(dev_documents=6, test_documents=10)
    with pytest.raises(InputError, match="params.yaml: tasks.coref.data: 6 dev and 10 test documents"):
        prepare.read_parts(cfg, mirror)
    # the committed fixture is what the stage's own code writes from these stories
    task = get_task("coref")
    train = task.read("train", FIXTURE)
    assert [d["doc_key"] for d in train] == [d["doc_key"] for d in parts["train"]]
    assert [d["sentences"] for d in train] == [d["sentences"] for d in parts["train"]]


def test_reader_errors_name_file_and_line(tmp_path):
    task = get_task("coref")
    for name in ("train.jsonl", "train.texts.jsonl"):
        (tmp_path / name).write_text((FIXTURE / name).read_text())
    good = (tmp_path / "train.jsonl").read_text().splitlines()
    for bad, problem in [({"clusters": [[[0, 99]]]}, r"cluster 0: \[0, 99\] is not an inclusive \[start, end\] span"),
                         ({"clusters": [[[3, 2]]]}, r"cluster 0: \[3, 2\] is not"),
                         ({"clusters": "none"}, "'clusters' must be a list"),
                         ({"text_ids": {"sentences": 0}}, "text_ids.sentences must be a list")]:
        row = {**json.loads(good[1]), **bad}
        (tmp_path / "train.jsonl").write_text("\n".join([good[0], json.dumps(row), *good[2:]]) + "\n")
        with pytest.raises(InputError, match=rf"train.jsonl:2: {problem}"):
            task.read("train", tmp_path)


def test_scores_remove_singletons_from_the_key_and_log_them_kept():
    task = get_task("coref")
    documents = [{"clusters": [[[0, 0], [2, 2]], [[5, 6]]]}]         # a pair and a singleton
    scores = task.score(documents, [[[(0, 0), (2, 2)]]])
    assert scores["avg_f1"] == 100.0 and scores["muc_f1"] == scores["b3_f1"] == scores["ceafe_f1"] == 100.0
    # kept: MUC ignores singletons (100); B3 recall (1 + 1 + 0) / 3, precision 1 -> F1 0.8;
    # CEAF: phi4 1 for the pair, the singleton unaligned: recall 1/2, precision 1 -> F1 2/3
    assert scores["singletons_muc_f1"] == 100.0
    assert scores["singletons_b3_f1"] == pytest.approx(80.0)
    assert scores["singletons_ceafe_f1"] == pytest.approx(200 / 3)
    assert scores["singletons_avg_f1"] == pytest.approx((100 + 80 + 200 / 3) / 3)
    with pytest.raises(ValueError, match="1 predictions for 2 documents"):
        task.score(documents * 2, [[]])


def test_a_training_window_keeps_its_mentions_shifted():
    doc = {"words": torch.arange(12).view(3, 4), "chars": torch.zeros(3, 4, 2, dtype=torch.long),
           "lengths": torch.tensor([4, 2, 3]), "elmo": torch.zeros(3, 2, 4, 5),
           "clusters": [[(0, 1), (4, 5)], [(5, 5), (6, 8)], [(2, 3)]]}
    window = sentence_window(doc, 1, 2)                     # sentences 1-2: document tokens 4..8
    assert window["lengths"].tolist() == [2, 3] and window["words"].tolist() == [[4, 5, 6], [8, 9, 10]]
    assert window["elmo"].shape == (2, 2, 3, 5) and window["chars"].shape == (2, 3, 2)
    assert window["clusters"] == [[(0, 1)], [(1, 1), (2, 4)]]              # (0, 1) and (2, 3) were outside


def test_pruning_agrees_with_checking_every_taken_span():
    def brute(scores, starts, ends, k):
        taken = []
        for i in sorted(range(len(scores)), key=lambda i: -scores[i]):
            if len(taken) >= k:
                break
            s, e = starts[i], ends[i]
            if not any(s < starts[j] <= e < ends[j] or starts[j] < s <= ends[j] < e for j in taken):
                taken.append(i)
        return sorted(taken, key=lambda i: (starts[i], ends[i]))

    rng = random.Random(0)
    for _ in range(200):
        spans = sorted({(s, s + rng.randrange(4)) for s in (rng.randrange(20) for _ in range(30))})
        starts, ends = [s for s, _ in spans], [e for _, e in spans]
        scores = [rng.random() for _ in spans]
        k = rng.randint(1, len(spans))
        assert prune_spans(torch.tensor(scores), torch.tensor(starts), torch.tensor(ends), k).tolist() == \
            brute(scores, starts, ends, k)


def test_fine_tuning_reads_each_sentence_of_a_document():
    documents = get_task("coref").read("train", FIXTURE)
    text = finetuning_text(documents, ("sentences",))
    assert len(text) == len({tuple(s) for d in documents for s in d["sentences"]})
    assert text[0] == documents[0]["sentences"][0]


def test_the_reader_reads_the_fixture_files_as_written(tmp_path):
    paths = make_fixture.write_documents(tmp_path, n=1)
    (document,) = read_coref_conll(paths[0])
    assert document["doc_key"] == "story_00_0" and len(document["clusters"]) == 4
