"""SQuAD's parts (issue 24): the official v1.1 metric on hand-worked cases, tokenisation with
offsets, answer spans, the reader's errors, the split by article, span decoding, the
sliding-window floor, the attention layers, the BiGRU and the weight average."""

import json

import pytest
import torch
from overfit import overfit

from elmo_repro.tasks.squad.reader import (answer_span, examples, read_articles, sentence_bounds, span_text,
                                   split_articles, tokenize)
from elmo_repro.io import InputError
from elmo_repro.tasks.squad.metric import exact_match, normalize_answer, squad_scores, token_f1
from elmo_repro.nn.attention import BiAttention, SelfAttention, TriLinear
from elmo_repro.nn.bigru import BiGRU
from elmo_repro.tasks.squad.decode import best_spans
from elmo_repro.tasks.squad.sliding_window import sliding_window_span
from elmo_repro.training.ema import WeightAverage


# --- metric (evaluate-v1.1.py semantics) ---------------------------------------------------------

def test_normalisation_drops_case_ascii_punctuation_articles_and_spaces():
    assert normalize_answer("The  Denver Broncos!") == "denver broncos"
    assert normalize_answer("an apple, a pear") == "apple pear"
    assert normalize_answer("“Quoted” – text") == "“quoted” – text"           # not ASCII punctuation


def test_exact_match_and_f1_by_hand():
    assert exact_match("the Broncos", "Broncos.") == 1.0
    # prediction "denver broncos team" vs "broncos": common 1, P 1/3, R 1, F1 = 2·(1/3)/(4/3) = 0.5
    assert token_f1("Denver Broncos team", "the Broncos") == pytest.approx(0.5)
    assert token_f1("", "Broncos") == 0.0
    # v1.1's quirk: an empty prediction against a reference that normalises to "" (EM 1, F1 0)
    assert exact_match("", "the") == 1.0 and token_f1("", "the") == 0.0


def test_scores_take_the_best_reference_and_average_in_percent():
    refs = {"q1": ["Broncos", "Denver Broncos"], "q2": ["1990"]}
    scores = squad_scores(refs, {"q1": "Denver Broncos", "q2": "in 1990 or 1991"})
    # q1: EM 1, F1 1. q2: EM 0, F1: common 1, P 1/4, R 1 -> 0.4
    assert scores == pytest.approx({"em": 50.0, "f1": 70.0})
    with pytest.raises(ValueError, match="no prediction for question q2"):
        squad_scores(refs, {"q1": "x"})


# --- tokenisation and spans ----------------------------------------------------------------------

def test_tokens_keep_offsets_and_split_like_ptb():
    text = "The U.S. didn't pay $1,000.50 in 1854–55; it's Tesla's."
    tokens, offsets = tokenize(text)
    assert tokens == ["The", "U.S.", "did", "n't", "pay", "$", "1,000.50", "in", "1854", "–", "55", ";",
                      "it", "'s", "Tesla", "'s", "."]
    assert all(text[s:e] == t for t, (s, e) in zip(tokens, offsets))
    assert "".join(text.split()) == "".join(tokens)                         # every character covered


def test_answer_span_maps_characters_to_tokens_and_back():
    context = "Tesla moved to New York City in 1884."
    tokens, offsets = tokenize(context)
    start = context.index("New York")
    first, last = answer_span(offsets, start, start + len("New York City"))
    assert tokens[first:last + 1] == ["New", "York", "City"]
    assert span_text(context, offsets, first, last) == "New York City"
    assert sentence_bounds(["A", "b", ".", "C", "?", "d"]) == [(0, 2), (3, 4), (5, 5)]


