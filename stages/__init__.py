"""Pipeline stages: thin entry points run as ``python -m stages.<name> --threads N`` from the
repository root. ``N`` is the stage's thread count in ``workflow/registry.py``; DVC and Snakemake
pass the same value, so both runners give bit-identical results."""

from __future__ import annotations

import argparse
import os
import sys

DEBUG_ENV = "ELMO_DEBUG"

try:                # the stage commands call `python`: the project's one, where the venv is active
    import elmo_repro  # noqa: F401
except ModuleNotFoundError:
    print(f"error: {sys.executable} does not have the project installed: the stages run the `python` on "
          "PATH; run the pipeline as `.venv/bin/python -m workflow.launch dvc repro` (which puts .venv/bin "
          "first on PATH) or activate the venv first (`. .venv/bin/activate`)", file=sys.stderr)
    raise SystemExit(1) from None


def _bad_input_in_one_line(debug: bool) -> None:
    """Print an uncaught :class:`~elmo_repro.io.InputError` or :class:`~elmo_repro.io.OutputError` as
    its message alone (it names the file, line or params key path, and the problem); the exit
    status stays 1. Other exceptions, and every exception with ``debug``, keep Python's traceback."""
    from elmo_repro.io import InputError, OutputError

    previous = sys.excepthook

    def hook(kind, value, traceback):
        if issubclass(kind, (InputError, OutputError)) and not debug:
            print(f"error: {value}\n(the traceback: --debug or {DEBUG_ENV}=1)", file=sys.stderr)
        else:
            previous(kind, value, traceback)

    sys.excepthook = hook


def stage_parser(doc: str | None) -> argparse.ArgumentParser:
    """The command line every stage shares (``--threads``, ``--debug``, ``--help``); a stage adds
    its own arguments (``--run``, ``--task``, ...) before :func:`stage_args` parses it. The usage
    line names the stage as it is run: ``python -m stages.<name>``."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    parser = argparse.ArgumentParser(prog=f"python -m {spec.name}" if spec is not None else None,
                                     description=(doc or "").split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=None,
                        help="intra-op threads for torch (default: torch's own choice)")
    parser.add_argument("--debug", action="store_true",
                        help=f"print the traceback of a bad-input error too (or set {DEBUG_ENV}=1)")
    return parser


def stage_args(parser: argparse.ArgumentParser | str | None, argv: list[str] | None = None) -> argparse.Namespace:
    """Parse a stage's command line (``parser`` from :func:`stage_parser`, or the stage's docstring
    when it has no arguments of its own) and pin torch's intra-op threads to ``--threads``.

    Torch's float reductions depend on the thread count, so it is part of the stage's command (and
    of DVC's record of it) rather than left to the machine's core count.
    """
    if not isinstance(parser, argparse.ArgumentParser):
        parser = stage_parser(parser)
    args = parser.parse_args(argv)
    _bad_input_in_one_line(args.debug or os.environ.get(DEBUG_ENV, "") not in ("", "0"))
    if args.threads is not None:
        if args.threads < 1:
            parser.error("--threads must be at least 1")
        # A stage that never uses torch must not pay its import (2.6 s): torch reads these when it
        # is first imported, so a later import gets the same pinned count.
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = str(args.threads)
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(args.threads)
    return args
