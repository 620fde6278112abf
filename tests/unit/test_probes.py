"""The layer probes of paper §5.3: the WSD data and 1-NN rule (Table 5), WordNet's first senses,
the PTB POS data and the linear probe (Table 6)."""

import io
import zipfile
from pathlib import Path

import pytest
import torch

from elmo_repro.data.ptb_pos import DEFAULT_SPLIT, bilm_word, iter_tagged_trees, split_documents
from elmo_repro.data.wsd import DATASETS, DEFAULT_TEST, DEFAULT_TRAIN, Instance, read_gold_keys, read_wsd_dataset
from elmo_repro.io import InputError
from elmo_repro.probes.pos import accuracy, most_frequent_tags, train_linear_probe
from elmo_repro.probes.wordnet import read_first_senses
from elmo_repro.probes.wsd import FIRST_SENSE, NEAREST, UNANSWERED, fit_senses, predict_senses, wsd_scores

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
WORDNET = ROOT / "external" / "wordnet-3.0"       # installed by setup.sh

pytestmark = pytest.mark.usefixtures("one_thread")


def instance(i, lemma, senses, pos="NOUN"):
    return Instance(f"d.s.t{i}", 0, i, lemma, pos, tuple(senses))


# --- WSD: the 1-NN rule, worked by hand -------------------------------------------------------

def test_nearest_sense_mean_and_first_sense_fallback():
    train = [instance(0, "bank", ["bank%1:14:00::"]), instance(1, "bank", ["bank%1:14:00::"]),
             instance(2, "bank", ["bank%1:17:01::"]),
             instance(3, "bank", ["bank%1:17:01::", "bank%1:17:00::"])]     # two gold keys: both get it
    vectors = torch.tensor([[1.0, 0.0], [3.0, 2.0], [0.0, 1.0], [0.0, 3.0]])
    table = fit_senses(vectors, train)
    assert table.senses["bank", "NOUN"] == ["bank%1:14:00::", "bank%1:17:00::", "bank%1:17:01::"]
    # means: 14:00 (2, 1)/|.|, 17:00 (0, 3) -> (0, 1), 17:01 (0, 2) -> (0, 1)
    assert torch.allclose(table.means["bank", "NOUN"][0], torch.tensor([2.0, 1.0]).double() / 5 ** 0.5)
    test = [instance(0, "bank", ["bank%1:14:00::"]),          # (1, 0.4): cos 0.97 to (2,1)/√5 vs 0.37
            instance(1, "bank", ["bank%1:17:01::"]),          # (0.1, 1): the two (0, 1) senses tie
            instance(2, "river", ["river%1:17:00::"]),        # lemma unseen: WordNet's first sense
            instance(3, "zzz", ["zzz%1:01:00::"])]            # not in WordNet either: no answer
    first = {("river", "NOUN"): "river%1:17:00::"}
    answers = predict_senses(table, torch.tensor([[1.0, 0.4], [0.1, 1.0], [5.0, 5.0], [1.0, 1.0]]), test, first)
    # the tie between 17:00 and 17:01 goes to the first in sorted order (17:00): wrong here
    assert answers == [("bank%1:14:00::", NEAREST), ("bank%1:17:00::", NEAREST),
                       ("river%1:17:00::", FIRST_SENSE), (None, UNANSWERED)]
    scores = wsd_scores([a for a, _ in answers], test)
    # 2 correct of 3 answered of 4: P 66.67, R 50, F1 = 2PR/(P+R) = 57.14
    assert scores["correct"] == 2 and scores["answered"] == 3
    assert scores["precision"] == pytest.approx(200 / 3) and scores["recall"] == 50.0
    assert scores["f1"] == pytest.approx(2 * (200 / 3) * 50 / (200 / 3 + 50))
    assert [table.seen(i) for i in test] == [True, True, False, False]


def test_senses_are_grouped_by_lemma_and_pos():
    train = [instance(0, "play", ["play%1:10:01::"], "NOUN"), instance(1, "play", ["play%2:33:00::"], "VERB")]
    table = fit_senses(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), train)
    # a verb token near the noun's vector still gets the verb sense: the noun's is not a candidate
    answers = predict_senses(table, torch.tensor([[1.0, 0.0]]), [instance(0, "play", ["x%2:0"], "VERB")], {})
    assert answers == [("play%2:33:00::", NEAREST)]


