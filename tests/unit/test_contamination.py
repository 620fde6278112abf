"""The contamination check: sentence keys, the length threshold, document removal, the readers of
every evaluation split, and on the real mirror that the check catches the Brown leaks (CoNLL-2005
test.brown in Brown ck01-ck03, Senseval-3 in cl23) and passes on the cleaned LM text.

The readers and the check are tested on small files written here, so CI covers them without the
mirror; the real-data tests are skipped only when ``../shared/data`` is absent.
"""

from __future__ import annotations

import gzip
import json
import zipfile
from pathlib import Path

import pytest

from elmo_repro.data import eval_text
from elmo_repro.data.contamination import (ContaminationError, EvalIndex, check, find_overlaps,
                                           remove_documents, sentence_key, summarize, word_count)
from elmo_repro.data.lm_corpus import BROWN_ZIP, build_split, read_source_documents
from elmo_repro.io import InputError

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
real_data = pytest.mark.skipif(not (SHARED / BROWN_ZIP).is_file(), reason="staged data not found")
TINY_SPLITS = ["lm1b_dev", "brown", "abc"]


@pytest.mark.parametrize("tokens, key", [
    (["Don't", "-LRB-", "stop", "-RRB-", "."], "dontstop"),
    (["do", "n't", "(", "STOP", ")"], "dontstop"),
    (["``", "Hello", ",", "world", "''"], "helloworld"),
    (["2,900", "dollars"], "2900dollars"),
    (["Café", "au", "lait"], "caféaulait"),
    (["...", "--", "!"], ""),
])
def test_sentence_key(tokens, key):
    assert sentence_key(tokens) == key


def test_word_count_ignores_punctuation_and_brackets():
    assert word_count(["I", "do", "n't", "know", "-LRB-", "it", "-RRB-", "."]) == 5


def _index(min_words=4):
    return EvalIndex.build({
        "test_a": [("a:1", "The cat sat on the mat .".split()), ("a:2", "Yes .".split())],
        "test_b": [("b:1", ["``", "Yes", "''"])],
    }, min_words)


def test_overlaps_are_all_reported_and_only_long_ones_counted():
    index = _index(min_words=4)
    train = [("t:1", "the CAT sat on the mat".split()), ("t:2", ["yes", "!"]), ("t:3", ["no"])]
    overlaps = list(find_overlaps("lm", train, index))
    assert [(o.location, o.split, o.eval_location, o.words, o.counted) for o in overlaps] == [
        ("t:1", "test_a", "a:1", 6, True),
        ("t:2", "test_a", "a:2", 1, False),
        ("t:2", "test_b", "b:1", 1, False),
    ]
    report = summarize(overlaps, index, {"lm": 3})
    assert report["counted_overlaps"] == 1 and report["below_threshold_overlaps"] == 2
    assert report["by_text_and_split"]["lm"]["test_a"] == {"counted": 1, "below_threshold": 1,
                                                          "eval_sentences_hit": 1}
    assert not report["passed"]
    with pytest.raises(ContaminationError, match=r"(?s)1 training sentences of >= 4 words.*lm t:1 = test_a a:1"):
        check(overlaps, 4)
    check([o for o in overlaps if not o.counted], 4)     # short collisions alone pass


def test_remove_documents_drops_whole_documents_with_a_counted_overlap():
    docs = [("d1", [["Hello", "there"], "The cat sat on the mat .".split()]),   # counted overlap
            ("d2", [["Yes", "."], ["Another", "line"]]),                       # short overlap only
            ("d3", [["Clean", "text"]])]
    kept, removed = remove_documents(docs, _index(min_words=4))
    assert [doc for doc, _ in kept] == ["d2", "d3"]
    assert list(removed) == ["d1"] and removed["d1"][0].eval_location == "a:1"


def test_index_rejects_an_empty_split_and_a_bad_threshold():
    with pytest.raises(InputError, match="empty_split: evaluation split has no sentences"):
        EvalIndex.build({"empty_split": []}, 8)
    with pytest.raises(ValueError, match="min_words must be >= 1"):
        EvalIndex.build({"x": [("x:1", ["a"])]}, 0)


# ------------------------------------------------------------------------ readers on fixtures

