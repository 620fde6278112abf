"""elmo_repro: a reproducibility workflow for ELMo (Peters et al., NAACL 2018).

The library holds the paper's components (``bilm``, ``elmo``), the data readers (``data``),
the downstream task models (``tasks``) and their scorers (``metrics``). The pipeline's stages
(``stages/`` at the repository root) are thin entry points that read ``params.yaml`` and call it.
"""

__version__ = "0.1.0"