def test_wsd_shapes_are_checked():
    with pytest.raises(ValueError, match=r"expected \(2, dim\)"):
        fit_senses(torch.zeros(3, 4), [instance(0, "a", ["a%1"]), instance(1, "a", ["a%1"])])


# --- WSD data: the real files and bad input ---------------------------------------------------

def test_reader_counts_on_the_shared_files():
    expected = {"senseval2": (242, 2282), "senseval3": (352, 1850), "semeval2007": (135, 455),
                "semeval2013": (306, 1644), "semeval2015": (138, 1022)}      # SOURCE.md
    assert set(DEFAULT_TRAIN) | set(DEFAULT_TEST) == set(DATASETS) and not set(DEFAULT_TRAIN) & set(DEFAULT_TEST)
    for name in DATASETS:
        data = read_wsd_dataset(SHARED / "wsd_raganato_eval" / name)
        assert (len(data.sentences), len(data.instances)) == expected[name], name
        first = data.instances[0]
        assert data.sentences[first.sentence][first.token]        # the index points at a word
    senseval2 = read_wsd_dataset(SHARED / "wsd_raganato_eval" / "senseval2")
    art = senseval2.instances[0]
    assert (art.id, art.lemma, art.pos, art.senses) == ("d000.s000.t000", "art", "NOUN", ("art%1:09:00::",))
    assert senseval2.sentences[0][art.token] == "art"
    assert senseval2.instances[2].senses == ("peculiar%5:00:00:specific:00", "peculiar%5:00:00:characteristic:00")


def write_wsd(tmp_path, xml, gold):
    directory = tmp_path / "mini"
    directory.mkdir(parents=True)
    (directory / "mini.data.xml").write_text(xml)
    (directory / "mini.gold.key.txt").write_text(gold)
    return directory


XML = """<?xml version="1.0" encoding="UTF-8" ?>
<corpus lang="en" source="mini"><text id="d0"><sentence id="d0.s0">
<wf lemma="the" pos="DET">The</wf><instance id="d0.s0.t0" lemma="bank" pos="NOUN">bank</instance>
</sentence></text></corpus>"""


def test_wsd_bad_input_names_the_file_and_line(tmp_path):
    data = read_wsd_dataset(write_wsd(tmp_path, XML, "d0.s0.t0 bank%1:14:00::\n"))
    assert data.sentences == [["The", "bank"]] and data.instances[0].token == 1
    with pytest.raises(InputError, match=r"mini.gold.key.txt:2: expected 'instance_id sensekey"):
        read_gold_keys(write_wsd(tmp_path / "a", XML, "d0.s0.t0 bank%1:14:00::\nd0.s0.t1\n") / "mini.gold.key.txt")
    with pytest.raises(InputError, match=r"no gold sense for instance 'd0.s0.t0'"):
        read_wsd_dataset(write_wsd(tmp_path / "b", XML, "other bank%1:14:00::\n"))
    with pytest.raises(InputError, match="not valid XML"):
        read_wsd_dataset(write_wsd(tmp_path / "c", XML[:-10], "d0.s0.t0 bank%1:14:00::\n"))
    with pytest.raises(InputError, match="a POS in"):
        read_wsd_dataset(write_wsd(tmp_path / "d", XML.replace('pos="NOUN"', 'pos="X"'), "d0.s0.t0 bank%1:14:00::\n"))


# --- WordNet 3.0 first senses -----------------------------------------------------------------

