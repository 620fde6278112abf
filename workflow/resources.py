"""What a stage asks of the machine under a profile's ``compute`` section: Snakemake's resources
(memory, time, CPUs, GPUs, SLURM partition) and the ``--device``/``--precision`` arguments.
"""

from __future__ import annotations

from typing import Any

from .stage import Stage

DEFAULT_RESOURCES = {"mem_mb": 4000, "runtime": 60}   # without a compute section (hand-made params)


def _compute_key(stage: Stage, table: dict) -> str:
    """The entry of a ``compute`` table that applies to ``stage``: its (family's) name, else its
    module (``train_run``: every task run; ``table``: every view), else ``default``."""
    name = stage.name.split("@")[0]
    return name if name in table else stage.module if stage.module in table else "default"


def compute_args(stage: Stage, params: dict, resources: dict[str, Any]) -> str:
    """The stage's ``--device`` and ``--precision`` under ``params``: ``--device cuda`` exactly when
    its resources hold a GPU (so a stage computes on the GPU it is given, and only then), and
    ``--precision`` from ``compute.precision`` when it is not fp32. Empty for a CPU stage in fp32:
    the tiny profile's commands are those of the code before devices.

    Raises:
        ValueError: a precision for a stage without ``--precision``, or bf16 without a GPU (naming
            the key path).
    """
    table = (params.get("compute") or {}).get("precision") or {}
    key = _compute_key(stage, table)
    precision = table.get(key, "fp32")
    args = ["--device cuda"] if resources.get("gpu") else []
    if precision != "fp32":
        if not stage.precision:
            name = stage.name.split("@")[0]
            raise ValueError(f"compute.precision.{key}: stage {name} takes no --precision"
                             + (" (the biLM trains in pretrain.precision)" if name in ("pretrain_bilm", "finetune") else ""))
        if not resources.get("gpu"):
            raise ValueError(f"compute.precision.{key}: {precision} needs a GPU (compute.resources.{key}.gpu)")
        args.append(f"--precision {precision}")
    return " ".join(args)


def stage_resources(stage: Stage, params: dict) -> dict[str, Any]:
    """Snakemake's resources for ``stage`` under ``params``: ``compute.resources`` by the stage's (or
    family's) name, else by its module (``train_run``: every task run; ``table``: every view), else
    its ``default``; ``slurm_partition`` from ``compute.partitions`` (``gpu`` when it requests GPUs,
    else ``cpu``), so CPU stages never wait in the GPU queue.

    Raises:
        ValueError: GPUs requested for a stage that computes on the CPU (``Stage.device`` False).
    """
    compute = params.get("compute") or {}
    table = compute.get("resources") or {}
    name = stage.name.split("@")[0]
    key = _compute_key(stage, table)
    chosen = {**DEFAULT_RESOURCES, **table.get("default", {}), **table.get(key, {})}
    if chosen.get("gpu") and not stage.device:
        raise ValueError(f"compute.resources.{key}.gpu: stage {name} computes on the CPU (no device path): "
                         "it must not hold a GPU")
    if not chosen.get("gpu"):
        chosen.pop("gpu", None)
    partition = (compute.get("partitions") or {}).get("gpu" if chosen.get("gpu") else "cpu")
    return {**chosen, **({"slurm_partition": partition} if partition else {})}