def _squad_file(tmp_path, answer_start):
    data = {"version": "1.1", "data": [
        {"title": "A", "paragraphs": [{"context": "Tesla was born in 1856 in Smiljan.",
                                       "qas": [{"id": "q-a", "question": "When was Tesla born?",
                                                "answers": [{"text": "1856", "answer_start": answer_start},
                                                            {"text": "in 1856", "answer_start": 15}]}]}]},
        {"title": "B", "paragraphs": [{"context": "Warsaw is on the Vistula.",
                                       "qas": [{"id": "q-b", "question": "Which river?",
                                                "answers": [{"text": "Vistula", "answer_start": 17}]}]}]}]}
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_reader_builds_first_answer_targets(tmp_path):
    articles = read_articles(_squad_file(tmp_path, 18))
    found, contexts = examples(articles)
    assert [e["id"] for e in found] == ["q-a", "q-b"]
    a = found[0]
    assert a["answers"] == ["1856", "in 1856"]                              # every reference kept
    assert a["context"][a["span"][0]:a["span"][1] + 1] == ["1856"]         # the first one is the target
    assert contexts[a["paragraph"]]["text"].startswith("Tesla")


def test_a_misplaced_answer_start_names_its_question(tmp_path):
    with pytest.raises(InputError, match=r"qas\[0\]\.answers\[0\]: question q-a: answer_start 17"):
        read_articles(_squad_file(tmp_path, 17))


def test_split_by_article_never_shares_an_article(tmp_path):
    articles = read_articles(_squad_file(tmp_path, 18))
    parts = split_articles(articles, {"report": ["B"]}, rest="train")
    assert [a.title for a in parts["report"]] == ["B"] and [a.title for a in parts["train"]] == ["A"]
    with pytest.raises(ValueError, match="named by parts"):
        split_articles(articles, {"report": ["B"], "selection": ["B"]}, rest="train")
    with pytest.raises(ValueError, match="no such article: C"):
        split_articles(articles, {"report": ["C"]}, rest="train")


# --- decoding and the floor ----------------------------------------------------------------------

def test_best_span_respects_order_length_and_padding():
    start = torch.tensor([[-1.0, 5.0, 0.0, 0.0, 9.0]])
    end = torch.tensor([[5.0, 0.0, 1.0, 4.0, 0.0]])
    mask = torch.tensor([[True, True, True, True, False]])
    # (0, 0) = 4; (1, 3) = 9 is the best of at most 3 tokens; start 4 (9) is padding
    assert best_spans(start, end, mask, 3) == [(1, 3)]
    assert best_spans(start, end, mask, 2) == [(1, 2)]                     # (1, 3) is 3 tokens long
    assert best_spans(torch.zeros(1, 3), torch.zeros(1, 3), torch.ones(1, 3, dtype=torch.bool), 2) == [(0, 0)]


def test_sliding_window_picks_the_span_beside_the_question_words():
    context = tokenize("Paris is in France. The capital of Italy is Rome. Berlin is big.")[0]
    first, last = sliding_window_span(tokenize("What is the capital of Italy?")[0], context)
    assert context[first:last + 1] == ["Rome"]


# --- layers --------------------------------------------------------------------------------------

def test_trilinear_equals_its_definition():
    torch.manual_seed(0)
    sim, x, y = TriLinear(4), torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    expected = (x @ sim.w_x)[:, :, None] + (y @ sim.w_y)[:, None, :] \
        + torch.einsum("bid,bjd,d->bij", x, y, sim.w_xy) + sim.bias
    assert torch.allclose(sim(x, y), expected, atol=1e-6)


def test_self_attention_never_attends_to_itself_or_to_padding():
    torch.manual_seed(0)
    layer = SelfAttention(3)
    x = torch.randn(1, 3, 3)
    x[0, 2] = 1e4                                                            # a padded position
    out = layer(x, torch.tensor([[True, True, False]]))
    attended = out[0, :, 3:6]
    # two real words: each can only attend to the other, with weight e^s / (e^s + e^b) = sigmoid(s - b)
    # (the no-alignment bias b, -1 at the start, takes the rest)
    s = layer.similarity(x, x)[0].detach()
    b = layer.no_alignment.detach()
    assert b.item() == -1.0
    assert torch.allclose(attended[0], torch.sigmoid(s[0, 1] - b) * x[0, 1], atol=1e-6)
    assert torch.allclose(attended[1], torch.sigmoid(s[1, 0] - b) * x[0, 0], atol=1e-6)
    with torch.no_grad():
        layer.no_alignment.fill_(-1e4)                                       # no bias: a plain softmax
    attended = layer(x, torch.tensor([[True, True, False]]))[0, :, 3:6]
    assert torch.allclose(attended[0], x[0, 1]) and torch.allclose(attended[1], x[0, 0])