def test_first_senses_of_a_hand_made_index(tmp_path):
    (tmp_path / "index.sense").write_text(
        "bank%1:14:00:: 08420278 2 20\nbank%1:17:01:: 09213565 1 25\nbank%2:38:00:: 02039413 1 2\n"
        "peculiar%3:00:00:: 01 2 0\npeculiar%5:00:00:strange:00 02 1 0\nfast%4:02:01:: 03 1 0\n")
    first = read_first_senses(tmp_path, check_version=False)
    assert first == {("bank", "NOUN"): "bank%1:17:01::", ("bank", "VERB"): "bank%2:38:00::",
                     ("peculiar", "ADJ"): "peculiar%5:00:00:strange:00", ("fast", "ADV"): "fast%4:02:01::"}
    with pytest.raises(InputError, match="not WordNet 3.0"):
        read_first_senses(tmp_path)
    (tmp_path / "index.sense").write_text("bank%1:14:00:: 08420278 x 20\n")
    with pytest.raises(InputError, match=r"index.sense:1: expected"):
        read_first_senses(tmp_path, check_version=False)
    with pytest.raises(InputError, match="setup.sh"):
        read_first_senses(tmp_path / "missing")


def test_wordnet_first_sense_reproduces_raganato_et_al():
    """The installed WordNet 3.0 and the reader give the "WN 1st sense" row of Raganato et al.
    (2017, Table 4): 66.8, 66.2, 55.2, 63.0, 67.8 F1."""
    assert (WORDNET / "index.sense").is_file(), "WordNet 3.0 is missing: run `bash setup.sh`"
    first = read_first_senses(WORDNET)
    assert first["bank", "NOUN"] == "bank%1:17:01::" and first["play", "VERB"] == "play%2:33:00::"
    published = {"senseval2": 66.8, "senseval3": 66.2, "semeval2007": 55.2, "semeval2013": 63.0, "semeval2015": 67.8}
    for name, f1 in published.items():
        data = read_wsd_dataset(SHARED / "wsd_raganato_eval" / name)
        answers = [first.get((i.lemma, i.pos)) for i in data.instances]
        assert round(wsd_scores(answers, data.instances)["f1"], 1) == f1, name


# --- POS: the PTB sample and the linear probe -------------------------------------------------

def test_ptb_sample_counts_and_split():
    sentences = list(iter_tagged_trees(SHARED / "ptb_wsj_sample_nltk" / "corpora" / "treebank.zip"))
    assert len(sentences) == 3914 and sum(len(s.words) for s in sentences) == 94084     # SOURCE.md
    assert sentences[0].words[:3] == ["Pierre", "Vinken", ","] and sentences[0].tags[:3] == ["NNP", "NNP", ","]
    assert all("-NONE-" not in s.tags for s in sentences)
    parts = split_documents(sentences)
    assert {k: len(v) for k, v in parts.items()} == {"train": 3167, "dev": 358, "test": 389}
    assert max(s.document for s in parts["train"]) < min(s.document for s in parts["dev"])
    with pytest.raises(ValueError, match="overlap"):
        split_documents(sentences, {**DEFAULT_SPLIT, "dev": (140, 172)})


def test_ptb_bad_trees_name_the_member_and_line(tmp_path):
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("treebank/combined/wsj_0001.mrg", "( (S (NP (DT The) (NN cat) (-NONE- *T*-1))\n  (VP (VBD sat) )))\n"
                   "( (S (NN x) )))\n")
    (tmp_path / "treebank.zip").write_bytes(archive.getvalue())
    with pytest.raises(InputError, match=r"wsj_0001.mrg:3: unbalanced"):
        list(iter_tagged_trees(tmp_path / "treebank.zip"))
    first = next(iter_tagged_trees(tmp_path / "treebank.zip"))
    assert (first.words, first.tags, first.document) == (["The", "cat", "sat"], ["DT", "NN", "VBD"], 1)
    assert [bilm_word(w) for w in ["-LRB-", "3\\/4", "\\*", "-RCB-", "--"]] == ["(", "3/4", "*", "}", "--"]


