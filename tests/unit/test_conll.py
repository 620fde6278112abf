"""CoNLL-2003 reader, tag-scheme conversions and the prepare_conll2003 stage (``stages.prepare --task ner``)."""

import contextlib
import json
from pathlib import Path

import pytest

from elmo_repro.tasks.ner.reader import (bioul_to_iob2, iob1_to_bioul, iob2_to_bioul, read_conll2003, read_prepared,
                                   split_stats, to_iob2)
from elmo_repro.io import InputError

CONLL = Path(__file__).resolve().parents[3] / "shared" / "data" / "conll2003"
# Official statistics (SOURCE.md; Tjong Kim Sang & De Meulder 2003, Table 2).
OFFICIAL = {
    "eng.train": dict(sentences=14041, tokens=203621, entities_LOC=7140, entities_MISC=3438,
                      entities_ORG=6321, entities_PER=6600),
    "eng.testa": dict(sentences=3250, tokens=51362, entities_LOC=1837, entities_MISC=922,
                      entities_ORG=1341, entities_PER=1842),
    "eng.testb": dict(sentences=3453, tokens=46435, entities_LOC=1668, entities_MISC=702,
                      entities_ORG=1661, entities_PER=1617),
}
needs_data = pytest.mark.skipif(not CONLL.is_dir(), reason="CoNLL-2003 mirror not present")

SAMPLE = (
    "\ufeff-DOCSTART- -X- O O\r\n\r\n"
    "EU NNP I-NP I-ORG\r\nrejects VBZ I-VP O\r\n\r\n"
    "-DOCSTART- -X- O O\r\n\r\n\r\n"
    "Peter NNP I-NP I-PER\nBlackburn NNP I-NP I-PER\nJohn NNP I-NP B-PER\n"
)


def write(tmp_path, text, name="eng.sample"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def test_reader_parses_sentences_and_skips_docstart(tmp_path):
    sentences = read_conll2003(write(tmp_path, SAMPLE))
    assert sentences == [
        {"tokens": ["EU", "rejects"], "pos": ["NNP", "VBZ"], "chunk": ["I-NP", "I-VP"], "ner": ["I-ORG", "O"]},
        {"tokens": ["Peter", "Blackburn", "John"], "pos": ["NNP"] * 3, "chunk": ["I-NP"] * 3,
         "ner": ["I-PER", "I-PER", "B-PER"]},
    ]


@pytest.mark.parametrize("line, problem", [
    ("EU NNP I-ORG", "expected 4 columns"),
    ("EU NNP I-NP I-ORG extra", "expected 4 columns"),
    ("EU NNP I-NP X-ORG", "NER tag 'X-ORG'"),
    ("EU NNP I-NP I-org", "NER tag 'I-org'"),
    ("EU NNP NP I-ORG", "chunk tag 'NP'"),
])
def test_malformed_line_names_file_and_line(tmp_path, line, problem):
    path = write(tmp_path, f"-DOCSTART- -X- O O\n\nA DT I-NP O\n{line}\n")
    with pytest.raises(InputError) as info:
        read_conll2003(path)
    assert info.value.line == 4 and info.value.path == str(path)
    assert f"{path}:4" in str(info.value) and problem in str(info.value)


def test_iob1_conversions():
    iob1 = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "I-ORG", "O", "B-MISC"]
    assert to_iob2(iob1) == ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "I-ORG", "O", "B-MISC"]
    assert iob1_to_bioul(iob1) == ["B-PER", "L-PER", "U-PER", "O", "U-LOC", "B-ORG", "L-ORG", "O", "U-MISC"]
    assert iob1_to_bioul(["I-ORG", "I-ORG", "I-ORG"]) == ["B-ORG", "I-ORG", "L-ORG"]
    assert iob1_to_bioul([]) == [] and iob1_to_bioul(["O"]) == ["O"]
    assert bioul_to_iob2(iob1_to_bioul(iob1)) == to_iob2(iob1)


def test_invalid_tags_are_rejected():
    with pytest.raises(ValueError):
        iob2_to_bioul(["O", "I-PER"])                  # IOB2 entity must open with B-
    with pytest.raises(ValueError):
        to_iob2(["L-PER"])
    with pytest.raises(ValueError):
        bioul_to_iob2(["X-PER"])


@needs_data
@pytest.mark.parametrize("name", sorted(OFFICIAL))
def test_real_files_match_official_counts(name):
    stats = split_stats(read_conll2003(CONLL / name))
    assert {k: stats[k] for k in OFFICIAL[name]} == OFFICIAL[name]
    assert stats["entities"] == sum(v for k, v in OFFICIAL[name].items() if k.startswith("entities_"))


@needs_data
def test_stage_writes_jsonl_and_logs_official_counts(tmp_path, monkeypatch):
    from elmo_repro.tasks.ner import prepare as task_prepare
    from stages import prepare as stage

    logged = {}

    class FakeRun:
        def log_metrics(self, metrics, step=None):
            logged.update(metrics)

    @contextlib.contextmanager
    def fake_stage_run(name, params, sections):
        assert name == "prepare_conll2003" and sections == ["data"]
        yield FakeRun()

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(stage, "stage_run", fake_stage_run)
    monkeypatch.setattr(stage, "load_params", lambda: {"data": {"mirror": str(CONLL.parent)}, "tasks": {"ner": {}}})
    stage.main(["--task", "ner"])
    assert not (tmp_path / "results").exists()      # NER declares no counts file: its counts are logged
    for split, name in task_prepare.FILES.items():
        official = OFFICIAL[name]
        assert logged[f"{split}_sentences"] == official["sentences"]
        assert logged[f"{split}_tokens"] == official["tokens"]
        assert logged[f"{split}_entities"] == sum(v for k, v in official.items() if k.startswith("entities_"))
    dev = read_prepared(tmp_path / "data/conll2003", "dev")
    original = read_conll2003(CONLL / "eng.testa")
    assert len(dev) == 3250 and [{k: v for k, v in s.items() if k != "text_ids"} for s in dev] == original
    # each distinct sentence is one text (repeated score lines, "-- Ryan" bylines ... share one)
    assert logged["dev_texts"] == len({tuple(s["tokens"]) for s in original}) < 3250
    first = json.loads((tmp_path / "data/conll2003/train.jsonl").read_text(encoding="utf-8").splitlines()[0])
    text = json.loads((tmp_path / "data/conll2003/train.texts.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["text_ids"] == {"tokens": 0} and text["id"] == 0
    assert text["tokens"][:3] == ["EU", "rejects", "German"] and first["ner"][:3] == ["I-ORG", "O", "I-MISC"]
