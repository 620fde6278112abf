"""Pipeline stages: thin entry points run as `python -m stages.<name>` from the repository root."""
