"""elmo_repro: a reproducibility workflow for ELMo (Peters et al., NAACL 2018).

The library holds the paper's components (``bilm``, ``elmo``), the corpora and shared data
readers (``data``), and the downstream tasks (``tasks``: one folder per task with its reader,
scorer, model and floor). The pipeline's stages
(``stages/`` at the repository root) are thin entry points that read ``params.yaml`` and call it.
"""

__version__ = "0.2.0.dev0"   # pyproject.toml reads it (dynamic version)