def _mirror(root: Path) -> Path:
    """A miniature mirror with one sentence or two in every evaluation split's format."""
    (root / "conll2003").mkdir(parents=True)
    for name in ("eng.testa", "eng.testb"):
        (root / "conll2003" / name).write_text(
            "-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP O\n\nPeter NNP I-NP I-PER\n",
            encoding="utf-8")
    (root / "sst5/trees").mkdir(parents=True)
    for name in ("dev", "test"):
        (root / f"sst5/trees/{name}.txt").write_text("(3 (2 It) (4 (2 's) (3 lovely)))\n", encoding="utf-8")
    snli = root / "snli/esnli_infersent_format"
    snli.mkdir(parents=True)
    for split in ("dev", "test"):
        (snli / f"s1.{split}").write_text("A man sleeps . \n", encoding="utf-8")
        (snli / f"s2.{split}").write_text("A person rests . \n", encoding="utf-8")
    (root / "squad_v1.1").mkdir()
    (root / "squad_v1.1/dev-v1.1.json").write_text(json.dumps({"data": [{"paragraphs": [{
        "context": "Denver won. The game was in 2016.", "qas": [{"question": "Who won?"}]}]}]}),
        encoding="utf-8")
    for split in ("devel", "test.wsj", "test.brown"):
        words = root / f"srl_conll2005/{split}/words"
        words.mkdir(parents=True)
        (words / f"{split}.words.gz").write_bytes(gzip.compress(b"He\nleft\n.\n  \nShe\nstayed\n"))
    (root / "litbank_coref/conll").mkdir(parents=True)
    (root / "litbank_coref/conll/1_book.conll").write_text(
        "#begin document (1_book); part 0\n1_book\t0\t0\tCall\t_\n1_book\t0\t1\tme\t_\n\n"
        "1_book\t0\t0\tIshmael\t_\n#end document\n", encoding="utf-8")
    for name in eval_text.WSD_DATASETS:
        (root / f"wsd_raganato_eval/{name}").mkdir(parents=True)
        (root / f"wsd_raganato_eval/{name}/{name}.data.xml").write_text(
            '<?xml version="1.0"?><corpus><text id="d0"><sentence id="d0.s0"><wf lemma="that">That</wf>'
            '<wf lemma="be">&apos;s</wf><instance id="d0.s0.t0" lemma="it">it</instance></sentence></text></corpus>',
            encoding="utf-8")
    (root / "ptb_wsj_sample_nltk/corpora").mkdir(parents=True)
    with zipfile.ZipFile(root / "ptb_wsj_sample_nltk/corpora/treebank.zip", "w") as archive:
        archive.writestr("treebank/combined/wsj_0001.mrg",
                         "( (S \n    (NP-SBJ (NNP Pierre) )\n    (VP (VBD left) (-NONE- *T*-1) )\n    (. .) ))\n"
                         "( (S (NP (PRP It) ) (VP (VBD rained) ) ))\n")
    (root / "multi30k/raw").mkdir(parents=True)
    for name in ("val", "test_2016_flickr"):
        (root / f"multi30k/raw/{name}.en.gz").write_bytes(gzip.compress(b"A dog's ball.\n"))
    return root


def test_every_split_reader_on_fixtures(tmp_path):
    mirror = _mirror(tmp_path)
    read = {name: list(eval_text.read_split(mirror, name)) for name in eval_text.SPLITS}
    assert [t for _, t in read["conll2003_testa"]] == [["EU", "rejects"], ["Peter"]]
    assert read["conll2003_testa"][1][0].endswith("eng.testa:6")
    assert [t for _, t in read["sst5_dev"]] == [["It", "'s", "lovely"]]
    assert [t for _, t in read["snli_test"]] == [["A", "man", "sleeps", "."], ["A", "person", "rests", "."]]
    assert [t for _, t in read["squad_dev"]] == [["Denver", "won", "."], ["The", "game", "was", "in", "2016", "."],
                                                 ["Who", "won", "?"]]
    assert [t for _, t in read["conll2005_test_brown"]] == [["He", "left", "."], ["She", "stayed"]]
    assert [t for _, t in read["litbank"]] == [["Call", "me"], ["Ishmael"]]
    assert [t for _, t in read["wsd_senseval3"]] == [["That", "'s", "it"]]
    assert read["wsd_senseval3"][0][0].endswith(":d0.s0")
    assert [t for _, t in read["ptb_wsj_sample"]] == [["Pierre", "left", "."], ["It", "rained"]]
    assert read["ptb_wsj_sample"][1][0].endswith("wsj_0001.mrg:5")
    assert [t for _, t in read["multi30k_val"]] == [["A", "dog", "'s", "ball", "."]]
    # the index over all of them, as the stage builds it
    config = {"splits": list(eval_text.SPLITS), "min_words": 2}
    index = eval_text.build_index(mirror, config)
    assert index.sentences["squad_dev"] == 3 and len(index.sentences) == len(eval_text.SPLITS)


