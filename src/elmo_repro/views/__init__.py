"""The tables as views: one module per table, each with ``build(params) -> {file name: content}``.

A view reads finished runs (``results/runs/``, ``results/analysis/runs/``), the probes' results
and the paper's numbers, and returns what ``results/tables/<file name>`` should hold (text or
bytes as is, e.g. a figure's PNG; a mapping as JSON); the stage ``python -m stages.table --table
NAME`` writes it atomically. A view never trains, and aggregation over seeds happens only in views.
A view selects its runs with :func:`.query.table_runs`. The main job builds ``table1``; the
analysis job every other view.
"""

from __future__ import annotations

from typing import Any

Output = dict[str, Any]        # file name under results/tables -> text (str), bytes (PNG) or JSON (dict)