def test_biattention_ignores_padding():
    torch.manual_seed(0)
    layer = BiAttention(4)
    c, q = torch.randn(1, 5, 4), torch.randn(1, 3, 4)
    short = layer(c[:, :4], q[:, :2], torch.ones(1, 4, dtype=torch.bool), torch.ones(1, 2, dtype=torch.bool))
    padded = layer(c, q, torch.tensor([[True] * 4 + [False]]), torch.tensor([[True, True, False]]))
    assert padded.shape == (1, 5, 16) and torch.allclose(padded[:, :4], short, atol=1e-6)


def test_bigru_output_does_not_depend_on_padding():
    torch.manual_seed(0)
    gru, x = BiGRU(3, 4), torch.randn(2, 5, 3)
    out = gru(x, torch.tensor([5, 3]))
    alone = gru(x[1:, :3], torch.tensor([3]))
    assert out.shape == (2, 5, 8) and torch.allclose(out[1, :3], alone[0], atol=1e-6)


def test_weight_average_is_tensorflow_ema_without_bias_correction():
    layer = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.constant_(layer.weight, 1.0)
    ema = WeightAverage(layer, decay=0.9)
    with torch.no_grad():
        layer.weight.fill_(3.0)
    ema.update()                                                             # 0.9·1 + 0.1·3 = 1.2
    with ema.applied():
        assert layer.weight.item() == pytest.approx(1.2)
    assert layer.weight.item() == 3.0                                        # trained weights back
    with pytest.raises(ValueError, match="decay 1.0"):
        WeightAverage(layer, 1.0)


# --- the reader ----------------------------------------------------------------------------------

def _reader_batch(elmo_dim=None):
    torch.manual_seed(0)
    b, tq, tc = 3, 4, 9
    lengths = torch.tensor([9, 7, 5])
    mask = torch.arange(tc)[None] < lengths[:, None]
    batch = {"question_words": torch.randint(2, 20, (b, tq)), "question_chars": torch.randint(2, 10, (b, tq, 6)),
             "question_mask": torch.ones(b, tq, dtype=torch.bool), "question_lengths": torch.full((b,), tq),
             "context_words": torch.randint(2, 20, (b, tc)) * mask, "context_chars": torch.randint(2, 10, (b, tc, 6)),
             "context_mask": mask, "context_lengths": lengths, "context_index": torch.arange(b),
             "spans": torch.tensor([[2, 3], [0, 0], [4, 4]]), "elmo": None}
    if elmo_dim:
        batch["elmo"] = {"question": torch.randn(b, 3, tq, elmo_dim), "context": torch.randn(b, 3, tc, elmo_dim)}
    return batch


READER_CFG = {"freeze_embeddings": True, "char_embedding_dim": 4, "char_filters": 6, "char_kernel": 3,
              "hidden": 5, "dropout": 0.0, "max_span_tokens": 3}


def test_reader_fits_one_batch_and_predicts_bounded_spans():
    from elmo_repro.tasks.squad.model import SquadReader

    torch.manual_seed(0)
    model = SquadReader(torch.randn(20, 7).numpy(), 10, READER_CFG)
    batch = _reader_batch()
    first, last = overfit(model, batch)
    assert last < 0.1 * first
    assert model.predict(batch) == [[2, 3], [0, 0], [4, 4]]


def test_reader_takes_elmo_at_input_and_output():
    from elmo_repro.experiments.specs import ElmoSpec
    from elmo_repro.tasks.squad.model import SquadReader

    spec = ElmoSpec(placement="both")
    model = SquadReader(torch.randn(20, 7).numpy(), 10, READER_CFG, spec, (3, 8))
    assert model.encoder.forward_gru.input_size == 7 + 6 + 8
    assert model.attention.similarity.w_x.numel() == 2 * 5 + 8
    loss = model.loss(_reader_batch(elmo_dim=8))
    loss.backward()
    assert torch.isfinite(loss) and all(m.scalar_parameters.grad is not None for m in model.elmo.mixes)


