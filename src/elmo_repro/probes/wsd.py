"""Word sense disambiguation by 1-nearest-neighbour on one layer's vectors (paper §5.3, Table 5).

As the paper (following Melamud et al. 2016): a sense's representation is the mean of the vectors
of its training tokens; a test word takes the sense, among the training senses of its lemma and
part of speech, whose mean is nearest by cosine similarity, and the WordNet first sense when that
lemma and POS has no training sense. A training instance with several gold keys adds its vector to
each of them.

Scored as the official scorer of Raganato et al. (2017), one answer per instance: an answer is
correct when it is one of the instance's gold keys; P = correct / answered, R = correct /
instances, F1 = 2PR / (P + R). Instances the fallback cannot answer (a lemma WordNet does not
list under that POS) count against recall only.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

import torch

from ..data.wsd import PAPER_POOL_LEAVES_OUT, Instance

NEAREST, FIRST_SENSE, UNANSWERED = "nearest", "first_sense", "unanswered"


@dataclass(frozen=True)
class SenseTable:
    """The training senses of each (lemma, POS) and their unit-length mean vectors."""

    senses: dict[tuple[str, str], list[str]]
    means: dict[tuple[str, str], torch.Tensor]   # (lemma, POS) -> (n_senses, dim), rows of norm 1

    def seen(self, instance: Instance) -> bool:
        """Whether one of the instance's gold senses has a training representation."""
        known = self.senses.get((instance.lemma, instance.pos), ())
        return any(sense in known for sense in instance.senses)


def fit_senses(vectors: torch.Tensor, instances: Sequence[Instance]) -> SenseTable:
    """Mean vector of each gold sense over the training instances.

    Args:
        vectors: ``(n_instances, dim)``, row i the layer's vector of ``instances[i]``'s token.
        instances: the training instances.

    Raises:
        ValueError: a row count that is not the number of instances.
    """
    if vectors.dim() != 2 or vectors.shape[0] != len(instances):
        raise ValueError(f"expected ({len(instances)}, dim) vectors, got {tuple(vectors.shape)}")
    rows: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for i, instance in enumerate(instances):
        for sense in instance.senses:
            rows[(instance.lemma, instance.pos)][sense].append(i)
    senses, means = {}, {}
    vectors = vectors.double()                   # means and norms without float32 rounding
    for group, by_sense in rows.items():
        names = sorted(by_sense)
        mean = torch.stack([vectors[by_sense[name]].mean(0) for name in names])
        senses[group], means[group] = names, torch.nn.functional.normalize(mean, dim=1)
    return SenseTable(senses, means)


def predict_senses(table: SenseTable, vectors: torch.Tensor, instances: Sequence[Instance],
                   first_senses: dict[tuple[str, str], str]) -> list[tuple[str | None, str]]:
    """One ``(sense key or None, how)`` per test instance; ``how`` is :data:`NEAREST`,
    :data:`FIRST_SENSE` or :data:`UNANSWERED`. Ties go to the sense key first in sorted order.

    Args:
        vectors: ``(n_instances, dim)``, row i the layer's vector of ``instances[i]``'s token.
        first_senses: ``(lemma, POS) -> sense key`` (:func:`~elmo_repro.probes.wordnet.read_first_senses`).
    """
    if vectors.dim() != 2 or vectors.shape[0] != len(instances):
        raise ValueError(f"expected ({len(instances)}, dim) vectors, got {tuple(vectors.shape)}")
    unit = torch.nn.functional.normalize(vectors.double(), dim=1)
    answers: list[tuple[str | None, str]] = []
    for i, instance in enumerate(instances):
        group = (instance.lemma, instance.pos)
        if group in table.means:
            similarity = table.means[group] @ unit[i]
            answers.append((table.senses[group][int(torch.argmax(similarity))], NEAREST))
        elif group in first_senses:
            answers.append((first_senses[group], FIRST_SENSE))
        else:
            answers.append((None, UNANSWERED))
    return answers


