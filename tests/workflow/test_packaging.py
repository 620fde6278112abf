"""The embedder installs and runs without the pipeline's tools (issue 31 §3)."""

import re
import subprocess
import sys

from workflow.readme import ROOT

PIPELINE_ONLY = ["yaml", "pydantic", "pandas", "scipy", "mlflow", "dvc", "snakemake", "sacrebleu", "gensim"]


def test_the_core_dependencies_are_the_embedders():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")    # no tomllib on Python 3.10
    core = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)
    pipeline = re.search(r"^pipeline = \[(.*?)^\]", text, re.S | re.M).group(1)
    assert re.findall(r'^\s*"([\w.-]+)', core, re.M) == ["torch", "numpy", "h5py", "rich"]
    assert '"mlflow' in pipeline


def test_the_embedder_imports_and_answers_help_with_the_pipeline_tools_absent():
    # A meta-path finder that refuses the pipeline-only packages, as if they were not installed.
    code = f"""
import sys
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {PIPELINE_ONLY!r}:
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Absent())
sys.argv = ['elmo-embed', '--help']
from elmo_repro.embed import main
main()
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: elmo-embed ")


def test_the_launcher_is_found_from_a_subdirectory():
    """setup.sh puts the repository root on the venv's import path (issue 30 §2: was `No module
    named 'workflow'` outside the root); the launcher then runs from the root."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "workflow.launch", "--help"], cwd=ROOT / "tests",
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m workflow.launch ")