# --- the task: prepared layout, capping, scoring, the weight average in the trainer ---------------

from pathlib import Path  # noqa: E402

from elmo_repro.tasks.squad.reader import Article, Paragraph, Question, cap_questions  # noqa: E402
from elmo_repro.tasks.base import get_task  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "squad"


def _article(title: str, questions_per_paragraph: list[int]) -> Article:
    return Article(title, [Paragraph(f"{title} {p}", [Question(f"{title}-{p}-{q}", "?", ["x"], [0])
                                                       for q in range(n)])
                           for p, n in enumerate(questions_per_paragraph)])


def test_cap_takes_whole_paragraphs_round_robin_and_nests():
    articles = [_article("A", [3, 2, 4]), _article("B", [1, 5]), _article("C", [2])]
    # round robin: A0 (3), B0 (1), C0 (2) = 6; A1 (2) = 8; B1 (5) would make 13 > 10: stop
    kept = cap_questions(articles, 10)
    assert [(a.title, [p.context for p in a.paragraphs]) for a in kept] == [("A", ["A 0", "A 1"]), ("B", ["B 0"]),
                                                                            ("C", ["C 0"])]
    small = cap_questions(articles, 4)                   # A0, B0 = 4; C0 would exceed
    assert [p.context for a in small for p in a.paragraphs] == ["A 0", "B 0"]
    assert {p.context for a in small for p in a.paragraphs} <= {p.context for a in kept for p in a.paragraphs}
    assert cap_questions(articles, 0) == articles


def test_the_fixture_is_what_the_stage_prepares(tmp_path):
    """The committed prepared files are the stage's output for ``squad.json`` (make_fixture.py)."""
    from elmo_repro.tasks.squad import prepare

    cfg = {"source": "dev", "selection": ["Town_1", "Town_5"], "report": ["Town_3", "Town_7"], "max_train_questions": 0}
    parts = prepare.parts_from_file(FIXTURE / "squad.json", cfg)
    counts = {split: prepare.write_part(split, articles, tmp_path) for split, articles in parts.items()}
    assert counts["dev"]["dev_questions"] == 48 and counts["test"]["test_articles"] == 2
    for path in tmp_path.iterdir():
        assert path.read_text() == (FIXTURE / path.name).read_text(), path.name


def test_task_reads_scores_spans_as_paragraph_text_and_runs_the_floor():
    task = get_task("squad")
    dev = task.read("dev", FIXTURE)
    first = dev[0]
    assert first["id"] == "q10-0-who" and first["question"][0] == "Who" and first["question"][-1] == "?"
    assert span_text(first["paragraph_text"], first["offsets"], *first["span"]) == first["answers"][0]
    gold = [e["span"] for e in dev]
    assert task.score(dev, gold)["em"] == 100.0             # the first answer's span is its exact text
    when = next(e for e in dev if e["id"].endswith("-when"))
    s, t = when["span"]
    # one token more to the left takes "in", the second reference: still an exact match
    assert task.score([when], [[s - 1, t]]) == {"em": 100.0, "f1": 100.0}
    # one token further right takes the "." too: normalisation drops punctuation, so still exact
    assert task.score([when], [[s, t + 1]])["em"] == 100.0
    floor = task.score(dev, task.floor(task.read("train", FIXTURE), dev))
    assert 0.0 < floor["f1"] < 100.0


