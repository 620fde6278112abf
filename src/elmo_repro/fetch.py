"""Download the official data archives and lay them out as a data mirror (``data.mirror``).

``python -m elmo_repro.fetch --dest DIR [--only NAME ...] [--base-url URL] [--manifest FILE]``
downloads each archive of :data:`MANIFEST` (by default those the pipeline reads now:
:data:`DEFAULT`) to ``DIR/downloads/``, verifies its size and sha256, and writes the files the
stages read under ``DIR`` with the same relative paths as ``shared/data``. Then set
``data.mirror`` to ``DIR``.

Downloads stream in chunks to ``DIR/.partial/<file>.part`` and resume with an HTTP ``Range``
request when a partial file exists (a server that ignores ``Range`` answers 200 and the download
restarts from zero). A complete download is checked and only then renamed into
``DIR/downloads/`` (atomically); on a size or sha256 mismatch the partial file is deleted and
:class:`FetchError` names the URL and both values. An entry whose sha256 is unknown needs
``--allow-unverified``; its computed sha256 is printed so that it can be pinned with
``--manifest`` (a JSON object ``{name: {"url"?, "bytes"?, "sha256"?}}`` overriding entries).

What the layout provides (see README.md, "Fetching the official data"):

``lm1b``
    ``lm1b_heldout_subset/1b_benchmark.{train,dev,test}.tokens``: the concatenation, in shard
    order, of 1B Word heldout shards 00000-00009, 00010-00011 and 00012-00013. This is how the
    mirror's SOURCE.md says the course files were made; byte identity with the mirror's copies
    is not verified (same format: one tokenized sentence per line). Also the official shards as
    they are (about 4 GB): ``1-billion-word-language-modeling-benchmark-r13output/``
    ``training-monolingual.tokenized.shuffled/news.en-000{01..99}-of-00100`` and
    ``heldout-monolingual.tokenized.shuffled/news.en.heldout-000{00..49}-of-00050``.
``conll2003``
    ``conll2003/eng.{train,testa,testb}`` from the deepai zip's root members ``train.txt``,
    ``valid.txt`` and ``test.txt``. Those files use IOB2 chunk and NER tags (``B-`` opens every
    chunk); they are rewritten to the original IOB1 (:func:`iob2_to_iob1`), which the reader
    ``elmo_repro.data.conll`` documents. Their ``-DOCSTART- -X- -X- O`` lines are kept as is.
``snli``
    ``snli/snli_1.0/snli_1.0_{train,dev,test}.jsonl`` from the official zip (the paper profile's
    ``tasks.snli.data.train_from: official``).
``glove``
    ``glove/glove.840B.300d.txt`` (GloVe 840B, the paper profile's SST-5 and SNLI vectors; fetch
    it with ``--dest data`` for the profile's ``data/glove/...`` path). Its sha256 is not
    published: ``--allow-unverified`` prints it.
``nltk_brown``, ``nltk_abc``
    ``lm_supplement_nltk/corpora/{brown,abc}.zip`` from the nltk_data commit the mirror was
    staged from (the sha256 is that of the mirror's copies, whose md5 matches SOURCE.md).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import http.client
import os
import posixpath
import re
import shutil
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Iterator

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from .console import Throttle, log
from .io import InputError, atomic_open, atomic_path, read_json

CHUNK = 1 << 20


class FetchError(InputError):
    """A download or an archive failed; the message names the URL or file and the problem."""


def iob2_to_iob1(data: bytes) -> bytes:
    """Rewrite the chunk and NER columns of a 4-column CoNLL-2003 file from IOB2 to IOB1.

    ``B-X`` stays only where it follows a tag of type ``X`` (two adjacent entities), otherwise
    it becomes ``I-X``. IOB1 input passes unchanged. Lines end in ``\\n``; other lines are kept.
    """
    out, prev = [], [b"", b""]
    for line in data.splitlines():
        cols = line.split()
        if len(cols) == 4 and cols[0] != b"-DOCSTART-":
            for i in (0, 1):
                prefix, _, kind = cols[2 + i].partition(b"-")
                if prefix == b"B" and kind != prev[i]:
                    cols[2 + i] = b"I-" + kind
                prev[i] = kind
            line = b" ".join(cols)
        else:
            prev = [b"", b""]
        out.append(line + b"\n")
    return b"".join(out)


@dataclass(frozen=True)
class Source:
    """One official download: ``files`` maps a mirror path to the archive members concatenated
    into it, in order (``()``: the downloaded file itself); ``transform`` rewrites each such file;
    regular members whose names start with one of ``extract`` are written as they are."""

    url: str
    bytes: int | None
    sha256: str | None  # None: unknown, needs --allow-unverified
    files: dict[str, tuple[str, ...]]
    transform: Callable[[bytes], bytes] | None = None
    extract: tuple[str, ...] = ()  # member-name prefixes extracted as they are, same relative paths
    note: str = ""


_LM1B_TREE = "1-billion-word-language-modeling-benchmark-r13output/"
_HELDOUT = _LM1B_TREE + "heldout-monolingual.tokenized.shuffled/news.en.heldout-{:05d}-of-00050"
_LM1B = "lm1b_heldout_subset/1b_benchmark.{}.tokens"
_NLTK = ("https://raw.githubusercontent.com/nltk/nltk_data/"
         "5db857e6f7df11eabb5e5665836db9ec8df07e28/packages/corpora/")


def _shards(*numbers: int) -> tuple[str, ...]:
    return tuple(_HELDOUT.format(n) for n in numbers)


# Official locations, sizes and sha256 from shared/data/UPSTREAM.md and the SOURCE.md files.
MANIFEST: dict[str, Source] = {
    "lm1b": Source(
        "http://www.statmt.org/lm-benchmark/1-billion-word-language-modeling-benchmark-r13output.tar.gz",
        1792209805, "01ba60381110baf7f189dfd2b8374de371e8c9a340835793f190bdae9e90a34e",
        {_LM1B.format("train"): _shards(*range(10)), _LM1B.format("dev"): _shards(10, 11),
         _LM1B.format("test"): _shards(12, 13)},
        extract=(_LM1B_TREE + "training-monolingual.tokenized.shuffled/",
                 _LM1B_TREE + "heldout-monolingual.tokenized.shuffled/")),
    "conll2003": Source(
        "https://data.deepai.org/conll2003.zip", 982975,
        "96a104d174ddae7558bab603f19382c5fe02ff1da5c077a7f3ce2ced1578a2c3",
        {"conll2003/eng.train": ("train.txt",), "conll2003/eng.testa": ("valid.txt",),
         "conll2003/eng.testb": ("test.txt",)}, transform=iob2_to_iob1),
    "nltk_brown": Source(_NLTK + "brown.zip", 3314357,
                         "9b275f9b3b95d7bd66ccfb7cd259f445a13bbe5d1f4107aba09fd3e8364bafa6",
                         {"lm_supplement_nltk/corpora/brown.zip": ()}),
    "nltk_abc": Source(_NLTK + "abc.zip", 1487851,
                       "129bb6001beb828049a90a59b7dd3c2f0594a47012e48fc5177dfae38e658565",
                       {"lm_supplement_nltk/corpora/abc.zip": ()}),
    "squad_train": Source("https://rajpurkar.github.io/SQuAD-explorer/dataset/train-v1.1.json", 30288272,
                          "3527663986b8295af4f7fcdff1ba1ff3f72d07d61a20f487cb238a6ef92fd955",
                          {"squad_v1.1/train-v1.1.json": ()}),
    "squad_dev": Source("https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json", 4854279,
                        "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9",
                        {"squad_v1.1/dev-v1.1.json": ()}),
    "snli": Source(
        "https://nlp.stanford.edu/projects/snli/snli_1.0.zip", 94550081,
        "afb3d70a5af5d8de0d9d81e2637e0fb8c22d1235c2749d83125ca43dab0dbd3e",
        {f"snli/snli_1.0/snli_1.0_{split}.jsonl": (f"snli_1.0/snli_1.0_{split}.jsonl",)
         for split in ("train", "dev", "test")}),
    "glove": Source(
        "https://nlp.stanford.edu/data/glove.840B.300d.zip", 2176768927, None,
        {"glove/glove.840B.300d.txt": ("glove.840B.300d.txt",)},
        note="sha256 not published by Stanford NLP"),
    "sst": Source(
        "https://nlp.stanford.edu/sentiment/trainDevTestTrees_PTB.zip", None, None,
        {f"sst5/trees/{split}.txt": (f"trees/{split}.txt",) for split in ("train", "dev", "test")},
        note="sha256 unknown (a third-party loader records 789539 bytes, sha256 5c613a4f673fc740"
             "97d523a2c83f38e0cc462984d847b82c7aaf36b01cbbbfcc; not verified)"),
}
# What the pipeline reads now (prepare_lm with all train_sources, prepare_conll2003).
DEFAULT = ("lm1b", "conll2003", "nltk_brown", "nltk_abc")


def with_overrides(manifest: dict[str, Source], path: str | os.PathLike) -> dict[str, Source]:
    """``manifest`` with entries' ``url`` / ``bytes`` / ``sha256`` replaced from a JSON file
    ``{name: {"url": ..., "bytes": ..., "sha256": ...}}`` (every field optional)."""
    overrides = read_json(path)
    if not isinstance(overrides, dict):
        raise InputError(path, "expected a JSON object {name: {url, bytes, sha256}}")
    manifest = dict(manifest)
    for name, fields in overrides.items():
        if name not in manifest:
            raise InputError(path, f"unknown entry {name!r}; known: {', '.join(manifest)}")
        if not isinstance(fields, dict) or set(fields) - {"url", "bytes", "sha256"}:
            raise InputError(path, f"entry {name!r}: expected an object with fields among url, bytes, sha256")
        if "sha256" in fields and not re.fullmatch(r"[0-9a-f]{64}", str(fields["sha256"])):
            raise InputError(path, f"entry {name!r}: sha256 must be 64 lowercase hex digits")
        if "bytes" in fields and not isinstance(fields["bytes"], int):
            raise InputError(path, f"entry {name!r}: bytes must be an integer")
        manifest[name] = dataclasses.replace(manifest[name], **fields)
    return manifest


# ---------------------------------------------------------------------------------------------
# Download
# ---------------------------------------------------------------------------------------------

def _mb(n: int | None) -> str:
    return "?" if n is None else f"{n / 1e6:,.1f} MB"


@contextlib.contextmanager
def _progress(label: str, total: int | None, done: int) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n_bytes)``: a rich progress bar on a terminal, else a log line every 30 s."""
    if sys.stdout.isatty():
        with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                      TransferSpeedColumn(), transient=True) as bar:
            task = bar.add_task(label, total=total, completed=done)
            yield lambda n: bar.advance(task, n)
        return
    throttle, state = Throttle(30), [done]

    def advance(n: int) -> None:
        state[0] += n
        if throttle():
            log(f"[fetch] {label}: {_mb(state[0])} of {_mb(total)}")
    yield advance


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _check(url: str, source: Source, size: int, sha256: str, path: Path) -> None:
    """Raise :class:`FetchError` (after deleting ``path``) if size or sha256 differ from the manifest."""
    problem = None
    if source.bytes is not None and size != source.bytes:
        problem = f"size mismatch: expected {source.bytes} bytes, got {size}"
    elif source.sha256 is not None and sha256 != source.sha256:
        problem = f"sha256 mismatch: expected {source.sha256}, got {sha256}"
    if problem:
        path.unlink(missing_ok=True)
        raise FetchError(url, f"{problem}; the download was deleted")
    if source.sha256 is None:
        log(f"[fetch] WARNING: {url} is unverified (--allow-unverified); its sha256 is {sha256}. "
            "Pin it with --manifest to verify later downloads.")


