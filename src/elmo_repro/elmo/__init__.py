"""ELMo: task-specific combination of biLM layers (paper §3.2) and feature storage."""