def test_a_span_outside_the_paragraph_is_an_error_naming_file_and_line(tmp_path):
    import shutil

    for path in FIXTURE.glob("dev.*"):
        shutil.copy(path, tmp_path / path.name)
    lines = (tmp_path / "dev.jsonl").read_text().splitlines()
    bad = json.loads(lines[2])
    bad["span"] = [3, 999]
    lines[2] = json.dumps(bad)
    (tmp_path / "dev.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"dev.jsonl:3: question q10-1-who: 'span' \[3, 999\]"):
        get_task("squad").read("dev", tmp_path)


def test_trainer_evaluates_and_saves_the_weight_average():
    from elmo_repro.experiments.specs import RunSpec
    from elmo_repro.tasks.base import SPLITS
    from elmo_repro.training.trainer import train_run
    from elmo_repro.vectors import load_text_vectors

    task = get_task("squad")
    data = {split: task.read(split, FIXTURE) for split in SPLITS}
    vectors = load_text_vectors(FIXTURE / "vectors.txt")
    cfg = {"trainer": {"epochs": 1, "batch_size": 16, "eval_batch_size": 32, "optimizer": {"name": "adam", "lr": 0.01},
                       "grad_clip": 5.0, "max_train_examples": 32},
           "model": {"freeze_embeddings": True, "char_embedding_dim": 4, "char_filters": 4, "char_kernel": 3,
                     "hidden": 4, "dropout": 0.0, "max_span_tokens": 17}}
    spec = RunSpec(task="squad", elmo_name="baseline", elmo=None, seed=0, train_fraction=1.0)
    plain = train_run(task, spec, cfg, data, vectors, None)
    # decay 0: the average is the last weights, so the run is the plain one
    same = train_run(task, spec, {**cfg, "trainer": {**cfg["trainer"], "ema": 0.0}}, data, vectors, None)
    assert same.metrics == plain.metrics
    assert all(torch.equal(same.state_dict[k], plain.state_dict[k]) for k in plain.state_dict)
    # a decay near 1 keeps the initial weights: the saved state differs from the trained one
    slow = train_run(task, spec, {**cfg, "trainer": {**cfg["trainer"], "ema": 0.999999}}, data, vectors, None)
    moved = [k for k in plain.state_dict if not torch.equal(slow.state_dict[k], plain.state_dict[k])]
    assert moved and all(k != "words.weight" for k in moved)          # frozen vectors are not averaged


def test_a_paragraph_is_encoded_once_per_batch_and_scores_as_if_repeated():
    """collate keeps one row per distinct paragraph; the reader's scores equal those of a batch that
    repeats the paragraph for each question (the shared GRU does not depend on the question)."""
    from elmo_repro.tasks.squad.model import SquadReader
    from elmo_repro.vectors import load_text_vectors

    task = get_task("squad")
    dev = task.read("dev", FIXTURE)
    vocab = task.build_vocab(dev, {"dev": dev}, load_text_vectors(FIXTURE / "vectors.txt"), 0)
    encoded = task.encode(vocab, dev, training=True)
    first, second = dev[0]["paragraph"], next(e["paragraph"] for e in dev if e["paragraph"] != dev[0]["paragraph"])
    picked = [i for i, e in enumerate(dev) if e["paragraph"] == first][:3] + \
        [i for i, e in enumerate(dev) if e["paragraph"] == second][:2]
    assert task.batch_length(dev[picked[0]]) == len(dev[picked[0]]["context"])
    shared = task.collate([encoded[i] for i in picked], None)
    assert shared["context_words"].shape[0] == 2 and shared["context_index"].tolist() == [0, 0, 0, 1, 1]
    # the same questions, each with a paragraph array of its own (no identity to share)
    copies = [{**encoded[i], "context_words": encoded[i]["context_words"].copy()} for i in picked]
    repeated = task.collate(copies, None)
    assert repeated["context_words"].shape[0] == 5 and repeated["context_index"].tolist() == [0, 1, 2, 3, 4]
    torch.manual_seed(0)
    model = SquadReader(vocab.embeddings, len(vocab.char_vocab) + 2, READER_CFG).eval()
    with torch.no_grad():
        for a, b in zip(model.scores(shared), model.scores(repeated)):
            torch.testing.assert_close(a, b)
        torch.testing.assert_close(model.loss(shared), model.loss(repeated))
    assert model.predict(shared) == model.predict(repeated)
