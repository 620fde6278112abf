"""The single registry of pipeline stages.

Every stage is declared here once: its command, its dependencies (including its own code), the
params sections it reads, its outputs and its metrics. ``dvc.yaml`` is rendered from this list
(``python -m workflow.render``) and a test checks that re-rendering changes nothing. Paths under
the data mirror use DVC's templating (``${data.mirror}``), resolved from ``params.yaml``.

Data flows one way: raw text -> vocabulary -> biLM -> perplexity / features -> tasks -> tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# The one project import here: the mirror paths of the evaluation splits are declared beside their
# readers (a plain constant, so rendering dvc.yaml needs no third-party package).
from elmo_repro.data.eval_text import SPLIT_PATHS as EVAL_SPLIT_PATHS

MIRROR = "${data.mirror}"
BILM = "${bilm_source.path}"  # models/bilm (trained here) or a directory with released ELMo weights
PKG = "src/elmo_repro"

# Library code each group of stages depends on; editing it marks those stages stale. A test
# (tests/workflow/test_registry.py) checks that every project file a stage imports is covered.
COMMON_CODE = ["stages/__init__.py", f"{PKG}/io.py", f"{PKG}/params.py"]  # every stage reads/writes through them
CHARS_CODE = [f"{PKG}/data/character_ids.py"]
BILM_CODE = [f"{PKG}/bilm", *CHARS_CODE, f"{PKG}/data/vocabulary.py", f"{PKG}/data/lm_batches.py",
             f"{PKG}/data/prefetch.py"]   # the bilm package and what it imports
TEXT_CODE = [f"{PKG}/data/text.py"]
# The evaluation splits every training text is checked against (contamination.splits reads them).
EVAL_TEXT = [f"{PKG}/data/eval_text.py", f"{PKG}/data/contamination.py", f"{PKG}/data/lm_corpus.py",
             *(f"{MIRROR}/{path}" for path in EVAL_SPLIT_PATHS)]
# Training stages depend on the contamination report: they never run on a text that failed it.
CONTAMINATION_REPORT = "results/metrics/contamination.json"
# Imported by every stage but without effect on any output (log lines, progress, MLflow records),
# so not dependencies: editing them re-runs nothing.
LOGGING_CODE = [f"{PKG}/console.py", f"{PKG}/tracking.py"]


@dataclass(frozen=True)
class Stage:
    """One pipeline stage. ``module`` is run as ``python -m stages.<module>`` from the repo root."""

    name: str
    module: str
    deps: list[str]
    params: list[str]
    outs: list[str] = field(default_factory=list)           # directories, cached by DVC
    committed: list[str] = field(default_factory=list)      # directories kept in git (cache: false)
    metrics: list[str] = field(default_factory=list)        # JSON files, not cached by DVC
    persist: list[str] = field(default_factory=list)  # outputs DVC must not delete (checkpoints)
    threads: int = 2  # pinned: torch's float reductions depend on it (Snakemake reserves as many)
    # Cluster resources for Snakemake (SLURM profile workflow/profiles/slurm), sized for the paper
    # profile: gpu (count), mem_mb, runtime (minutes). DVC ignores them.
    resources: dict[str, int] = field(default_factory=lambda: {"mem_mb": 4000, "runtime": 60})

    @property
    def cmd(self) -> str:
        return f"python -m stages.{self.module} --threads {self.threads}"

    @property
    def all_deps(self) -> list[str]:
        return [f"stages/{self.module}.py", *COMMON_CODE, *self.deps]


STAGES: list[Stage] = [
    Stage(
        name="prepare_lm",
        module="prepare_lm",
        deps=[*EVAL_TEXT, *TEXT_CODE, *CHARS_CODE, f"{MIRROR}/lm1b_heldout_subset",
              f"{MIRROR}/lm_supplement_nltk/corpora"],
        params=["data", "lm_data", "contamination"],
        outs=["data/lm"],
        metrics=["results/metrics/lm_data.json"],
        threads=1,
        resources={"mem_mb": 96000, "runtime": 240},
    ),
    Stage(
        name="check_contamination",
        module="check_contamination",
        deps=[*EVAL_TEXT, *TEXT_CODE, *CHARS_CODE, "data/lm/train.txt", "data/lm/heldout.txt"],
        params=["data", "contamination"],
        committed=["results/contamination"],
        metrics=["results/metrics/contamination.json"],
        threads=1,
        resources={"mem_mb": 16000, "runtime": 60},
    ),
    Stage(
        name="vocab",
        module="vocab",
        deps=[f"{PKG}/data/vocabulary.py", *CHARS_CODE, *TEXT_CODE, "data/lm/train.txt"],
        params=["vocab"],
        outs=["data/vocab"],
        threads=1,
        resources={"mem_mb": 96000, "runtime": 120},
    ),
    Stage(
        name="pretrain_bilm",
        module="pretrain_bilm",
        deps=[*BILM_CODE, *TEXT_CODE, "data/lm/train.txt", "data/vocab", CONTAMINATION_REPORT],
        params=["bilm", "pretrain"],
        outs=["models/bilm"],
        persist=["models/bilm_checkpoints"],
        metrics=["results/metrics/pretrain.json"],
        resources={"gpu": 1, "mem_mb": 128000, "runtime": 4320},
    ),
    Stage(
        name="perplexity",
        module="perplexity",
        deps=[*BILM_CODE, *TEXT_CODE, "data/lm/heldout.txt", "data/vocab", "models/bilm"],
        params=["perplexity"],
        metrics=["results/metrics/perplexity.json"],
        resources={"gpu": 1, "mem_mb": 32000, "runtime": 120},
    ),
    Stage(
        name="prepare_conll2003",
        module="prepare_conll2003",
        deps=[f"{PKG}/data/conll.py", f"{MIRROR}/conll2003/eng.train",
              f"{MIRROR}/conll2003/eng.testa", f"{MIRROR}/conll2003/eng.testb"],
        params=["data"],
        outs=["data/conll2003"],
        threads=1,
        resources={"mem_mb": 4000, "runtime": 10},
    ),
    Stage(
        name="features_conll2003",
        module="extract_features",
        deps=[*BILM_CODE, f"{PKG}/elmo/features.py", f"{PKG}/elmo/embedder.py", f"{PKG}/elmo/scalar_mix.py",
              f"{PKG}/data/conll.py", BILM, "data/conll2003"],
        params=["features", "bilm_source"],
        outs=["data/features/conll2003"],
        resources={"gpu": 1, "mem_mb": 32000, "runtime": 240},
    ),
    Stage(
        name="word_vectors",
        module="word_vectors",
        deps=[f"{PKG}/vectors.py", "data/lm/train.txt", CONTAMINATION_REPORT],
        params=["word_vectors"],
        outs=["data/vectors"],
        threads=1,  # gensim with one worker: bit-identical vectors
        resources={"mem_mb": 16000, "runtime": 240},
    ),
    Stage(
        name="train_ner",
        module="train_ner",
        deps=[f"{PKG}/tasks/ner.py", f"{PKG}/tasks/crf.py", f"{PKG}/tasks/char_cnn.py",
              f"{PKG}/data/conll.py", f"{PKG}/elmo/scalar_mix.py", f"{PKG}/elmo/features.py",
              *CHARS_CODE, f"{PKG}/metrics/span_f1.py", f"{PKG}/vectors.py",
              "data/conll2003", "data/features/conll2003", "data/vectors"],
        params=["ner"],
        metrics=["results/metrics/ner.json"],
        resources={"gpu": 1, "mem_mb": 32000, "runtime": 720},
    ),
    Stage(
        name="tables",
        module="tables",
        deps=[f"{PKG}/tables.py", f"{PKG}/paper.py", "results/metrics/ner.json",
              "results/metrics/perplexity.json"],
        params=["tables"],
        committed=["results/tables"],
        threads=1,
        resources={"mem_mb": 2000, "runtime": 10},
    ),
]


def resolve(path: str, params: dict) -> str:
    """Substitute DVC-style ``${section.key}`` references with values from the params."""
    def lookup(match: re.Match) -> str:
        value: Any = params
        for key in match.group(1).split("."):
            value = value[key]
        return str(value)
    return re.sub(r"\$\{([\w.]+)\}", lookup, path)


def snakemake_inputs(stage: Stage, params: dict) -> list[str]:
    """The stage's deps as Snakemake inputs: ``${...}`` references resolved from the params, and a
    file inside another stage's output directory replaced by that directory (Snakemake matches
    outputs exactly)."""
    produced = [out for other in STAGES for out in [*other.outs, *other.committed]]
    inputs = []
    for dep in stage.all_deps:
        dep = resolve(dep, params)
        dep = next((out for out in produced if dep.startswith(out + "/")), dep)
        if dep not in inputs:
            inputs.append(dep)
    return inputs