def test_linear_probe_separates_a_separable_set():
    generator = torch.Generator().manual_seed(0)
    centres = torch.tensor([[4.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 4.0]])

    def sample(n):
        tags = torch.arange(n) % 3
        return centres[tags] + 0.5 * torch.randn(n, 3, generator=generator), tags

    train, dev, test = sample(300), sample(60), sample(90)
    result = train_linear_probe(train, dev, test, 3, max_epochs=20, patience=3, batch_size=16, lr=0.05, seed=1)
    assert result.test_accuracy == 100.0 and result.dev_accuracy == 100.0
    # Dev accuracy peaks (100%) at best_epoch; three epochs without a better one stop the probe.
    assert len(result.history) == result.best_epoch + 3 < 20 and result.converged
    assert result.history[0]["epoch"] == 1 and len(result.test_predictions) == 90
    # With two epochs at most and a patience of 3, the probe cannot show it stopped improving.
    again = train_linear_probe(train, dev, test, 3, max_epochs=2, patience=3, batch_size=16, lr=0.05, seed=1)
    assert again.best_epoch in (1, 2) and len(again.history) == 2 and not again.converged
    with pytest.raises(ValueError, match="max_epochs must be an integer >= 1"):
        train_linear_probe(sample(3), sample(3), sample(3), 3, max_epochs=0, patience=1, batch_size=16, lr=0.05,
                           seed=1)


def test_same_seed_same_probe():
    x, y = torch.randn(50, 4, generator=torch.Generator().manual_seed(3)), torch.arange(50) % 2
    a = train_linear_probe((x, y), (x, y), (x, y), 2, max_epochs=3, patience=2, batch_size=8, lr=0.01, seed=7)
    b = train_linear_probe((x, y), (x, y), (x, y), 2, max_epochs=3, patience=2, batch_size=8, lr=0.01, seed=7)
    assert a.history == b.history and a.test_predictions == b.test_predictions


def test_most_frequent_tag_baseline():
    words = ["the", "run", "run", "run", "dog", "the"]
    tags = ["DT", "VB", "NN", "NN", "NN", "DT"]
    best, unseen = most_frequent_tags(words, tags)
    assert best == {"the": "DT", "run": "NN", "dog": "NN"} and unseen == "NN"      # NN 3, DT 2, VB 1
    assert accuracy(torch.tensor([1, 2, 3]), torch.tensor([1, 0, 3])) == pytest.approx(200 / 3)


# --- Table 4: nearest neighbours --------------------------------------------------------------

def test_static_and_contextual_neighbours_by_hand():
    from elmo_repro.probes.neighbours import contextual_neighbours, occurrences, static_neighbours

    words = ["play", "game", "played", "bank", "zero"]
    matrix = [[1.0, 0.0], [0.8, 0.6], [1.0, 0.1], [0.0, 1.0], [0.0, 0.0]]
    # cosines with play: game 0.8, played 1/sqrt(1.01) = 0.995, bank 0, zero 0 (a zero vector)
    assert [w for w, _ in static_neighbours(words, matrix, "play", 3)] == ["played", "game", "bank"]
    with pytest.raises(KeyError, match="'plays' has no static vector"):
        static_neighbours(words, matrix, "plays", 1)
    sentences = [["a", "play", "on", "play"], ["we", "play"], ["the", "play"]]
    found = occurrences(sentences, "play")
    assert [(o.sentence, o.token) for o in found] == [(0, 1), (0, 3), (1, 1), (2, 1)]
    vectors = [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.9, 0.1]]
    # occurrence 1 shares the query's sentence: skipped though identical
    assert [i for i, _ in contextual_neighbours(vectors, 0, 2, [o.sentence for o in found])] == [3, 2]
    assert [i for i, _ in contextual_neighbours(vectors, 0, 1)] == [1]


