"""File helpers shared by every stage: atomic writes and strict UTF-8 text reading.

DVC deletes a stage's outputs before running it and commits whatever exists afterwards, so every
output is written under a temporary name in the same directory and renamed into place only once
complete (``os.replace`` is atomic on POSIX). All text is UTF-8 regardless of the locale.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator


_UMASK = os.umask(0)
os.umask(_UMASK)


class InputError(ValueError):
    """Bad input data. The message names the file, the line (1-based) where known, and the problem."""

    def __init__(self, path: str | os.PathLike, problem: str, line: int | None = None):
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.problem = str(path), line, problem


class OutputError(OSError):
    """An output that cannot be written where it is asked for; the message names the output path
    (never the hidden temporary beside it) and the reason."""

    def __init__(self, path: str | os.PathLike, problem: str):
        super().__init__(f"{path}: cannot write the output: {problem}")
        self.path, self.problem = str(path), problem


def _blocking_file(directory: Path) -> Path | None:
    """The first existing non-directory on the way to ``directory`` (its parents included)."""
    for part in [*reversed(directory.parents), directory]:
        if part.exists() and not part.is_dir():
            return part
    return None


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds.

    Works for files and directories written by third-party code (h5py, torch.save, gensim).
    On an exception the temporary is removed and ``path`` is left untouched.

    Raises:
        OutputError: the output's directory cannot be made (a file stands on its path) or written
            (permissions, a read-only file system), or ``path`` cannot be replaced (naming ``path``).
    """
    path = Path(path)
    blocking = _blocking_file(path.parent)
    if blocking is not None:
        raise OutputError(path, f"{blocking} is a file, not a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise OutputError(path, f"{err.strerror or err} in {path.parent}") from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if tmp_path.exists():  # mkstemp creates 0600; give the output the usual permissions
            os.chmod(tmp_path, 0o666 & ~_UMASK)
        try:
            os.replace(tmp_path, path)
        except OSError as err:
            raise OutputError(path, f"{err.strerror or err} (replacing it)") from None
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w") -> Iterator[Any]:
    """Open a temporary file beside ``path`` (UTF-8 in text mode) and rename it into place on success."""
    with atomic_path(path) as tmp:
        kwargs = {} if "b" in mode else {"encoding": "utf-8", "newline": "\n"}
        with open(tmp, mode, **kwargs) as handle:
            yield handle


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as indented, key-sorted JSON, atomically."""
    with atomic_open(path) as handle:
        json.dump(obj, handle, indent=2, sort_keys=True, ensure_ascii=False)
        handle.write("\n")


_BOM = b"\xef\xbb\xbf"  # the UTF-8 byte-order mark


def _check_file(path: Path) -> None:
    """Raise :class:`InputError` unless ``path`` is an existing regular file."""
    if path.is_dir():
        raise InputError(path, "is a directory, not a file")
    if not path.is_file():
        raise InputError(path, "file not found")


def read_text(path: str | os.PathLike) -> str:
    """The whole text of a UTF-8 file, whatever the locale; a byte-order mark is dropped.

    Raises:
        InputError: missing file (or a directory), or invalid UTF-8 (naming the line).
    """
    path = Path(path)
    _check_file(path)
    raw = path.read_bytes()
    if raw.startswith(_BOM):
        raw = raw[len(_BOM):]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line, column = raw.count(b"\n", 0, err.start) + 1, err.start - (raw.rfind(b"\n", 0, err.start) + 1)
        raise InputError(path, f"not valid UTF-8 (byte {column} of the line)", line=line) from None


def read_json(path: str | os.PathLike) -> Any:
    """Read a UTF-8 JSON file (see :func:`read_text`); raise :class:`InputError` naming the file
    and line if it is missing, malformed or not UTF-8."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(path, f"malformed JSON: {err.msg}", line=err.lineno) from None


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` of a UTF-8 text file, 1-based, without the line terminator.

    Every physical line counts, blank ones included, so numbers are the file's line numbers. A UTF-8
    byte-order mark is dropped and Windows ``\\r\\n`` endings are accepted. A missing file (or a
    directory) and invalid UTF-8 raise :class:`InputError` naming the file (and the line).
    """
    path = Path(path)
    _check_file(path)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise InputError(path, f"not valid UTF-8 (byte {err.start} of the line)", line=number) from None
            yield number, line.rstrip("\r\n")