def wsd_scores(answers: Sequence[str | None], instances: Sequence[Instance]) -> dict[str, float]:
    """Precision, recall and F1 in percent, and the counts, as Raganato et al.'s scorer (one answer
    per instance; ``None`` is no answer)."""
    if len(answers) != len(instances):
        raise ValueError(f"{len(answers)} answers for {len(instances)} instances")
    answered = sum(answer is not None for answer in answers)
    correct = sum(answer in instance.senses for answer, instance in zip(answers, instances) if answer)
    precision = 100.0 * correct / answered if answered else 0.0
    recall = 100.0 * correct / len(instances) if instances else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1,
            "instances": len(instances), "answered": answered, "correct": correct}


def evaluate_layer(train: tuple[torch.Tensor, Sequence[Instance]],
                   test_sets: dict[str, tuple[torch.Tensor, Sequence[Instance]]],
                   first_senses: dict[tuple[str, str], str]) -> tuple[dict[str, float], dict[str, list]]:
    """One Table 5 row: fit the senses on ``train``, answer every test set.

    Args:
        train: ``(vectors (n, dim), instances)``; test_sets: name -> the same, in report order.
        first_senses: WordNet 3.0's first senses (the fallback).

    Returns:
        ``(metrics, answers)``: metrics ``<set>_f1`` per test set, ``all_f1`` over their union,
        ``paper_pool_f1`` over the union without :data:`PAPER_POOL_LEAVES_OUT` (as the paper's ALL),
        ``seen_f1`` / ``seen_instances`` on the instances one of whose gold senses was seen in
        training, and ``<how>_answers`` counts (nearest, first_sense, unanswered); answers per
        set the predicted keys (None: no answer).
    """
    return _evaluate(fit_senses(*train), test_sets, first_senses)


def first_sense_baseline(train: Sequence[Instance], test_sets: dict[str, Sequence[Instance]],
                         first_senses: dict[tuple[str, str], str]) -> tuple[dict[str, float], dict[str, list]]:
    """The WordNet first-sense row of Table 5: every test word takes its lemma and POS's first
    sense. ``train`` only defines the seen-sense subset, so the row's ``seen_f1`` is on the same
    instances as the layers' rows. Returns the same ``(metrics, answers)`` as :func:`evaluate_layer`."""
    senses: dict[tuple[str, str], list[str]] = defaultdict(list)
    for instance in train:
        for sense in instance.senses:
            if sense not in senses[(instance.lemma, instance.pos)]:
                senses[(instance.lemma, instance.pos)].append(sense)
    table = SenseTable(dict(senses), {})          # no sense vectors: the fallback answers everything
    return _evaluate(table, {name: (torch.zeros(len(items), 1), items) for name, items in test_sets.items()},
                     first_senses)


def _evaluate(table: SenseTable, test_sets: dict[str, tuple[torch.Tensor, Sequence[Instance]]],
              first_senses: dict[tuple[str, str], str]) -> tuple[dict[str, float], dict[str, list]]:
    metrics: dict[str, float] = {}
    answers: dict[str, list] = {}
    everything: list[tuple[str | None, str, Instance]] = []
    pool: list[tuple[str | None, Instance]] = []
    for name, (vectors, instances) in test_sets.items():
        predicted = predict_senses(table, vectors, instances, first_senses)
        answers[name] = [key for key, _ in predicted]
        metrics[f"{name}_f1"] = wsd_scores(answers[name], instances)["f1"]
        everything += [(key, how, instance) for (key, how), instance in zip(predicted, instances)]
        if name not in PAPER_POOL_LEAVES_OUT:
            pool += list(zip(answers[name], instances))
    metrics["all_f1"] = wsd_scores([k for k, _, _ in everything], [i for _, _, i in everything])["f1"]
    if pool and len(pool) < len(everything):
        metrics["paper_pool_f1"] = wsd_scores([k for k, _ in pool], [i for _, i in pool])["f1"]
    seen = [(k, i) for k, _, i in everything if table.seen(i)]
    metrics["seen_f1"] = wsd_scores([k for k, _ in seen], [i for _, i in seen])["f1"] if seen else 0.0
    metrics["seen_instances"] = len(seen)
    for how in (NEAREST, FIRST_SENSE, UNANSWERED):
        metrics[f"{how}_answers"] = sum(h == how for _, h, _ in everything)
    return metrics, answers