def test_a_table5_row_per_set_overall_and_seen():
    from elmo_repro.probes.wsd import evaluate_layer

    train = [instance(0, "bank", ["bank%1:14:00::"]), instance(1, "bank", ["bank%1:17:01::"])]
    test_a = [instance(0, "bank", ["bank%1:14:00::"]), instance(1, "bank", ["bank%1:17:00::"])]   # 2nd: unseen sense
    test_b = [instance(0, "river", ["river%1:17:00::"])]
    metrics, answers = evaluate_layer(
        (torch.tensor([[1.0, 0.0], [0.0, 1.0]]), train),
        {"a": (torch.tensor([[1.0, 0.1], [0.0, 1.0]]), test_a), "b": (torch.tensor([[1.0, 1.0]]), test_b)},
        {("river", "NOUN"): "river%1:17:00::"})
    assert answers == {"a": ["bank%1:14:00::", "bank%1:17:01::"], "b": ["river%1:17:00::"]}
    assert metrics["a_f1"] == 50.0 and metrics["b_f1"] == 100.0
    assert metrics["all_f1"] == pytest.approx(200 / 3)          # 2 of 3
    assert "paper_pool_f1" not in metrics                       # no SemEval-2007 to leave out: the pool is all
    # Named as the paper's left-out set, "a" leaves the pool: the paper's ALL is then "b" alone.
    pooled, _ = evaluate_layer(
        (torch.tensor([[1.0, 0.0], [0.0, 1.0]]), train),
        {"semeval2007": (torch.tensor([[1.0, 0.1], [0.0, 1.0]]), test_a), "b": (torch.tensor([[1.0, 1.0]]), test_b)},
        {("river", "NOUN"): "river%1:17:00::"})
    assert pooled["paper_pool_f1"] == 100.0 and pooled["all_f1"] == pytest.approx(200 / 3)
    assert metrics["seen_instances"] == 1 and metrics["seen_f1"] == 100.0
    assert (metrics["nearest_answers"], metrics["first_sense_answers"], metrics["unanswered_answers"]) == (2, 1, 0)


def test_the_first_sense_row_scores_the_same_seen_subset():
    from elmo_repro.probes.wsd import first_sense_baseline

    train = [instance(0, "bank", ["bank%1:14:00::"])]
    test = [instance(0, "bank", ["bank%1:14:00::"]), instance(1, "bank", ["bank%1:17:01::"]),
            instance(2, "zzz", ["zzz%1:00:00::"])]
    metrics, answers = first_sense_baseline(train, {"a": test}, {("bank", "NOUN"): "bank%1:17:01::"})
    assert answers == {"a": ["bank%1:17:01::", "bank%1:17:01::", None]}
    # P = 1/2 answered, R = 1/3: F1 = 2 * .5 * .333 / .833 = 40
    assert metrics["a_f1"] == pytest.approx(40.0) and metrics["all_f1"] == pytest.approx(40.0)
    assert metrics["seen_instances"] == 1 and metrics["seen_f1"] == 0.0       # the seen one gets the 1st sense, wrong
    assert (metrics["nearest_answers"], metrics["first_sense_answers"], metrics["unanswered_answers"]) == (0, 2, 1)


def test_a_treebank_directory_and_a_semcor_style_directory(tmp_path):
    (tmp_path / "wsj" / "01").mkdir(parents=True)
    (tmp_path / "wsj" / "01" / "wsj_0102.mrg").write_text("( (S (NP (NNP Ms.) (NNP Haag)) (VP (VBZ plays))))\n")
    (tmp_path / "wsj" / "00").mkdir()
    (tmp_path / "wsj" / "00" / "wsj_0001.mrg").write_text("( (S (NN x)))\n")
    trees = list(iter_tagged_trees(tmp_path / "wsj"))
    assert [(t.document, t.words) for t in trees] == [(1, ["x"]), (102, ["Ms.", "Haag", "plays"])]
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no wsj_\\*.mrg file under this directory"):
        list(iter_tagged_trees(tmp_path / "empty"))
    semcor = tmp_path / "SemCor"
    semcor.mkdir()
    (semcor / "semcor.data.xml").write_text('<corpus><text><sentence id="d000.s000"><wf>He</wf>'
                                            '<instance id="d000.s000.t000" lemma="play" pos="VERB">plays</instance>'
                                            '<instance id="d000.s000.t001" lemma="make_up" pos="VERB">made up'
                                            '</instance><wf>.</wf></sentence></text></corpus>')
    (semcor / "semcor.gold.key.txt").write_text("d000.s000.t000 play%2:33:00::\nd000.s000.t001 make_up%2:36:00::\n")
    data = read_wsd_dataset(semcor)
    assert data.name == "semcor" and data.instances[0].senses == ("play%2:33:00::",)
    # a multi-word target becomes its words; the instance spans them
    assert data.sentences == [["He", "plays", "made", "up", "."]]
    assert (data.instances[1].token, data.instances[1].n_words) == (2, 2)


