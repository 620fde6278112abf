"""The character-based bidirectional language model (paper §3.1, §3.4; bilm-tf)."""

from .model import BiLM, BiLMConfig

__all__ = ["BiLM", "BiLMConfig"]
