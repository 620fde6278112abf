"""Embed a tokenized text file with a biLM into an HDF5 file in allennlp's ``elmo`` layout.

    python -m elmo_repro.embed INPUT OUTPUT --model PATH [--weight-file FILE]
                               [--all | --top | --average] [--batch-size N] [--dtype float32|float16]
                               [--window W [--overlap K]]

(also installed as ``elmo-embed``). INPUT is UTF-8 text with one whitespace-tokenized sentence per
line (a byte-order mark and Windows line endings are accepted; invalid UTF-8 is an error naming the
file and line). ``--model`` is a trained model directory (``weights.pt`` + ``options.json``), a
released ELMo directory (``options.json`` + ``weights.hdf5``), or an options file with
``--weight-file`` (see :func:`elmo_repro.elmo.embedder.load_bilm`).

OUTPUT, as ``allennlp elmo`` writes it:

* one dataset per input line, named by the line's 0-based index (``"0"``, ``"1"``, ...; line
  number minus one), float32 by default: ``--all`` (L + 1, n_tokens, D) every layer (3 for the
  paper's model), ``--top`` (n_tokens, D) the top layer, ``--average`` (n_tokens, D) the mean of
  the layers; sentence boundaries are not included;
* ``sentence_to_index``: a (1,) variable-length string dataset holding a JSON object that maps each
  line's text (stripped) to its index; for duplicate lines the last index wins, as in allennlp,
  while every line keeps its own dataset.

Blank lines (empty or whitespace only) differ from allennlp, which refuses the file: a blank line
keeps its index, so later lines stay aligned with the input's line numbers, and gets an empty
dataset ((L + 1, 0, D) or (0, D)); it is left out of ``sentence_to_index``. Keys are indices, so
sentences containing ``/`` are safe (allennlp's ``--use-sentence-keys`` is not offered). A literal
``<S>`` or ``</S>`` token is embedded with the boundary characters, as in the original, and keeps
its position (one vector per input token).

Vectors are stateless (each line from zero LSTM state; allennlp carries the state across batches).
Each line is one biLM call unless ``--window W`` is given: lines longer than W tokens are then
embedded by overlapping windows (``ElmoEmbedder.embed_long``; ``--overlap`` context tokens each
side), which bounds memory for very long lines at the price of a small difference from one call.
The file is written under a temporary name and renamed into place when complete.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import torch

from .console import Progress, log
from .elmo.embedder import DEFAULT_OVERLAP, ElmoEmbedder
from .elmo.features import write_sentence_index
from .io import InputError, atomic_path, iter_lines

FORMATS = ("all", "top", "average")


def read_sentences(path: str | Path) -> list[str]:
    """The lines of ``path`` (UTF-8, BOM and CRLF tolerated), stripped; InputError naming file:line.

    A carriage return that does not end a ``\r\n`` line (old Mac ``\r`` line endings) is an
    error: read as text it would silently join many sentences into one.
    """
    lines = []
    for number, line in iter_lines(path):
        if "\r" in line:
            raise InputError(path, "holds a carriage return that is not part of a \\r\\n line ending "
                             "(old Mac \\r line endings?): convert the file to \\n line endings", line=number)
        lines.append(line.strip())
    return lines


def select(layers: np.ndarray, output_format: str) -> np.ndarray:
    """(L + 1, n, D) -> the ``--all`` / ``--top`` / ``--average`` array."""
    if output_format == "all":
        return layers
    if output_format == "top":
        return layers[-1]
    if output_format == "average":
        return layers.mean(axis=0)
    raise ValueError(f"output format must be one of {FORMATS}, got {output_format!r}")


def embed_file(embedder: ElmoEmbedder, input_path: str | Path, output_path: str | Path,
               output_format: str = "all", batch_size: int = 64, dtype: str = "float32",
               window: int | None = None, overlap: int = DEFAULT_OVERLAP,
               checkpoint: Callable[[], None] | None = None) -> int:
    """Embed every line of ``input_path`` into ``output_path`` (module docstring); returns the
    number of lines. Lines are batched by length (results do not depend on the batch).
    ``checkpoint()`` is called after every batch (the CLI stops there on a signal).

    Raises:
        InputError: unreadable input or invalid UTF-8 (file and line).
        ValueError: unknown format or dtype, or bad window/overlap.
    """
    if output_format not in FORMATS:
        raise ValueError(f"output format must be one of {FORMATS}, got {output_format!r}")
    np_dtype = np.dtype(dtype)
    if np_dtype not in (np.float16, np.float32):
        raise ValueError(f"dtype must be float32 or float16, got {dtype}")
    lines = read_sentences(input_path)
    sentences = [line.split() for line in lines]
    long = [i for i, s in enumerate(sentences) if window is not None and len(s) > window]
    short = sorted((i for i, s in enumerate(sentences) if window is None or len(s) <= window),
                   key=lambda i: len(sentences[i]))
    with atomic_path(output_path) as tmp, h5py.File(tmp, "w") as out, \
            Progress("embedding", len(sentences), "sentences") as progress:
        def write(i: int, layers: np.ndarray) -> None:
            out.create_dataset(str(i), data=select(layers, output_format).astype(np_dtype))

        for start in range(0, len(short), batch_size):
            idx = short[start:start + batch_size]
            for i, layers in zip(idx, embedder.embed_batch([sentences[i] for i in idx])):
                write(i, layers)
            progress.advance(len(idx))
            if checkpoint is not None:
                checkpoint()
        for i in long:
            write(i, embedder.embed_long(sentences[i], window, overlap))
            progress.advance(1)
            if checkpoint is not None:
                checkpoint()
        write_sentence_index(out, {line: str(i) for i, line in enumerate(lines) if line})
    return len(sentences)


def _output_problem(source: Path, output: Path) -> str | None:
    """Why ``output`` must not be written, or None: it is a directory, or it is the input file
    itself (the same path, or the same file under another name or through a link)."""
    if output.is_dir():
        return f"output {output} is a directory; give the HDF5 file to write"
    same = output.resolve() == source.resolve()
    if not same and output.exists() and source.exists():
        same = os.path.samefile(output, source)
    if same:
        return f"output {output} is the input file {source}: refusing to overwrite the text with HDF5"
    return None


def _model_problem(model: Path, weight_file: Path | None) -> str | None:
    """Why ``--model`` / ``--weight-file`` cannot be right, or None: a weight file that is a
    directory, or the two given the wrong way round (weights as ``--model``, options as weights)."""
    if weight_file is None:
        return None
    if weight_file.is_dir():
        return f"--weight-file {weight_file} is a directory; give the .hdf5 or .pt weight file"
    if weight_file.suffix == ".json" or model.suffix in (".hdf5", ".h5", ".pt"):
        return (f"--model {model} and --weight-file {weight_file} look swapped: --model takes the options "
                "file (or a model directory), --weight-file the .hdf5 or .pt weights")
    return None


def main(argv: list[str] | None = None) -> int:
    # the console script (pyproject's `elmo-embed`) names itself; `python -m` shows that form
    script = Path(sys.argv[0]).name
    parser = argparse.ArgumentParser(
        prog=script if script == "elmo-embed" else "python -m elmo_repro.embed",
        description="Embed a file of tokenized sentences (one per line) with a biLM into HDF5 "
                    "(allennlp `elmo` layout: one dataset per line index plus sentence_to_index).")
    parser.add_argument("input", help="UTF-8 text, one whitespace-tokenized sentence per line")
    parser.add_argument("output", help="HDF5 file to write (atomically)")
    parser.add_argument("--model", required=True,
                        help="model directory (weights.pt or weights.hdf5, with options.json), or an "
                             "options.json with --weight-file")
    parser.add_argument("--weight-file", help="weights (.hdf5 released layout or .pt) for an options file")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--all", dest="output_format", action="store_const", const="all",
                       help="every layer, (L+1, n_tokens, D) per line (default)")
    group.add_argument("--top", dest="output_format", action="store_const", const="top",
                       help="the top layer, (n_tokens, D)")
    group.add_argument("--average", dest="output_format", action="store_const", const="average",
                       help="the mean of the layers, (n_tokens, D)")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per biLM call (default 64)")
    parser.add_argument("--dtype", choices=("float32", "float16"), default="float32",
                        help="stored dtype (default float32, as allennlp)")
    parser.add_argument("--window", type=int,
                        help="embed lines longer than this many tokens by overlapping windows "
                             "(default: every line in one call)")
    parser.add_argument("--overlap", type=int, default=DEFAULT_OVERLAP,
                        help=f"context tokens on each side of a window (default {DEFAULT_OVERLAP})")
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    parser.add_argument("--threads", type=int,
                        help="torch intra-op threads (default: torch's choice, all cores; one thread "
                             "is much faster when another process keeps the cores busy)")
    args = parser.parse_args(argv)
    try:
        device = torch.device(args.device)
    except RuntimeError as err:
        parser.error(f"--device: {err}")
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: no CUDA device is available to this torch "
                     f"({torch.__version__}); use --device cpu")
    if device.type == "meta":
        parser.error(f"--device {args.device}: holds no values; use --device cpu or cuda")
    try:                                   # mps, xpu, cuda:N past the last GPU, ...: one line, not a traceback
        torch.zeros(1, device=device)
    except Exception as err:  # torch raises RuntimeError, AssertionError or NotImplementedError here
        parser.error(f"--device {args.device}: not usable with this torch ({torch.__version__}: "
                     f"{str(err).splitlines()[0]}); use --device cpu")
    if args.threads is not None:
        if args.threads < 1:
            parser.error("--threads must be at least 1")
        torch.set_num_threads(args.threads)
    problem = (_output_problem(Path(args.input), Path(args.output))
               or _model_problem(Path(args.model), Path(args.weight_file) if args.weight_file else None))
    if problem:
        parser.error(problem)
    if args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    if args.window is not None and not (args.overlap >= 0 and args.window > 2 * args.overlap):
        parser.error("--window must be larger than twice --overlap (and --overlap >= 0)")
    # A scheduler's SIGTERM (or a closed terminal's SIGHUP) exits through Python's cleanup, so the
    # atomic writer removes its temporary file instead of leaving it beside the output.
    interrupt = _Interrupt()
    previous = {signum: signal.signal(signum, interrupt.handle) for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return _run(args, interrupt)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class _Interrupt:
    """SIGTERM/SIGHUP as ``SystemExit(128 + signal)``. While the HDF5 file is being written the exit
    is deferred to the end of the current batch (:meth:`check`): raised inside h5py's own code it
    could be swallowed there (the run then finished with status 0 after the signal)."""

    def __init__(self) -> None:
        self.deferred, self.signum = False, 0

    def handle(self, number: int, frame) -> None:
        if not self.deferred:
            sys.exit(128 + number)
        self.signum = number

    def check(self) -> None:
        if self.signum:
            sys.exit(128 + self.signum)


def _run(args: argparse.Namespace, interrupt: _Interrupt) -> int:
    try:
        embedder = ElmoEmbedder(args.model, args.weight_file, device=args.device)
        interrupt.deferred = True
        n = embed_file(embedder, args.input, args.output, args.output_format or "all", args.batch_size,
                       args.dtype, args.window, args.overlap, checkpoint=interrupt.check)
    except (InputError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    log(f"[embed] {n} lines -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
