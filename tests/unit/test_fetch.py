"""elmo_repro.fetch against a local HTTP server (127.0.0.1, with Range support) serving tiny archives
laid out like the official ones; the checksums come from a --manifest override, as a user pins them."""

import hashlib
import io
import json
import re
import socket
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from elmo_repro import fetch
from elmo_repro.data.conll import read_conll2003, to_iob2
from elmo_repro.data.lm_corpus import build_split, read_source

LM1B_TAR = "1-billion-word-language-modeling-benchmark-r13output.tar.gz"
TREE = "1-billion-word-language-modeling-benchmark-r13output/"
HELDOUT = TREE + "heldout-monolingual.tokenized.shuffled/"
TRAINING_SHARD = TREE + "training-monolingual.tokenized.shuffled/news.en-00001-of-00100"
# deepai's conll2003.zip style: IOB2 chunk and NER tags, "-DOCSTART- -X- -X- O".
CONLL_IOB2 = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n. . O O\n\n"
              "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\nJohn NNP B-NP B-PER\n")
CONLL_IOB1 = ("-DOCSTART- -X- -X- O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP O\n. . O O\n\n"
              "Peter NNP I-NP I-PER\nBlackburn NNP I-NP I-PER\nJohn NNP B-NP B-PER\n")


def shard_text(n):
    text = f"Shard {n} first sentence .\nShard {n} , second one ."
    return text if n == 11 else text + "\n"  # shard 11 lacks its final newline


def tar_gz(members):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def zip_bytes(members):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members:
            archive.writestr(zipfile.ZipInfo(name), data)
    return buffer.getvalue()


def lm1b_archive(extra=()):
    members = list(extra) + [(f"{HELDOUT}news.en.heldout-{n:05d}-of-00050", shard_text(n).encode())
                             for n in reversed(range(20))]  # not in shard order
    members += [(TREE + "README", b"readme\n"), (TRAINING_SHARD, b"A training sentence .\n")]
    return tar_gz(members)


def conll_archive(extra=()):
    names = ("train.txt", "valid.txt", "test.txt")
    return zip_bytes(list(extra) + [(name, CONLL_IOB2.encode()) for name in names])


def pin(tmp_path, **archives):
    """A --manifest override pinning bytes and sha256 of the given entries."""
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                                for name, data in archives.items()}))
    return str(path)


class Handler(BaseHTTPRequestHandler):
    """Serves ``server.files`` by name; honours ``Range: bytes=N-`` unless ``server.honour_range`` is off."""

    def do_GET(self):
        self.server.requests.append((self.path, self.headers.get("Range")))
        data = self.server.files.get(self.path.lstrip("/"))
        if data is None:
            self.send_error(404)
            return
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        start = int(match.group(1)) if match and self.server.honour_range else 0
        if start >= len(data) > 0:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(data)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        self.wfile.write(data[start:])

    def log_message(self, *args):
        pass


@pytest.fixture(autouse=True)
def no_internet(monkeypatch):
    """Any connection other than to 127.0.0.1 fails the test."""
    real = socket.create_connection

    def local_only(address, *args, **kwargs):
        assert address[0] == "127.0.0.1", f"a test tried to reach {address}"
        return real(address, *args, **kwargs)
    monkeypatch.setattr(socket, "create_connection", local_only)


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.files, httpd.requests, httpd.honour_range = {}, [], True
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def run(dest, server, *args):
    return fetch.main(["--dest", str(dest), "--base-url", server.url, *args])


def test_good_archives_are_verified_and_laid_out_as_the_mirror(tmp_path, server):
    server.files = {LM1B_TAR: lm1b_archive(), "conll2003.zip": conll_archive()}
    manifest = pin(tmp_path, lm1b=server.files[LM1B_TAR], conll2003=server.files["conll2003.zip"])
    dest = tmp_path / "mirror"
    assert run(dest, server, "--only", "lm1b", "conll2003", "--manifest", manifest) == 0

    subset = dest / "lm1b_heldout_subset"
    expected = {"train": range(10), "dev": (10, 11), "test": (12, 13)}
    for split, shards in expected.items():
        text = (subset / f"1b_benchmark.{split}.tokens").read_text()
        assert text == "".join(shard_text(n).rstrip("\n") + "\n" for n in shards)
    assert list(read_source(dest, "lm1b_dev"))[:3] == [["Shard", "10", "first", "sentence", "."],
                                                        ["Shard", "10", ",", "second", "one", "."],
                                                        ["Shard", "11", "first", "sentence", "."]]
    _, heldout, stats = build_split(dest, ["lm1b_dev"], 1000)
    assert stats["train_sentences"] == 4 and [s[1] for s in heldout] == ["12", "12", "13", "13"]
    # the official shards, as they are
    assert (dest / TRAINING_SHARD).read_text() == "A training sentence .\n"
    assert (dest / f"{HELDOUT}news.en.heldout-00000-of-00050").read_text() == shard_text(0)
    assert len(list((dest / HELDOUT).iterdir())) == 20 and not (dest / TREE / "README").exists()

    for name in ("eng.train", "eng.testa", "eng.testb"):
        assert (dest / "conll2003" / name).read_text() == CONLL_IOB1
    sentences = read_conll2003(dest / "conll2003" / "eng.train")
    assert [s["ner"] for s in sentences] == [["I-ORG", "O", "O"], ["I-PER", "I-PER", "B-PER"]]
    assert to_iob2(sentences[1]["ner"]) == ["B-PER", "I-PER", "B-PER"]  # the same entities as the IOB2 file

    assert sorted(p.name for p in (dest / "downloads").iterdir()) == sorted(server.files)
    assert not (dest / ".partial").exists()
    requests = len(server.requests)
    assert run(dest, server, "--only", "lm1b", "conll2003", "--manifest", manifest) == 0
    assert len(server.requests) == requests  # verified downloads are reused


