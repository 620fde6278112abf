"""Pipeline stages: thin entry points run as ``python -m stages.<name> --threads N`` from the
repository root. ``N`` is the stage's thread count in ``workflow/registry.py``; DVC and Snakemake
pass the same value, so both runners give bit-identical results."""

from __future__ import annotations

import argparse


def stage_args(doc: str | None, argv: list[str] | None = None) -> argparse.Namespace:
    """Parse a stage's command line and pin torch's intra-op threads to ``--threads``.

    Torch's float reductions depend on the thread count, so it is part of the stage's command (and
    of DVC's record of it) rather than left to the machine's core count.
    """
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=None,
                        help="intra-op threads for torch (default: torch's own choice)")
    args = parser.parse_args(argv)
    if args.threads is not None:
        if args.threads < 1:
            parser.error("--threads must be at least 1")
        import torch

        torch.set_num_threads(args.threads)
    return args