def download(url: str, source: Source, dest: Path, allow_unverified: bool = False) -> Path:
    """Download ``url`` to ``dest/downloads/<file>``, resuming a partial file; return the path.

    An already downloaded file is checked again and reused.
    """
    if source.sha256 is None and not allow_unverified:
        raise FetchError(url, f"no known sha256 ({source.note or 'unknown'}); rerun with "
                              "--allow-unverified to download it anyway and print its sha256")
    filename = posixpath.basename(urllib.parse.urlsplit(url).path)
    final = dest / "downloads" / filename
    if final.is_file():
        log(f"[fetch] checking the existing {final}")
        _check(url, source, final.stat().st_size, _sha256_file(final), final)
        return final
    part = dest / ".partial" / f"{filename}.part"
    part.parent.mkdir(parents=True, exist_ok=True)
    offset = part.stat().st_size if part.is_file() else 0
    if source.bytes is not None and offset > source.bytes:
        part.unlink()
        offset = 0
    if offset != source.bytes:  # else: the partial file is complete, only check it
        _stream(url, part, offset, source.bytes)
    size = part.stat().st_size
    if source.bytes is not None and size < source.bytes:
        raise FetchError(url, f"incomplete: {size} of {source.bytes} bytes; run again to resume")
    _check(url, source, size, _sha256_file(part), part)
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(part, final)
    with contextlib.suppress(OSError):
        part.parent.rmdir()
    log(f"[fetch] {url}: {_mb(size)}, verified")
    return final


