"""Lee et al.'s (2017) coreference model: spans, pruning, antecedents, loss and decoding."""

import numpy as np
import torch
from overfit import overfit

from elmo_repro.experiments.specs import ElmoSpec
from elmo_repro.tasks.coref.metric import coref_scores
from elmo_repro.tasks.coref.model import (CorefModel, antecedent_candidates, distance_bins, enumerate_spans,
                                          prune_spans)

CFG = {"char_embedding_dim": 4, "char_filters": 3, "char_kernels": [2, 3], "lstm_hidden": 8, "lstm_layers": 1,
       "max_training_sentences": 50,
       "feature_dim": 4, "ffnn_depth": 1, "ffnn_size": 16, "dropout": 0.0, "lexical_dropout": 0.0,
       "max_width": 3, "mention_ratio": 0.8, "max_antecedents": 5}


def test_spans_stay_inside_their_sentence_up_to_the_width():
    starts, ends = enumerate_spans([2, 3], max_width=2)
    assert list(zip(starts.tolist(), ends.tolist())) == [(0, 0), (0, 1), (1, 1), (2, 2), (2, 3), (3, 3), (3, 4),
                                                         (4, 4)]


def test_pruning_keeps_the_best_spans_that_do_not_cross():
    starts, ends = torch.tensor([0, 1, 0, 3, 2]), torch.tensor([1, 2, 2, 3, 3])
    scores = torch.tensor([5.0, 4.0, 3.0, 2.0, 1.0])
    # (1,2) crosses (0,1): skipped; (0,2) nests (0,1): kept; (3,3) kept; k = 3 reached
    assert prune_spans(scores, starts, ends, 3).tolist() == [0, 2, 3]      # ordered by (start, end)


def test_antecedents_are_the_nearest_preceding_spans_and_distances_are_bucketed():
    antecedents, valid = antecedent_candidates(4, 2)
    assert antecedents.tolist() == [[0, 0], [0, 0], [1, 0], [2, 1]]
    assert valid.tolist() == [[False, False], [True, False], [True, True], [True, True]]
    d = torch.tensor([0, 1, 4, 5, 7, 8, 15, 16, 63, 64, 500])
    assert distance_bins(d).tolist() == [0, 1, 4, 5, 5, 6, 6, 7, 8, 9, 9]


def _doc():
    # "Ann saw Bob . She waved ." -- Ann ... She corefer
    words = torch.tensor([[2, 3, 4, 5], [6, 7, 5, 0]])
    chars = torch.randint(2, 9, (2, 4, 3), generator=torch.Generator().manual_seed(0))
    return {"words": words, "chars": chars, "lengths": torch.tensor([4, 3]), "elmo": None,
            "clusters": [[(0, 0), (4, 4)]]}


def test_the_model_learns_a_cluster_and_decodes_it():
    torch.manual_seed(0)
    # keep every span (ratio x 7 tokens >= 15 spans) and every antecedent: a toy document cannot teach the mention
    # scorer which spans to keep before the antecedent scorer has anything to learn from
    model = CorefModel(np.random.default_rng(0).normal(size=(10, 6)).astype(np.float32), 10,
                       {**CFG, "mention_ratio": 3.0, "max_antecedents": 20})
    batch = {"documents": [_doc()]}
    first, last = overfit(model, batch, steps=80, lr=0.02)
    assert last < first / 10
    (clusters,) = model.predict(batch)
    assert coref_scores([([[(0, 0), (4, 4)]], clusters)])["avg_f1"] == 100.0


def test_elmo_feeds_the_lstm_but_not_the_head_attention():
    model = CorefModel(np.zeros((10, 6), dtype=np.float32), 10, CFG, ElmoSpec(placement="input", dropout=0.0),
                       (3, 5))
    head_dim = 6 + 2 * 3
    assert model.lstm.forward_lstms[0].input_size == head_dim + 5
    assert model.mention_scorer[0].in_features == 2 * 16 + head_dim + 4
    doc = _doc()
    doc["elmo"] = torch.randn(2, 3, 4, 5)
    assert model.document_loss(doc).ndim == 0


def test_the_floor_matches_names_and_links_pronouns_to_the_nearest_name():
    from elmo_repro.tasks.coref.floor import string_match_clusters
    sentences = [["Sir", "Walter", "Elliot", "saw", "Anne", "."],          # 0-5
                 ["He", "smiled", "at", "her", ",", "and", "I", "left", "."],   # 6-14
                 ["Anne", "and", "Sir", "Walter", "Elliot", "stayed", ";", "my", "aunt", "too", "."]]  # 15-25
    assert string_match_clusters(sentences) == [
        [(0, 2), (17, 19)],                   # "sir walter elliot"
        [(4, 4), (6, 6), (9, 9), (15, 15)],   # "anne"; He and her -> the nearest name before them;
        [(12, 12), (22, 22)],                 # first person: I ... my      sentence-initial Anne is a name
    ]
    # a sentence-initial word the document also has in lower case is no name
    assert string_match_clusters([["The", "dog", "saw", "Kim", "."], ["Kim", "ran", "the", "race"]]) == [
        [(3, 3), (5, 5)],
    ]