def test_missing_or_broken_split_files_name_the_file(tmp_path):
    with pytest.raises(InputError, match=r"eng.testb: evaluation file not found"):
        list(eval_text.read_split(tmp_path, "conll2003_testb"))
    with pytest.raises(InputError, match=r"words: no \*.words.gz file"):
        list(eval_text.read_split(tmp_path, "conll2005_dev"))
    (tmp_path / "squad_v1.1").mkdir()
    (tmp_path / "squad_v1.1/dev-v1.1.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="dev-v1.1.json: not a SQuAD JSON file"):
        list(eval_text.read_split(tmp_path, "squad_dev"))
    with pytest.raises(ValueError, match="unknown evaluation split 'nope'"):
        eval_text.read_split(tmp_path, "nope")
    with pytest.raises(ValueError, match="contamination.splits must be distinct names"):
        eval_text.build_index(tmp_path, {"splits": ["squad_dev", "typo"], "min_words": 8})


# ------------------------------------------------------------------------------- real mirror

@real_data
def test_check_catches_the_brown_leaks_and_removal_fixes_them():
    """Raw Brown holds CoNLL-2005 test.brown (ck01-ck03) and Senseval-3 d000 (cl23): the check
    counts hundreds of long overlaps there; removing the documents leaves none."""
    index = eval_text.build_index(SHARED, {"splits": ["conll2005_test_brown", "wsd_senseval3"], "min_words": 8})
    documents = list(read_source_documents(SHARED, "brown"))
    raw = [o for doc, sentences in documents
           for o in find_overlaps("brown", ((doc, s) for s in sentences), index) if o.counted]
    by_doc = {doc: {o.split for o in raw if o.location == doc} for doc in {o.location for o in raw}}
    assert by_doc == {"brown/ck01": {"conll2005_test_brown"}, "brown/ck02": {"conll2005_test_brown"},
                      "brown/ck03": {"conll2005_test_brown"}, "brown/cl23": {"wsd_senseval3"}}
    hit = {o.eval_location for o in raw if o.split == "conll2005_test_brown"}
    assert len(hit) > 250            # of test.brown's 426 sentences (the rest are under 8 words)
    with pytest.raises(ContaminationError):
        check(raw, 8)
    kept, removed = remove_documents(documents, index)
    assert sorted(removed) == ["brown/ck01", "brown/ck02", "brown/ck03", "brown/cl23"]
    assert len(kept) == len(documents) - 4


@real_data
def test_cleaned_lm_text_passes_against_every_split():
    """The tiny profile's training text, built with removal, has no counted overlap with any
    evaluation split in the mirror (what the check_contamination stage verifies)."""
    from workflow.profile import render
    config = render("tiny")["contamination"]
    index = eval_text.build_index(SHARED, config)
    train, heldout, stats = build_split(SHARED, TINY_SPLITS, 50000, exclude=index)
    assert stats["removed_documents"]["brown"] == {
        "brown/ck01": ["conll2005_test_brown"], "brown/ck02": ["conll2005_test_brown"],
        "brown/ck03": ["conll2005_test_brown"], "brown/cl23": ["wsd_senseval3"]}
    assert stats["removed_documents"]["lm1b_dev"] == {} and stats["removed_documents"]["abc"] == {}
    overlaps = list(find_overlaps("lm_train", ((str(i), s) for i, s in enumerate(train)), index))
    check(overlaps, index.min_words)
    assert max(o.words for o in overlaps) < 8       # what remains: short chance collisions
    assert {sentence_key(s) for s in heldout}.isdisjoint(sentence_key(s) for s in train)


def test_stage_reports_every_overlap_and_fails_on_a_leak(tmp_path, monkeypatch):
    """check_contamination on the fixture mirror: a training text holding an evaluation sentence
    of >= min_words words fails the stage after the report is written; shorter ones pass."""
    import yaml

    from stages import check_contamination
    from workflow.profile import render

    repo = tmp_path / "repo"
    mirror = _mirror(tmp_path / "mirror")
    (repo / "data/lm").mkdir(parents=True)
    params = render("smoke")                                          # a whole, valid params file
    params["data"]["mirror"] = str(mirror)
    params["contamination"] = {"min_words": 3, "splits": list(eval_text.SPLITS)}
    (repo / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    (repo / "data/lm/heldout.txt").write_text("a held out line\n", encoding="utf-8")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    (repo / "data/lm/train.txt").write_text("Call me !\nsome clean text\n", encoding="utf-8")
    check_contamination.main(["--threads", "1", "--text", "lm"])   # "Call me" has 2 words: reported, not counted
    report = json.loads((repo / "results/metrics/contamination.json").read_text())
    assert report["passed"] and report["below_threshold_overlaps"] == 1
    assert report["by_text_and_split"]["lm_train"]["litbank"]["below_threshold"] == 1
    (repo / "data/lm/train.txt").write_text("clean\nThe game was in 2016 .\nA held-out line\n", encoding="utf-8")
    with pytest.raises(ContaminationError, match=r"2 training sentences of >= 3 words"):
        check_contamination.main(["--threads", "1", "--text", "lm"])
    report = json.loads((repo / "results/metrics/contamination.json").read_text())
    assert not report["passed"] and report["counted_overlaps"] == 2
    assert report["by_text_and_split"]["lm_train"]["squad_dev"]["counted"] == 1
    assert report["by_text_and_split"]["lm_train"]["lm_heldout_sample"]["counted"] == 1
    lines = (repo / "results/contamination/overlaps.tsv").read_text().splitlines()
    assert lines[1].startswith("lm_train\tdata/lm/train.txt:2\tsquad_dev\t")