def _stream(url: str, part: Path, offset: int, expected: int | None) -> None:
    """Append the bytes of ``url`` from ``offset`` to ``part`` (restart from zero on a 200 answer)."""
    request = urllib.request.Request(url, headers={"Range": f"bytes={offset}-"} if offset else {})
    try:
        response = urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:  # nothing after the partial file: the check decides
            return
        raise FetchError(url, f"HTTP error {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError) as err:
        raise FetchError(url, f"cannot download: {getattr(err, 'reason', err)}") from None
    with response:
        if offset and getattr(response, "status", None) == 206:
            match = re.match(r"bytes (\d+)-", response.headers.get("Content-Range", ""))
            if not match or int(match.group(1)) != offset:
                part.unlink()
                raise FetchError(url, f"asked for the bytes from {offset}, got Content-Range "
                                      f"{response.headers.get('Content-Range')!r}; partial file deleted, "
                                      "run again")
            log(f"[fetch] {url}: resuming at {_mb(offset)}")
        elif offset:
            log(f"[fetch] {url}: the server ignored the Range request; restarting from zero")
            offset = 0
        length = response.headers.get("Content-Length")
        length = int(length) if length and length.isdigit() else None
        total = expected if expected is not None else (offset + length if length is not None else None)
        received = 0
        with open(part, "ab" if offset else "wb") as handle, \
                _progress(posixpath.basename(url), total, offset) as advance:
            try:
                while block := response.read(CHUNK):
                    handle.write(block)
                    received += len(block)
                    advance(len(block))
                    if expected is not None and offset + received > expected:
                        break  # too long: the size check reports it
            except (OSError, http.client.HTTPException) as err:
                raise FetchError(url, f"interrupted after {_mb(offset + received)} ({err}); "
                                      "run again to resume") from None
    if length is not None and received < length and (expected is None or offset + received < expected):
        raise FetchError(url, f"connection closed after {offset + received} bytes; run again to resume")


# ---------------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------------

def _member_name(archive: Path, name: str) -> str:
    """The member's normalized name; :class:`FetchError` for an absolute path or a ``..`` part."""
    clean = name.replace("\\", "/")
    if clean.startswith("/") or re.match(r"[A-Za-z]:", clean) or ".." in clean.split("/"):
        raise FetchError(archive, f"unsafe member path {name!r} (absolute or with '..'); refusing to extract")
    return posixpath.normpath(clean)


def _members(archive: Path) -> Iterator[tuple[str, bool, Callable[[], IO[bytes]]]]:
    """``(name, is_regular_file, open)`` of each member of a zip or (compressed) tar archive, in
    archive order; a tar is read as a stream, in one pass. Every name is checked (:func:`_member_name`)."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                yield _member_name(archive, info.filename), not info.is_dir(), lambda info=info: zf.open(info)
    else:
        with tarfile.open(archive, "r|*") as tf:
            for member in tf:
                yield _member_name(archive, member.name), member.isfile(), lambda m=member: tf.extractfile(m)


def _write(target: Path, data: bytes) -> None:
    with atomic_open(target, "wb") as handle:
        handle.write(data)


def lay_out(source: Source, archive: Path, dest: Path) -> list[Path]:
    """Write ``source.files`` and the members under ``source.extract`` below ``dest`` (each file
    atomically); return their paths."""
    wanted = {member for members in source.files.values() for member in members}
    contents: dict[str, bytes] = {}
    written: list[Path] = []
    throttle = Throttle(30)
    try:
        for name, regular, open_member in (_members(archive) if wanted or source.extract else ()):
            extract = name.startswith(source.extract) and regular
            if name in wanted:
                if not regular:
                    raise FetchError(archive, f"member {name!r} is not a regular file")
                with open_member() as handle:
                    contents[name] = handle.read()
                if extract:
                    _write(dest / name, contents[name])
            elif extract:
                with atomic_path(dest / name) as tmp, open_member() as handle, open(tmp, "wb") as out:
                    shutil.copyfileobj(handle, out, CHUNK)
            if extract:
                written.append(dest / name)
                if throttle():
                    log(f"[fetch] extracted {len(written)} files from {archive.name}")
            if not source.extract and len(contents) == len(wanted):
                break
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error) as err:
        raise FetchError(archive, f"not a readable zip or tar archive ({err})") from None
    if source.extract:
        log(f"[fetch] extracted {len(written)} files from {archive.name}")
    missing = sorted(wanted - set(contents))
    if missing:
        raise FetchError(archive, f"{len(missing)} expected member(s) missing, e.g. {missing[0]!r}")
    for relative, members in source.files.items():
        target = dest / relative
        if not members:
            with atomic_path(target) as tmp:
                shutil.copyfile(archive, tmp)
        else:  # concatenated as lines: a member without a final newline gets one
            data = b"".join(contents[m] + (b"\n" if contents[m][-1:] not in (b"", b"\n") else b"")
                            for m in members)
            _write(target, source.transform(data) if source.transform else data)
        log(f"[fetch] wrote {target} ({_mb(target.stat().st_size)})")
        written.append(target)
    return written


def fetch(dest: str | os.PathLike, names: list[str] | tuple[str, ...] = DEFAULT,
          manifest: dict[str, Source] | None = None, base_url: str | None = None,
          allow_unverified: bool = False) -> list[Path]:
    """Download, verify and lay out the named entries under ``dest``; return the files written.

    ``base_url`` replaces the directory of every official URL (a mirror of the archives).
    """
    manifest = MANIFEST if manifest is None else manifest
    unknown = [name for name in names if name not in manifest]
    if unknown:
        raise ValueError(f"unknown name(s) {unknown}; known: {', '.join(manifest)}")
    dest = Path(dest)
    written = []
    for name in names:
        source = manifest[name]
        url = source.url
        if base_url:
            url = base_url.rstrip("/") + "/" + posixpath.basename(urllib.parse.urlsplit(url).path)
        log(f"[fetch] {name}: {url} ({_mb(source.bytes)})")
        written += lay_out(source, download(url, source, dest, allow_unverified), dest)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m elmo_repro.fetch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", required=True, help="directory to lay out as the data mirror")
    parser.add_argument("--only", nargs="+", metavar="NAME", default=list(DEFAULT), choices=list(MANIFEST),
                        help=f"entries to fetch, among {', '.join(MANIFEST)} (default: {' '.join(DEFAULT)})")
    parser.add_argument("--base-url", help="fetch every archive by file name from this URL instead")
    parser.add_argument("--manifest", help="JSON file overriding url/bytes/sha256 of entries")
    parser.add_argument("--allow-unverified", action="store_true",
                        help="download entries with no known sha256 (prints the computed sha256)")
    args = parser.parse_args(argv)
    try:
        manifest = with_overrides(MANIFEST, args.manifest) if args.manifest else MANIFEST
        fetch(args.dest, args.only, manifest, args.base_url, args.allow_unverified)
    except (InputError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"interrupted; partial downloads in {Path(args.dest) / '.partial'} resume on the next run",
              file=sys.stderr)
        return 130
    log(f"[fetch] done: set data.mirror to {Path(args.dest).resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
