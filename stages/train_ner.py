"""Stage train_ner: the CoNLL-2003 NER BiLSTM-CRF, baseline and +ELMo, over several seeds (Table 1).

Reads ``data/conll2003/{train,dev,test}.jsonl``, ``data/vectors/vectors.txt`` and, for the
``elmo`` variant, ``data/features/conll2003/{train,dev,test}.hdf5``; writes
``results/metrics/ner.json``: per variant, each seed's dev/test span F1 (percent, conlleval
semantics) of its best-dev-epoch model and their mean and sample standard deviation. Every
(variant, seed) is a nested MLflow run with the dev F1 of each epoch.
"""

from pathlib import Path

import numpy as np

from elmo_repro.console import log
from elmo_repro.data.conll import read_jsonl
from elmo_repro.elmo.features import read_all
from elmo_repro.io import write_json
from elmo_repro.params import load_params
from elmo_repro.tasks.ner import train_and_evaluate
from elmo_repro.tracking import stage_run
from elmo_repro.vectors import load_text_vectors
from stages import stage_args

SECTIONS = ["ner"]
DATA_DIR = Path("data/conll2003")
VECTORS = Path("data/vectors/vectors.txt")
FEATURES_DIR = Path("data/features/conll2003")
METRICS = Path("results/metrics/ner.json")
SPLITS = ("train", "dev", "test")


def summarize(runs: list[dict]) -> dict:
    """Mean and sample std (ddof=1; 0 for a single seed) of the runs' dev and test F1."""
    out: dict = {"runs": runs}
    for key in ("dev_f1", "test_f1"):
        values = np.array([run[key] for run in runs], dtype=np.float64)
        out[f"{key}_mean"] = float(values.mean())
        out[f"{key}_std"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    return out


def run_variants(run, config: dict, data: dict, vectors, load_features) -> dict:
    """Train every (variant, seed) as a child run of ``run``; return the ``variants`` summary.

    ``load_features()`` returns the ELMo features per split; it is called only for ``elmo``.
    """
    variants = {}
    for variant in config["variants"]:
        if variant not in ("baseline", "elmo"):
            raise ValueError(f"unknown NER variant {variant!r} (expected baseline or elmo)")
        features = load_features() if variant == "elmo" else None
        runs = []
        for seed in config["seeds"]:
            with run.child(f"{variant}-seed{seed}", params={"variant": variant, "seed": seed},
                           tags={"variant": variant, "seed": str(seed)}) as child:
                result = train_and_evaluate(config, data, vectors, features, int(seed),
                                            log_metrics=lambda m, step: child.log_metrics(m, step=step))
                child.log_metrics({k: result[k] for k in ("dev_f1", "test_f1", "dev_precision", "dev_recall",
                                                          "test_precision", "test_recall", "best_epoch",
                                                          "train_seconds")})
                runs.append({"seed": int(seed), "dev_f1": result["dev_f1"], "test_f1": result["test_f1"],
                             "best_epoch": result["best_epoch"], "mlflow_run_id": child.run_id})
            log(f"[train_ner] {variant} seed {seed}: dev F1 {result['dev_f1']:.2f}, test F1 "
                f"{result['test_f1']:.2f} (epoch {result['best_epoch']}, {result['train_seconds']:.0f} s)")
        variants[variant] = summarize(runs)
        features = None                                                  # free before the next variant
    return variants


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    with stage_run("train_ner", params, SECTIONS) as run:
        config = params["ner"]
        data = {split: read_jsonl(DATA_DIR / f"{split}.jsonl") for split in SPLITS}
        vectors = load_text_vectors(VECTORS)
        variants = run_variants(run, config, data, vectors,
                                lambda: {split: read_all(FEATURES_DIR / f"{split}.hdf5") for split in SPLITS})
        write_json(METRICS, {"task": "ner", "dataset": "conll2003", "metric": "span_f1",
                             "variants": variants, "stage_run_id": run.run_id})
        run.log_metrics({f"{variant}_{key}": summary[key] for variant, summary in variants.items()
                         for key in ("dev_f1_mean", "dev_f1_std", "test_f1_mean", "test_f1_std")})
        run.log_artifact(METRICS)


if __name__ == "__main__":
    main()