def test_a_layer_the_file_does_not_hold_is_a_clear_error(tmp_path):
    import numpy as np

    from elmo_repro.elmo.features import write_layer_file
    from elmo_repro.probes.corpora import layer_name, read_layer

    path = tmp_path / "cove.hdf5"
    write_layer_file(path, iter([(0, np.ones((2, 3, 4))), (1, 2 * np.ones((2, 1, 4)))]), [["a", "b", "c"], ["d"]],
                     "float32")
    assert read_layer(path, "cove", 2)[1].tolist() == [[2.0] * 4]      # CoVe layer 2 is the file's index 1
    with pytest.raises(ValueError, match=r"cove.hdf5: cove layer 3 is not in the file \(it holds layers 1 .. 2\)"):
        read_layer(path, "cove", 3)
    with pytest.raises(ValueError, match=r"bilm layer 2 is not in the file \(it holds layers 0 .. 1\)"):
        read_layer(path, "bilm", 2)
    assert [layer_name("bilm", 0), layer_name("bilm", 2), layer_name("cove", 1)] == [
        "biLM char layer", "biLM layer 2", "CoVe layer 1"]


def test_table_views_and_their_significance_tests():
    from elmo_repro.views.probes import mcnemar_p, render_table5, render_table6, table5, table6

    # McNemar by hand: 5 instances only layer 2 gets right, none only layer 1: p = 2 * 0.5^5 = 0.0625
    assert mcnemar_p({"a": "1100000"}, {"a": "1111111"}) == pytest.approx(0.0625)
    assert mcnemar_p({"a": "10"}, {"a": "10"}) is None
    with pytest.raises(ValueError, match="different instances"):
        mcnemar_p({"a": "10"}, {"a": "101"})
    metrics = {"semeval2007_f1": 40.0, "x_f1": 50.0, "all_f1": 50.0, "paper_pool_f1": 45.0, "seen_f1": 60.0,
               "seen_instances": 5, "nearest_answers": 5, "first_sense_answers": 2, "unanswered_answers": 0}
    rows = [{"row": f"biLM layer {layer}", "source": "bilm", "layer": layer, "train": ["s2"],
             "test": ["semeval2007", "x"], "metrics": {**metrics, "all_f1": 50.0 + layer}, "correct": {"x": bits}}
            for layer, bits in ((1, "1100000"), (2, "1111111"))]
    wsd = table5(rows, ROOT / "paper" / "table5.csv")
    assert [r["paper_f1"] for r in wsd["rows"]] == ["67.4", "69.0"]
    assert wsd["layer1_vs_layer2"]["bilm"]["mcnemar_p"] == pytest.approx(0.0625)
    text = render_table5(wsd, "tiny")
    assert "| biLM layer 2 | 40.0 | 50.0 | 52.0 | 45.0 | 60.0 | 5 / 2 / 0 | 69.0 |" in text and "p = 0.0625" in text
    # The caption says what the code does: 5 answered by the nearest sense, 0 of them unseen; x pooled.
    assert "takes the nearest sense mean (5 instances, of which 0 have" in text and "(x)" in text
    pos_rows = [{"row": f"CoVe layer {layer}", "source": "cove", "layer": layer, "seeds": [0, 1, 2],
                 "per_seed": scores, "mean": sum(scores) / 3, "std": 1.0, "dev_mean": 90.0,
                 "still_learning": [False, layer == 1, False], "best_epochs": [12, 200, 30],
                 "tokens": {"train": 10, "dev": 5, "test": 5}}
                for layer, scores in ((1, [91.0, 92.0, 93.0]), (2, [89.0, 90.0, 91.0]))]
    pos = table6(pos_rows, ROOT / "paper" / "table6.csv")
    # Welch by hand: difference 2, both variances 1, n = 3: t = 2 / sqrt(2/3) = 2.449, df = 4: p = 0.0705
    assert pos["layer1_vs_layer2"]["cove"]["welch_p"] == pytest.approx(0.0705, abs=1e-4)
    assert ("| CoVe layer 1 | 92.00 ± 1.00 [91.00 (epoch 12), 92.00† (epoch 200), 93.00 (epoch 30)] | 90.00 | 93.3 |"
            in render_table6(pos, "tiny"))