def test_corrupted_archive_fails_the_checksum_and_leaves_nothing(tmp_path, server, capsys):
    good = conll_archive()
    server.files = {"conll2003.zip": good[:-1] + bytes([good[-1] ^ 1])}  # same size, one bit flipped
    dest = tmp_path / "mirror"
    assert run(dest, server, "--only", "conll2003", "--manifest", pin(tmp_path, conll2003=good)) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{server.url}conll2003.zip" in err and "sha256 mismatch" in err
    assert hashlib.sha256(good).hexdigest() in err
    assert hashlib.sha256(server.files["conll2003.zip"]).hexdigest() in err
    assert [p for p in dest.rglob("*") if p.is_file()] == []


def test_partial_download_resumes_with_a_range_request(tmp_path, server):
    data = conll_archive()
    server.files = {"conll2003.zip": data}
    dest = tmp_path / "mirror"
    (dest / ".partial").mkdir(parents=True)
    (dest / ".partial" / "conll2003.zip.part").write_bytes(data[:100])
    assert run(dest, server, "--only", "conll2003", "--manifest", pin(tmp_path, conll2003=data)) == 0
    assert server.requests == [("/conll2003.zip", "bytes=100-")]
    assert (dest / "downloads" / "conll2003.zip").read_bytes() == data
    assert (dest / "conll2003" / "eng.testb").read_text() == CONLL_IOB1


def test_server_ignoring_range_restarts_from_zero(tmp_path, server):
    data = conll_archive()
    server.files, server.honour_range = {"conll2003.zip": data}, False
    dest = tmp_path / "mirror"
    (dest / ".partial").mkdir(parents=True)
    (dest / ".partial" / "conll2003.zip.part").write_bytes(data[:100])
    assert run(dest, server, "--only", "conll2003", "--manifest", pin(tmp_path, conll2003=data)) == 0
    assert server.requests == [("/conll2003.zip", "bytes=100-")]  # answered 200 with the whole file
    assert (dest / "downloads" / "conll2003.zip").read_bytes() == data


@pytest.mark.parametrize("name,bad_member", [
    ("lm1b", TREE + "training-monolingual.tokenized.shuffled/../../../escape.txt"),
    ("lm1b", "/tmp/escape.txt"),
    ("conll2003", "../escape.txt"),
])
def test_path_traversal_member_is_rejected(tmp_path, server, capsys, name, bad_member):
    extra = [(bad_member, b"escaped\n")]
    filename, data = ((LM1B_TAR, lm1b_archive(extra)) if name == "lm1b"
                      else ("conll2003.zip", conll_archive(extra)))
    server.files = {filename: data}
    dest = tmp_path / "a" / "mirror"
    assert run(dest, server, "--only", name, "--manifest", pin(tmp_path, **{name: data})) == 1
    err = capsys.readouterr().err
    assert "unsafe member path" in err and bad_member in err and "Traceback" not in err
    assert not (tmp_path / "a" / "escape.txt").exists() and not (dest / TREE).exists()
    assert sorted(p.name for p in dest.iterdir()) == ["downloads"]  # verified, but nothing laid out


def test_unknown_sha256_needs_allow_unverified_and_prints_the_digest(tmp_path, server, capsys):
    data = zip_bytes([(f"trees/{split}.txt", f"(3 (2 {split}) (3 .))\n".encode())
                      for split in ("train", "dev", "test")])
    server.files = {"trainDevTestTrees_PTB.zip": data}
    dest = tmp_path / "mirror"
    assert run(dest, server, "--only", "sst") == 1
    assert "--allow-unverified" in capsys.readouterr().err and server.requests == []
    assert run(dest, server, "--only", "sst", "--allow-unverified") == 0
    assert hashlib.sha256(data).hexdigest() in capsys.readouterr().err
    assert (dest / "sst5" / "trees" / "dev.txt").read_text() == "(3 (2 dev) (3 .))\n"


def test_iob2_to_iob1_leaves_iob1_unchanged():
    assert fetch.iob2_to_iob1(CONLL_IOB2.encode()).decode() == CONLL_IOB1
    assert fetch.iob2_to_iob1(CONLL_IOB1.encode()).decode() == CONLL_IOB1
