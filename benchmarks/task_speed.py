"""Task-training speed: examples/s and achieved FLOP/s of each task model (``elmo_repro.tasks``),
without and with ELMo, at the ``tiny`` and ``paper`` profile sizes; and the fixed cost every run
pays (process start and imports, MLflow, DVC bookkeeping), which multiplies by the number of runs.

Training is the one trainer's own step (``trainer.train_epoch``: forward, loss, backward,
gradient clipping, Adam) over batches from ``trainer.train_batches`` (shuffled, length-sorted, as
a run sees them), after warm-up batches; evaluation is ``trainer.predict`` (``model.predict``:
NER's Viterbi, the classifiers' argmax) over the same examples in ``eval_batch_size`` batches. The
model is built through the task contract by the trainer's ``prepare_run`` (vocabularies, encoding,
model, optimizer) from the profile's ``tasks.<task>`` section. Data: the mirror's files if present
(CoNLL-2003 eng.{train,testa,testb}; SST-5 trees; SNLI dev split by premise as the tiny profile
does, and test), else the in-repo fixture repeated. Word vectors: random, of the profile's
``word_vectors.dim`` (50 in both profiles; the paper's NER baseline used 50-d Senna), one per
distinct word of the three splits (every word pretrained). ELMo: random layers of the profile's
biLM shape (L+1 = n_layers + 1, D = 2 x projection_dim: tiny 3 x 128, paper 3 x 1024) in HDF5
files of ``features.dtype`` (one dataset per distinct text) read through ``cached_example_layers``, as a run
reads its cached layers; the profile's ``elmo`` spec at the task's paper placement (NER: input;
SST-5 and SNLI: input and output).

FLOPs are analytic model FLOPs per real token (a multiply-add = 2; padding, elementwise work,
embedding look-ups and the optimizer not counted), see :func:`ner_forward_flops`,
:func:`bcn_forward_flops` and :func:`esim_forward_flops`; for the classifiers the per-sentence
(pooling, output network) and attention (quadratic in length) terms are spread over the tokens at
the timed examples' lengths. Training counts
3x forward (backward ~ 2x forward), evaluation 1x. "% matmul" compares the achieved FLOP/s with a
square float32 matmul measured in the same process (``bilm_speed.matmul_rate``).

Fixed costs are wall seconds, the best of a few repeats (the machine may be shared).

Usage (from the repository root):
    .venv/bin/python -m benchmarks.task_speed --quick --threads 1     # < 1 min on 2 CPU cores
    .venv/bin/python -m benchmarks.task_speed --threads 2 --output benchmarks/results/task_speed.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))                       # benchmarks, workflow, stages
sys.path.insert(0, str(REPO / "src"))               # elmo_repro, when not installed
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402

from benchmarks.bilm_speed import matmul_rate  # noqa: E402
from elmo_repro.tasks.ner.reader import read_conll2003  # noqa: E402
from elmo_repro.tasks.snli.reader import read_line_files, split_by_premise  # noqa: E402
from elmo_repro.tasks.sst5.reader import read_trees  # noqa: E402
from elmo_repro.data.examples import TextIndex, field_texts, holds_texts  # noqa: E402
from elmo_repro.elmo.layer_source import cached_example_layers, feature_path  # noqa: E402
from elmo_repro.experiments.specs import NO_ELMO, TASKS, ElmoSpec, RunSpec, resolve_elmo  # noqa: E402
from elmo_repro.tasks.base import SPLITS, example_length, get_task  # noqa: E402
from elmo_repro.training.trainer import (EncodedSplit, predict, prepare_run, train_batches,  # noqa: E402
                                         train_epoch)
from workflow.profile import render  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures"
SIZES = ("tiny", "paper")


@dataclass
class Plan:
    warmup: int       # untimed training batches
    batches: int      # timed training batches
    repeats: int      # subprocess timings (best of)
    mlflow_runs: int  # MLflow runs in one process on an existing store
    dvc_n: int        # stages of the larger DVC pipeline (the smaller has 1)


PLANS = {True: Plan(warmup=1, batches=4, repeats=1, mlflow_runs=3, dvc_n=3),
         False: Plan(warmup=3, batches=30, repeats=3, mlflow_runs=5, dvc_n=10)}


# ---- data ------------------------------------------------------------------------------------
def read_ner_mirror(mirror: Path) -> dict[str, list[dict]] | None:
    files = dict(zip(SPLITS, ("eng.train", "eng.testa", "eng.testb")))
    if not all((mirror / "conll2003" / f).is_file() for f in files.values()):
        return None
    return {split: read_conll2003(mirror / "conll2003" / f) for split, f in files.items()}


def read_sst5_mirror(mirror: Path) -> dict[str, list[dict]] | None:
    trees = mirror / "sst5" / "trees"
    if not all((trees / f"{split}.txt").is_file() for split in SPLITS):
        return None
    return {split: read_trees(trees / f"{split}.txt") for split in SPLITS}


def read_snli_mirror(mirror: Path) -> dict[str, list[dict]] | None:
    files = mirror / "snli" / "esnli_infersent_format"
    if not (files / "s1.dev").is_file() or not (files / "s1.test").is_file():
        return None
    train, dev = split_by_premise(read_line_files(files, "dev"), 500)     # the tiny profile's split
    return {"train": train, "dev": dev, "test": read_line_files(files, "test")}


def read_squad_mirror(mirror: Path) -> dict[str, list[dict]] | None:
    from elmo_repro.tasks.squad.reader import examples
    from elmo_repro.tasks.squad.prepare import parts_from_file

    path = mirror / "squad_v1.1" / "dev-v1.1.json"
    if not path.is_file():
        return None
    parts = parts_from_file(path, render("tiny")["tasks"]["squad"]["data"])   # the tiny profile's split
    return {split: examples(parts[split])[0] for split in SPLITS}


def read_srl_mirror(mirror: Path) -> dict[str, list[dict]] | None:
    from elmo_repro.tasks.srl.prepare import propositions, read_release

    root = mirror / "srl_conll2005"
    if not (root / "devel").is_dir():
        return None
    cap = render("tiny")["tasks"]["srl"]["data"]["max_train_sentences"]       # the tiny profile's cap
    parts = read_release(root, cap)
    return {split: [row for domain, sentences in parts[split] for row in propositions(domain, sentences)]
            for split in SPLITS}


def read_coref_mirror(mirror: Path) -> dict[str, list[dict]] | None:
    """LitBank split as the tiny profile splits it, each document cut into consecutive windows of
    the tiny profile's ``max_training_sentences`` (what a training step reads; a window's clusters
    are its mentions', shifted), so the timed tokens are the tokens a step computes on. Evaluation
    of whole documents costs the same per token (K bounds the pairs per kept span)."""
    from elmo_repro.tasks.coref.model import clusters_in_window
    from elmo_repro.tasks.coref.prepare import read_parts

    if not (mirror / "litbank_coref" / "conll").is_dir():
        return None
    params = render("tiny")
    params["data"]["mirror"] = str(mirror)
    size = params["tasks"]["coref"]["model"]["max_training_sentences"]
    out: dict[str, list[dict]] = {}
    for split, documents in read_parts(params["tasks"]["coref"]["data"], mirror).items():
        out[split] = []
        for d in documents:
            offset = 0
            for first in range(0, len(d["sentences"]), size):
                sentences = d["sentences"][first:first + size]
                n = sum(map(len, sentences))
                out[split].append({"sentences": sentences, "clusters": clusters_in_window(d["clusters"], offset, n)})
                offset += n
    return out


# A task without one is timed on its fixture.
MIRROR_READERS = {"ner": read_ner_mirror, "sst5": read_sst5_mirror, "snli": read_snli_mirror,
                  "squad": read_squad_mirror, "srl": read_srl_mirror, "coref": read_coref_mirror}


def load_data(name: str, mirror: Path) -> tuple[dict[str, list[dict]], str]:
    """The task's splits (real data if the mirror has it, else the fixture, train repeated)."""
    reader = MIRROR_READERS.get(name)
    data = reader(mirror) if reader else None
    if data is not None:
        return data, f"mirror {mirror}"
    task = get_task(name)
    data = {split: task.read(split, FIXTURES / name) for split in SPLITS}
    return {**data, "train": data["train"] * max(1, 2000 // len(data["train"]))}, "in-repo fixture (repeated)"


def random_vectors(task, data: dict[str, list[dict]], dim: int) -> tuple[list[str], np.ndarray]:
    words = sorted({t for split in data.values() for e in split for f in task.fields for text in field_texts(e[f])
                    for t in text})
    return words, np.random.default_rng(0).normal(0, 0.5, (len(words), dim)).astype(np.float32)


# ---- FLOPs -----------------------------------------------------------------------------------
def _mix_flops(model) -> float:
    """ScalarMix: 2 * (L+1) * D per mix and token (the weighted sum of the layers; gamma ignored)."""
    if model.elmo is None:
        return 0.0
    return sum(2 * mix.n_layers * (model.elmo.input_dim or model.elmo.output_dim) for mix in model.elmo.mixes)


def _bilstm_flops(bilstm) -> float:
    """Both directions of every layer: 2 * 4H * (D_in + H) each (gates from [x; h])."""
    return sum(2 * 4 * m.hidden_size * (m.input_size + m.hidden_size)
               for lstms in (bilstm.forward_lstms, bilstm.backward_lstms) for m in lstms)


def _linear_flops(module) -> float:
    return sum(2 * m.in_features * m.out_features for m in module.modules() if isinstance(m, torch.nn.Linear))


def bcn_forward_flops(model, task, examples: list[dict]) -> float:
    """Forward FLOPs per real token of a ``BiattentiveClassifier``, at the examples' mean length T:

        pre-encode     2 * D_in * P                    integrator  biLSTM on 3 x 2H inputs
        encoder        biLSTM on P inputs              self-attn   2 * D_pool (scores)
        biattention    2 * T * 2H * 2 (logits, weighted sum)       pooling weighted sum 2 * D_pool
        maxout output  its linear layers, once per sentence: / T
    """
    t = float(np.mean([len(e["tokens"]) for e in examples]))
    attention = 2 * 2 * t * model.encoder.output_dim
    pooled = model.self_attentive_pooling.in_features
    return (_mix_flops(model) + _linear_flops(model.pre_encode) + _bilstm_flops(model.encoder) + attention
            + _bilstm_flops(model.integrator) + 4 * pooled + _linear_flops(model.output) / t)


def esim_forward_flops(model, task, examples: list[dict]) -> float:
    """Forward FLOPs per real token (premise and hypothesis tokens alike) of an ``Esim``:

        encoder and composition biLSTMs on every token; the projection of the 4 x D_e enhancement;
        the soft alignment, per pair 6 * Tp * Th * D_e (similarity, both weighted sums), and the
        output network once per pair, both spread over the pair's Tp + Th tokens.
    """
    tp = np.array([len(e["premise"]) for e in examples], dtype=float)
    th = np.array([len(e["hypothesis"]) for e in examples], dtype=float)
    encoded = model.projection[0].in_features // 4
    per_pair = 6 * tp * th * encoded + _linear_flops(model.output_hidden) + _linear_flops(model.output_logit)
    return (_mix_flops(model) + _bilstm_flops(model.encoder) + _linear_flops(model.projection)
            + _bilstm_flops(model.inference) + float(per_pair.sum() / (tp + th).sum()))


def ner_forward_flops(model, task, examples: list[dict]) -> float:
    """Forward FLOPs per real token of a ``NerTagger`` (dims read from the model), multiply-add = 2:

        char CNN     2 * E * F * k * c          (conv at each of the word's c real characters)
        ScalarMix    2 * (L+1) * D per mix      (weighted sum of the L+1 layers; gamma ignored)
        biLSTM       sum_layers 2 directions * 2 * 4H * (D_in + H)   (gates from [x; h])
        projection   2 * (2H + D_out) * K
        CRF          2 * K^2                    (forward algorithm: a K x K mat-vec in the log
                                                 semiring; Viterbi in eval is the same in max-plus)

    D_in of the first layer = word dim + F (+ D with ELMo at the input), later layers 2H; D_out = D
    with ELMo at the output, else 0; c = the examples' mean characters per token (at most 50).
    """
    chars_per_token = float(np.mean([min(len(t), 50) for e in examples for t in e["tokens"]]))
    conv = model.chars.conv
    flops = 2 * conv.in_channels * conv.out_channels * conv.kernel_size[0] * chars_per_token
    flops += _mix_flops(model) + _bilstm_flops(model.lstm)
    k = model.crf.num_tags
    return flops + 2 * model.projection.in_features * k + 2 * k * k


def _bigru_flops(gru) -> float:
    """Both directions: 2 * 3H * (D_in + H) each (reset, update and candidate gates from [x; h])."""
    return sum(2 * 3 * m.hidden_size * (m.input_size + m.hidden_size) for m in (gru.forward_gru, gru.backward_gru))


def squad_forward_flops(model, task, examples: list[dict]) -> float:
    """Forward FLOPs per real token (question and paragraph tokens alike) of a ``SquadReader``:

        every token   char CNN 2 * E * F * k * c, the ScalarMixes, the shared BiGRU;
        context only  bidirectional attention 2 * Tq * 2D (tri-linear similarity: the x∘y term;
                      the x and y terms are per token) + 2 * Tq * D (context-to-query sum), the
                      projections, the self-attention BiGRU, self-attention 2 * Tc * 2D' + 2 * Tc * D',
                      the start and end BiGRUs and scorers;

    spread over the examples' Tq + Tc tokens (D = the attention's input width, D' = 2H). A batch
    embeds each of its paragraphs once (``SquadTask.collate``): the every-token terms count each
    distinct paragraph of ``examples`` once (its questions are bucketed into the same batches).
    """
    tq = np.array([len(e["question"]) for e in examples], dtype=float)
    tc = np.array([len(e["context"]) for e in examples], dtype=float)
    distinct = {id(e["context"]): len(e["context"]) for e in examples}
    chars_per_token = float(np.mean([min(len(t), 50) for e in examples for t in e["context"]]))
    conv = model.chars.conv
    every = (2 * conv.in_channels * conv.out_channels * conv.kernel_size[0] * chars_per_token
             + _mix_flops(model) + _bigru_flops(model.encoder))
    d = model.attention.output_dim // 4
    d_self = model.self_attention.output_dim // 3
    per_context_token = (_linear_flops(model.attention_projection) + _bigru_flops(model.self_encoder)
                         + _linear_flops(model.self_projection) + _bigru_flops(model.start_encoder)
                         + _bigru_flops(model.end_encoder) + _linear_flops(model.start_scorer)
                         + _linear_flops(model.end_scorer))
    quadratic = (2 * 2 * d + 2 * d) * tq * tc + (2 * 2 * d_self + 2 * d_self) * tc * tc
    total = every * (tq.sum() + sum(distinct.values())) + per_context_token * tc.sum() + quadratic.sum()
    return float(total / (tq + tc).sum())


def srl_forward_flops(model, task, examples: list[dict]) -> float:
    """Forward FLOPs per real token of an ``SrlTagger``:

        ScalarMix       2 * (L+1) * D per mix
        highway LSTM    per layer 2 * 6H * D_in (the input side: 5 gate blocks and the highway
                        projection) + 2 * 5H * H (the state side)
        projection      2 * (H + D_out) * K
        Viterbi         2 * K^2 (evaluation only; counted in training too, a small term)
    """
    lstm = sum(2 * layer.input_linearity.in_features * layer.input_linearity.out_features
               + 2 * layer.state_linearity.in_features * layer.state_linearity.out_features
               for layer in model.lstm.layers)
    k = model.projection.out_features
    return _mix_flops(model) + lstm + 2 * model.projection.in_features * k + 2 * k * k


def coref_forward_flops(model, task, examples: list[dict]) -> float:
    """Forward FLOPs per real token of a ``CorefModel`` over the given documents (windows):

        char CNNs       2 * E * F * k * c per kernel width k
        ScalarMix       2 * (L+1) * D
        biLSTM          sum_layers 2 directions * 2 * 4H * (D_in + H)
        head scores     2 * 2H
        per span        mention FFNN on g (|g| = 4H + head dim + feature dim), and the head
                        attention's weighted sum 2 * width * head dim (counted at max_width)
        per pair        pair FFNN on [g_i ; g_j ; g_i * g_j ; φ] (+ |g| for the product), for
                        M = ⌊ratio * T⌋ kept spans and min(K, M - 1) candidates each

    Spans and pairs are counted per document (window) and spread over its tokens.
    """
    cfg = model.cfg
    tokens = [t for e in examples for s in e["sentences"] for t in s]
    chars_per_token = float(np.mean([min(len(t), 50) for t in tokens]))
    flops = sum(2 * c.conv.in_channels * c.conv.out_channels * c.conv.kernel_size[0] * chars_per_token
                for c in model.chars)
    flops += _mix_flops(model) + _bilstm_flops(model.lstm) + 2 * model.head_scorer.in_features
    g = model.mention_scorer[0].in_features
    head_dim = g - 2 * model.lstm.output_dim - cfg["feature_dim"]
    per_span = _linear_flops(model.mention_scorer) + 2 * cfg["max_width"] * head_dim
    per_pair = _linear_flops(model.pair_scorer) + g
    spans = pairs = 0
    for e in examples:
        lengths = [len(s) for s in e["sentences"]]
        spans += sum(min(cfg["max_width"], n - i) for n in lengths for i in range(n))
        m = max(1, int(sum(lengths) * cfg["mention_ratio"]))
        pairs += m * max(1, min(cfg["max_antecedents"], m - 1))
    return flops + (spans * per_span + pairs * per_pair) / len(tokens)


FORWARD_FLOPS = {"ner": ner_forward_flops, "sst5": bcn_forward_flops, "snli": esim_forward_flops,
                 "squad": squad_forward_flops, "srl": srl_forward_flops, "coref": coref_forward_flops}


# ---- training and evaluation -----------------------------------------------------------------
def write_layers(features_dir: Path, task, examples: list[dict], shape: tuple[int, int], dtype: str) -> list[dict]:
    """Random (L+1, T_i, D) layers per distinct text of ``examples``, datasets "0".."N-1", as
    ``elmo.features`` writes them; returns the examples with their ``text_ids`` into that file."""
    rng, index = np.random.default_rng(1), TextIndex()
    examples = [{**e, "text_ids": {field: [index.add(t) for t in e[field]] if holds_texts(e[field])
                                   else index.add(e[field]) for field in task.fields}} for e in examples]
    with h5py.File(feature_path(features_dir, "train"), "w") as out:
        for i, tokens in enumerate(index.texts):
            out.create_dataset(str(i), data=rng.normal(size=(shape[0], len(tokens), shape[1])).astype(dtype))
    return examples


def bench_model(name: str, size: str, with_elmo: bool, data, vectors, plan: Plan, tmp: Path) -> dict:
    """Train ``plan.batches`` batches after ``plan.warmup``, then predict the same sentences; the
    run is built by the trainer's own ``prepare_run`` on the sentences of those batches."""
    task, params = get_task(name), render(size)
    cfg, trainer = params["tasks"][name], params["tasks"][name]["trainer"]
    train = data["train"]
    lengths = np.array([example_length(task, e) for e in train])
    batches = train_batches(lengths, trainer["batch_size"], np.random.default_rng(0))
    batches = batches[:plan.warmup + plan.batches]
    chosen = sorted({i for b in batches for i in b})
    position = {i: p for p, i in enumerate(chosen)}
    examples = [train[i] for i in chosen]
    batches = [[position[i] for i in b] for b in batches]
    elmo, layers = None, None
    if with_elmo:
        elmo = resolve_elmo(ElmoSpec.model_validate(params["elmo_specs"]["elmo"]), name)
        shape = (params["bilm"]["lstm"]["n_layers"] + 1, 2 * params["bilm"]["lstm"]["projection_dim"])
        features_dir = tmp / f"{name}-{size}"
        features_dir.mkdir(exist_ok=True)
        examples = write_layers(features_dir, task, examples, shape, params["features"]["dtype"])
        layers = cached_example_layers(features_dir, "train", examples, task.fields)
    spec = RunSpec(task=name, elmo_name="elmo" if with_elmo else NO_ELMO, elmo=elmo, seed=0, train_fraction=1.0)
    # dev and test as in a run, so the word matrix (updated densely by Adam) has a run's rows; they
    # are never batched here, so their layers are not needed (the train file stands in)
    subset = {"train": examples, "dev": data["dev"], "test": data["test"]}
    run = prepare_run(task, spec, {**cfg, "trainer": {**trainer, "max_train_examples": 0}}, subset, vectors,
                      None if layers is None else {split: layers for split in SPLITS})
    model, optimizer, split = run.model, run.optimizer, run.splits["train"]

    train_epoch(model, optimizer, split, batches[:plan.warmup], trainer["grad_clip"], 0)
    timed = batches[plan.warmup:]
    start = time.perf_counter()
    train_epoch(model, optimizer, split, timed, trainer["grad_clip"], 1)
    train_s = time.perf_counter() - start
    predict(model, EncodedSplit(task, examples[:8], split.encoded[:8], layers), trainer["eval_batch_size"])
    start = time.perf_counter()
    predict(model, split, trainer["eval_batch_size"])
    eval_s = time.perf_counter() - start
    if layers is not None:
        layers.close()

    n_train = sum(len(b) for b in timed)
    # tokens over every field (split.lengths is the batch bucketing key: SQuAD's is the paragraph alone)
    sizes = np.array([sum(len(t) for field in task.fields for t in field_texts(e[field])) for e in examples])
    tokens = int(sum(sizes[i] for b in timed for i in b))
    padded = int(sum(len(b) * sizes[b].max() for b in timed))
    flops = FORWARD_FLOPS[name](model, task, [examples[i] for b in timed for i in b])
    n_params = sum(p.numel() for p in model.parameters())
    return {"task": name, "size": size, "elmo": with_elmo, "params": n_params,
            "params_no_embedding": n_params - model.words.weight.numel(),
            "batch_size": trainer["batch_size"], "timed_batches": len(timed), "timed_examples": n_train,
            "timed_tokens": tokens, "padding_fraction": 1 - tokens / padded,
            "train_examples_s": n_train / train_s, "train_tokens_s": tokens / train_s,
            "eval_examples_s": len(examples) / eval_s, "eval_tokens_s": int(sizes.sum()) / eval_s,
            "forward_flops_per_token": flops, "train_flop_s": 3 * flops * tokens / train_s,
            "eval_flop_s": flops * int(sizes.sum()) / eval_s}


# ---- fixed cost per run ----------------------------------------------------------------------
MLFLOW_PROBE = r"""
import json, os, sys, time
import torch  # imported by the stage anyway: not MLflow's cost
mode, artifacts, params, epochs, runs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
t0 = time.perf_counter()
import mlflow
from elmo_repro.tracking import EXPERIMENT, stage_run
out = {"import_s": time.perf_counter() - t0}
if mode == "create":
    t0 = time.perf_counter()
    mlflow.set_tracking_uri(os.environ["MLFLOW_TRACKING_URI"])
    mlflow.create_experiment(EXPERIMENT, artifact_location=artifacts)
    out["create_store_s"] = time.perf_counter() - t0
out["runs_s"], out["epoch_log_s"] = [], []
for k in range(runs):
    t0 = time.perf_counter()
    with stage_run("train_ner@bench", params, ["tasks.ner"]) as run:   # as stages/train_run.py
        run.set_tags({"run_id": "bench", "task": "ner", "elmo": "baseline", "seed": "0", "train_fraction": "1.0"})
        t1 = time.perf_counter()
        for epoch in range(1, epochs + 1):
            run.log_metrics({"train_loss": 1.0, "epoch_dev_f1": 50.0, "epoch_seconds": 1.0}, step=epoch)
        out["epoch_log_s"].append((time.perf_counter() - t1) / epochs)
        run.log_metrics({"dev_f1": 50.0, "test_f1": 50.0, "best_epoch": 1, "epochs": epochs, "train_seconds": 1.0})
    out["runs_s"].append(time.perf_counter() - t0)
print(json.dumps(out))
"""


def wall(cmd: list[str], cwd: Path, env: dict, repeats: int = 1) -> float:
    """Best wall seconds of ``repeats`` runs of ``cmd`` (which must succeed)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
        best = min(best, time.perf_counter() - start)
    return best


def dvc_repro(n: int, root: Path, env: dict) -> float:
    """Seconds of ``dvc repro`` in a fresh git + DVC repository of ``n`` stages (one ``foreach``),
    each a ``python -c`` writing one small output file."""
    root.mkdir()
    dvc = str(Path(sys.executable).parent / "dvc")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, capture_output=True)
    subprocess.run([dvc, "init", "-q"], cwd=root, env=env, check=True, capture_output=True)
    stage = {"foreach": list(range(n)),
             "do": {"cmd": f"{sys.executable} -c \"open('o${{item}}.txt', 'w').write('${{item}}')\"",
                    "outs": ["o${item}.txt"]}}
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"s": stage}}), encoding="utf-8")
    return wall([dvc, "repro", "-q"], root, env)


def fixed_costs(plan: Plan, tmp: Path) -> dict[str, float]:
    # GIT_OPTIONAL_LOCKS=0: run_tags' `git status` in the checkout must not rewrite its index.
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "MLFLOW_DISABLE_TELEMETRY": "true", "GIT_OPTIONAL_LOCKS": "0",
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp / 'mlflow.db'}"}
    py = sys.executable
    out = {"python_start_s": wall([py, "-c", "pass"], REPO, env, plan.repeats + 2),
           "stage_imports_s": wall([py, "-c", "import stages.train_run"], REPO, env, plan.repeats)}
    params = {"profile": "tiny", "tasks": {"ner": render("tiny")["tasks"]["ner"]}}
    epochs = params["tasks"]["ner"]["trainer"]["epochs"]
    probes = {}
    for mode, runs in (("create", 1), ("existing", plan.mlflow_runs)):
        args = [py, "-c", MLFLOW_PROBE, mode, (tmp / "mlruns").as_uri(), json.dumps(params), str(epochs), str(runs)]
        done = subprocess.run(args, cwd=REPO, env=env, check=True, capture_output=True, text=True)
        probes[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    new, old = probes["create"], probes["existing"]
    out["mlflow_import_s"] = old["import_s"]
    out["mlflow_new_store_s"] = new["create_store_s"] + new["runs_s"][0]
    out["mlflow_first_run_in_process_s"] = old["runs_s"][0]
    out["mlflow_later_run_s"] = float(np.median(old["runs_s"][1:]))
    out["mlflow_epoch_log_s"] = float(np.median(old["epoch_log_s"]))
    out["mlflow_per_run_s"] = out["mlflow_import_s"] + out["mlflow_first_run_in_process_s"]
    out["dvc_repro_1_stage_s"] = dvc_repro(1, tmp / "dvc1", env)
    out[f"dvc_repro_{plan.dvc_n}_stages_s"] = dvc_repro(plan.dvc_n, tmp / f"dvc{plan.dvc_n}", env)
    out["dvc_per_stage_s"] = ((out[f"dvc_repro_{plan.dvc_n}_stages_s"] - out["dvc_repro_1_stage_s"])
                              / (plan.dvc_n - 1) - out["python_start_s"])
    out["per_run_total_s"] = out["stage_imports_s"] + out["mlflow_per_run_s"] + out["dvc_per_stage_s"]
    return out


FIXED_NOTES = {
    "python_start_s": "`python -c pass` (interpreter + site)",
    "stage_imports_s": "`python -c 'import stages.train_run'` (torch, h5py, the task code; MLflow is lazy)",
    "mlflow_import_s": "`import mlflow` + elmo_repro.tracking, after torch",
    "mlflow_new_store_s": "create the SQLite store + experiment, then one run (once per store)",
    "mlflow_first_run_in_process_s": "stage_run on an existing store, first in a process (every run pays it)",
    "mlflow_later_run_s": "later stage_runs in the same process (median)",
    "mlflow_epoch_log_s": "one epoch's log_metrics call (x epochs per run)",
    "mlflow_per_run_s": "per run: import + first run in a process",
    "dvc_repro_1_stage_s": "`dvc repro` of a fresh 1-stage pipeline (DVC start + one stage)",
    "dvc_per_stage_s": "DVC increment per stage: (t_N - t_1)/(N - 1) - python start",
    "per_run_total_s": "stage imports + MLflow per run + DVC per stage (tiny's epochs logged)",
}


# ---- main ------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="few batches, small DVC pipeline (< 1 min)")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    parser.add_argument("--mirror", type=Path, default=REPO / ".." / "shared" / "data",
                        help="data mirror (default: ../shared/data from the repo root)")
    parser.add_argument("--matmul-size", type=int, default=2048, help="side of the square float32 matmul")
    parser.add_argument("--no-fixed", action="store_true", help="skip the fixed-cost measurements")
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS), help="tasks to time (default: all)")
    parser.add_argument("--output", type=Path, help="append one JSON object per table row to this file")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    plan, started = PLANS[args.quick], time.perf_counter()
    rate = matmul_rate("cpu", args.matmul_size)
    machine = {"processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
               "torch": torch.__version__, "threads": torch.get_num_threads(),
               "load_average": os.getloadavg()[0], "matmul_flop_s": rate, "quick": args.quick,
               "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
    print(f"# {machine['processor']}, {machine['cpus']} CPUs, torch {torch.__version__}, "
          f"{machine['threads']} threads, load average {machine['load_average']:.1f}; float32 matmul "
          f"{rate / 1e9:.1f} GFLOP/s; {'quick' if args.quick else 'full'} run", flush=True)

    rows = []
    with tempfile.TemporaryDirectory(prefix="task_speed_") as tmp:
        for name in args.tasks:
            data, source = load_data(name, args.mirror)
            task, vectors = get_task(name), {}
            for size in SIZES:
                dim = render(size)["word_vectors"]["dim"]
                if dim not in vectors:
                    vectors[dim] = random_vectors(task, data, dim)
                for with_elmo in (False, True):
                    row = bench_model(name, size, with_elmo, data, vectors[dim], plan, Path(tmp))
                    rows.append({**row, "data": source, "word_dim": dim})
                    print(f"#   {name} {size} {'+ELMo' if with_elmo else 'baseline'} done, "
                          f"{time.perf_counter() - started:.0f} s", flush=True)
        fixed = {} if args.no_fixed else fixed_costs(plan, Path(tmp))

    header = ["task", "size", "ELMo", "params (M)", "train ex/s", "train tok/s", "eval tok/s",
              "GFLOP/token (fwd)", "train GFLOP/s", "% of matmul"]
    print("\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for r in rows:
        print(f"| {r['task']} | {r['size']} | {'yes' if r['elmo'] else 'no'} | {r['params'] / 1e6:.2f} | "
              f"{r['train_examples_s']:,.0f} | {r['train_tokens_s']:,.0f} | {r['eval_tokens_s']:,.0f} | "
              f"{r['forward_flops_per_token'] / 1e9:.5f} | {r['train_flop_s'] / 1e9:.2f} | "
              f"{100 * r['train_flop_s'] / rate:.1f}% |")
    print(f"\n{rows[0]['timed_batches']} timed batches per row after {plan.warmup} warm-up; data: "
          f"{rows[0]['data']}; train FLOPs = 3 x forward; matmul {args.matmul_size}^2 float32 "
          f"{rate / 1e9:.1f} GFLOP/s")
    if fixed:
        print("\n| fixed cost per run | seconds | what |\n|---|---|---|")
        for key, value in fixed.items():
            print(f"| {key} | {value:.3f} | {FIXED_NOTES.get(key, f'`dvc repro` of a fresh {plan.dvc_n}-stage pipeline')} |")
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        with args.output.open("a", encoding="utf-8") as handle:
            for r in rows:
                handle.write(json.dumps({"table": "task_speed", **r, "matmul_fraction": r["train_flop_s"] / rate,
                                         "machine": machine}) + "\n")
            if fixed:
                handle.write(json.dumps({"table": "fixed_cost", **fixed, "machine": machine}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
