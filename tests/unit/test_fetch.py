"""elmo_repro.fetch against a local HTTP server (127.0.0.1, with Range support) serving tiny archives
laid out like the official ones; the checksums come from a --manifest override, as a user pins them.
Then the manifest itself: every mirror path a stage of either job reads is fetched by default or
covered by a manual item, the pins equal the mirror's files, and docs/data.md is its render."""

import gzip
import hashlib
import io
import json
import posixpath
import re
import socket
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from elmo_repro import fetch, fetch_pins
from elmo_repro.data import eval_text
from elmo_repro.tasks.ner.reader import read_conll2003, to_iob2
from elmo_repro.data.lm_corpus import build_split, read_source
from elmo_repro.io import InputError
from workflow import data_doc
from workflow.profile import render
from workflow.snakemake_dag import resolve

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
    # SemCor (the paper profile's WSD training set) is not in the mirror, so nothing pins it
    data = zip_bytes([(f"WSD_Evaluation_Framework/Training_Corpora/SemCor/semcor.{kind}", b"<corpus/>\n")
                      for kind in ("data.xml", "gold.key.txt")])
    server.files = {"WSD_Evaluation_Framework.zip": data}
    dest = tmp_path / "mirror"
    assert run(dest, server, "--only", "wsd_semcor") == 1
    err = capsys.readouterr().err
    assert "--allow-unverified" in err and "wsd_semcor" in err and server.requests == []
    assert run(dest, server, "--only", "wsd_semcor", "--allow-unverified") == 0
    assert hashlib.sha256(data).hexdigest() in capsys.readouterr().err
    assert (dest / "wsd_training_corpora" / "SemCor" / "semcor.data.xml").read_bytes() == b"<corpus/>\n"


def test_iob2_to_iob1_leaves_iob1_unchanged():
    assert fetch.iob2_to_iob1(CONLL_IOB2.encode()).decode() == CONLL_IOB1
    assert fetch.iob2_to_iob1(CONLL_IOB1.encode()).decode() == CONLL_IOB1


# --- the entries added for everything the default jobs read ---------------------------------------

def pins_manifest(tmp_path, name, files, **fields):
    """A --manifest pinning each laid-out file of entry ``name`` to ``files[path]`` (bytes)."""
    path = tmp_path / f"{name.replace('/', '_')}.json"
    pins = {p: {"bytes": len(d), "sha256": hashlib.sha256(d).hexdigest()} for p, d in files.items()}
    path.write_text(json.dumps({name: {"pins": pins, **fields}}))
    return str(path)


def gz(text):
    return gzip.compress(text.encode(), mtime=0)


WSD_XML = ('<?xml version="1.0" encoding="UTF-8" ?>\n<corpus lang="en" source="{0}">\n<text id="d000">\n'
           '<sentence id="d000.s000">\n<wf lemma="the" pos="DET">The</wf>\n'
           '<instance id="d000.s000.t000" lemma="art" pos="NOUN">art</instance>\n</sentence>\n</text>\n</corpus>\n')


def wsd_archive(corrupt=None):
    """A WSD_Evaluation_Framework.zip with the six evaluation data sets (and SemCor, not laid out)."""
    members, laid_out = [], {}
    for name in ("senseval2", "senseval3", "semeval2007", "semeval2013", "semeval2015", "ALL"):
        gold = b"d000.s000.t000 art%1:06:00::\n"
        for suffix, data in ((".data.xml", WSD_XML.format(name).encode()), (".gold.key.txt", gold)):
            laid_out[f"wsd_raganato_eval/{name}/{name}{suffix}"] = data
            bad = data.replace(b"art", b"arm") if f"{name}{suffix}" == corrupt else data
            members.append((f"WSD_Evaluation_Framework/Evaluation_Datasets/{name}/{name}{suffix}", bad))
    members.append(("WSD_Evaluation_Framework/Training_Corpora/SemCor/semcor.data.xml", b"<corpus/>\n"))
    return zip_bytes(members), laid_out


def test_an_archive_without_checksum_is_verified_by_its_pinned_files(tmp_path, server, capsys):
    data, laid_out = wsd_archive()
    server.files = {"WSD_Evaluation_Framework.zip": data}
    dest = tmp_path / "mirror"
    assert run(dest, server, "--only", "wsd_eval", "--manifest", pins_manifest(tmp_path, "wsd_eval", laid_out)) == 0
    assert "--allow-unverified" not in capsys.readouterr().err       # the pins vouch for the zip
    for path, content in laid_out.items():
        assert (dest / path).read_bytes() == content
    assert not (dest / "wsd_training_corpora").exists()
    assert [s for _, s in eval_text.read_split(dest, "wsd_senseval2")] == [["The", "art"]]


def test_a_file_differing_from_its_pin_is_rejected_by_name_and_nothing_is_laid_out(tmp_path, server, capsys):
    data, laid_out = wsd_archive(corrupt="semeval2013.gold.key.txt")
    server.files = {"WSD_Evaluation_Framework.zip": data}
    dest = tmp_path / "mirror"
    assert run(dest, server, "--only", "wsd_eval", "--manifest", pins_manifest(tmp_path, "wsd_eval", laid_out)) == 1
    err = capsys.readouterr().err
    assert "error: wsd_raganato_eval/semeval2013/semeval2013.gold.key.txt: sha256 mismatch" in err
    assert "the download was deleted" in err and '--manifest: {"wsd_eval": {"pins"' in err
    assert "Traceback" not in err
    assert not (dest / "wsd_raganato_eval").exists()                 # not even the files that matched
    assert list((dest / "downloads").iterdir()) == []                # the pins were all that vouched for it


def test_conll2005_tests_lay_out_the_test_sets_words_under_srl_conll2005(tmp_path, server):
    laid_out = {f"srl_conll2005/test.{s}/{layer}/test.{s}.{layer}.gz": gz(f"{s}\n{layer}\n.\n\n")
                for s in ("wsj", "brown") for layer in ("words", "props", "synt.cha")}
    members = [("conll05st-release/" + path.removeprefix("srl_conll2005/"), data) for path, data in laid_out.items()]
    members.append(("conll05st-release/test.wsj/ne/test.wsj.ne.gz", gz("*\n")))   # not laid out
    server.files = {"conll05st-tests.tar.gz": tar_gz(members)}
    dest = tmp_path / "mirror"
    manifest = pins_manifest(tmp_path, "conll2005_tests", laid_out)
    assert run(dest, server, "--only", "conll2005_tests", "--manifest", manifest) == 0
    assert sorted(str(p.relative_to(dest)) for p in (dest / "srl_conll2005").rglob("*.gz")) == sorted(laid_out)
    assert [s for _, s in eval_text.read_split(dest, "conll2005_test_brown")] == [["brown", "words", "."]]


# (data set, mirror folder, file contents by name, an evaluation split that reads them)
GITHUB_SETS = [
    ("esnli", "snli/esnli_infersent_format",
     {f"{kind}.{split}": f"{kind} of {split} \n".encode()
      for kind in ("s1", "s2", "labels") for split in ("dev", "test")},
     ("snli_dev", [["s1", "of", "dev"], ["s2", "of", "dev"]])),
    ("multi30k_raw", "multi30k/raw",
     {f"{split}.{lang}.gz": gz(f"A {split} {lang} caption .\n") for split in ("train", "val", "test_2016_flickr")
      for lang in ("en", "de")}, ("multi30k_val", [["A", "val", "en", "caption", "."]])),
    ("litbank", "litbank_coref/conll",
     {posixpath.basename(path): f"#begin document ({n}); part 0\n{n}\t0\t0\tWord{n}\t_\t_\n\n#end document\n".encode()
      for n, path in enumerate(fetch_pins.LITBANK)}, None),
]


@pytest.mark.parametrize("name,folder,files,split", GITHUB_SETS, ids=[s[0] for s in GITHUB_SETS])
def test_files_at_a_pinned_commit_are_fetched_one_by_one_as_a_data_set(tmp_path, server, name, folder, files, split):
    entries = fetch.expand([name])
    assert sorted(posixpath.basename(fetch.MANIFEST[e].url) for e in entries) == sorted(files)
    assert all(fetch.MANIFEST[e].url.startswith("https://raw.githubusercontent.com/") for e in entries)
    server.files = dict(files)
    manifest = tmp_path / "manifest.json"      # what the local server serves, pinned
    manifest.write_text(json.dumps({e: {"bytes": len(files[e.split("/", 1)[1]]),
                                        "sha256": hashlib.sha256(files[e.split("/", 1)[1]]).hexdigest()}
                                    for e in entries}))
    dest = tmp_path / "mirror"
    assert run(dest, server, "--only", name, "--manifest", str(manifest)) == 0
    for file, data in files.items():
        assert (dest / folder / file).read_bytes() == data                # byte for byte
    if split:
        assert [s for _, s in eval_text.read_split(dest, split[0])][:2] == split[1]
    else:
        assert len(list(eval_text.read_split(dest, "litbank"))) == len(files)


def test_a_wrong_file_at_a_pinned_commit_is_rejected_naming_its_url(tmp_path, server, capsys):
    size, sha256 = fetch_pins.ESNLI["snli/esnli_infersent_format/s1.dev"]   # the real pin: the mirror's copy
    server.files = {"s1.dev": b"x" * size}
    dest = tmp_path / "mirror"
    assert run(dest, server, "--only", "esnli/s1.dev") == 1
    err = capsys.readouterr().err
    assert f"error: {server.url}s1.dev: sha256 mismatch: expected {sha256}" in err
    assert not (dest / "snli").exists() and not (dest / "downloads").exists()


def test_single_member_files_are_copied_byte_for_byte(tmp_path, server):
    trees = {f"sst5/trees/{split}.txt": f"(3 (2 {split}) (3 .))".encode() for split in ("train", "dev", "test")}
    members = [("trees/" + path.rsplit("/", 1)[1], data) for path, data in trees.items()]
    server.files = {"trainDevTestTrees_PTB.zip": zip_bytes(members)}
    dest = tmp_path / "mirror"
    assert run(dest, server, "--only", "sst", "--manifest", pins_manifest(tmp_path, "sst", trees)) == 0
    assert (dest / "sst5/trees/dev.txt").read_bytes() == b"(3 (2 dev) (3 .))"   # no newline added


def test_manual_items_say_what_to_put_where_and_what_is_missing(tmp_path, server, capsys, monkeypatch):
    dest = tmp_path / "mirror"
    server.files = {"abc.zip": b"abc"}
    monkeypatch.setattr(fetch, "DEFAULT", ("nltk_abc",))            # a default run, with one small entry
    assert run(dest, server, "--manifest", pin(tmp_path, nltk_abc=b"abc")) == 0
    err = capsys.readouterr().err
    words = "srl_conll2005/devel/words/devel.24.words.gz"
    assert f"- conll2005_devel_words" in err and f"missing: {words}" in err and "LDC99T42" in err
    assert "cat PTB/parsed/mrg/wsj/24/*.mrg | wsj-removetraces.pl | wsj-to-se.pl -w 1" in err
    assert "- wordnet" in err and "probes.wordnet" in err and "ptb3_wsj" not in err   # not read by default
    (dest / words).parent.mkdir(parents=True)
    (dest / words).write_bytes(b"")
    assert run(dest, server, "--only", "conll2005_devel_words") == 0
    assert f"1 of 1 file(s) present under {dest}" in capsys.readouterr().err


def test_list_prints_every_data_set_and_manual_item(capsys):
    assert fetch.main(["--list"]) == 0
    out = capsys.readouterr().out
    table = {line.split()[0]: line for line in out.splitlines() if line[:1].strip()}
    for row in fetch.rows():
        assert table[row.name].split()[1:3] == ["yes" if row.default else "no", "fetch" if row.fetched else "manual"]
        assert row.licence in out and (not row.fetched or row.source in out)
    assert table["litbank"].split()[3:7] == ["sha256", "13,018,513", "B", "litbank_coref"]
    assert " recorded " in table["glove"] and " recorded " in table["elmo_released"]
    assert " pinned files " in table["sst"] and table["conll2005_devel_words"].split()[1] == "yes"
    for name in fetch.MANUAL:
        assert f"- {name} (" in out


def test_downloads_have_distinct_file_names():
    # downloads/<file name> and --base-url identify a download by its file name
    by_file = {}
    for name, source in fetch.MANIFEST.items():
        by_file.setdefault(posixpath.basename(source.url), set()).add(source.url)
    assert all(len(urls) == 1 for urls in by_file.values())


def test_manifest_overrides_are_checked(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"sst": {"pins": {"sst5/trees/other.txt": {"bytes": 1, "sha256": "0" * 64}}}}))
    with pytest.raises(InputError, match="pins must map paths among"):
        fetch.with_overrides(fetch.MANIFEST, bad)
    bad.write_text(json.dumps({"sst": {"pins": {"sst5/trees/dev.txt": {"bytes": 1, "sha256": "XYZ"}}}}))
    with pytest.raises(InputError, match="sha256 must be 64 lowercase hex digits"):
        fetch.with_overrides(fetch.MANIFEST, bad)
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"sst": {"pins": {"sst5/trees/dev.txt": {"bytes": 1, "sha256": "a" * 64}}}}))
    pinned = fetch.with_overrides(fetch.MANIFEST, good)["sst"].pins
    assert pinned["sst5/trees/dev.txt"] == (1, "a" * 64)
    assert pinned["sst5/trees/test.txt"] == fetch_pins.SST5_TREES["sst5/trees/test.txt"]     # the others kept


# --- the manifest against the stage registry, the real mirror and docs/data.md ---------------------

ROOT = Path(__file__).resolve().parents[2]
TINY, PAPER = render("tiny"), render("paper")            # the default jobs' params, the paper's
MIRROR = (ROOT / TINY["data"]["mirror"]).resolve()       # shared/data: read here, never copied
# Files in the mirror's folders that no reader opens: provenance notes, and NLTK's package
# descriptors beside the zips.
NOT_READ = {"SOURCE.md", "README", "CHANGES", "README_upstream.txt", "brown.xml", "abc.xml"}


def covers(produced, path):
    """A fetched (or manual) path provides ``path``: the same, inside it, or a folder holding it."""
    return produced == path or produced.startswith(path + "/") or path.startswith(produced + "/")


def outputs(names):
    return [out for entry in fetch.expand(names) for out in fetch.MANIFEST[entry].outputs()]


def manual_paths(default_only):
    return [path for item in fetch.MANUAL.values() if item.param == "data.mirror"
            and (item.default or not default_only) for path in item.paths]


def mirror_files_read(reads):
    """The real mirror's files that the stages read: a read path's own file, or a read folder's."""
    files = set()
    for path in reads:
        target = MIRROR / path
        found = [target] if target.is_file() else [f for f in target.rglob("*") if f.is_file()]
        files |= {f.relative_to(MIRROR).as_posix() for f in found if f.name not in NOT_READ}
    return files


def test_every_mirror_path_the_default_jobs_read_is_fetched_by_default_or_manual():
    reads = data_doc.mirror_reads(TINY)
    assert {"conll2003/eng.train", "snli/esnli_infersent_format", "wsd_raganato_eval/senseval2",
            "lm1b_heldout_subset/1b_benchmark.dev.tokens", "multi30k/raw"} <= set(reads)
    provided = outputs(fetch.DEFAULT) + manual_paths(default_only=True)
    assert [path for path in reads if not any(covers(p, path) for p in provided)] == []
    # outside the mirror: only WordNet, which a default manual item covers by its params key
    external = data_doc.external_reads(TINY)
    assert {path: [name for name, item in fetch.MANUAL.items() if item.default and item.param == "probes.wordnet"]
            for path in external} == {TINY["probes"]["wordnet"]: ["wordnet"]}
    if not MIRROR.is_dir():
        return
    # every file the default jobs open in a folder they read, not just the folder
    missing = [f for f in sorted(mirror_files_read(reads)) if not any(covers(p, f) for p in provided)]
    assert missing == []


def test_default_is_exactly_what_the_default_jobs_read():
    reads = data_doc.mirror_reads(TINY)
    # With the real mirror, what is read is its files in the read folders; without it, anything in
    # a read folder counts (prepare_snli reads the whole snli/, which then also holds snli_1.0/).
    read = mirror_files_read(reads) if MIRROR.is_dir() else set(reads)

    def is_read(path):
        return any(covers(path, r) for r in read)

    sets = {fetch.data_set(name) for name in fetch.MANIFEST}
    assert set(fetch.DEFAULT) <= sets
    for name in sets:
        if name in fetch.DEFAULT or MIRROR.is_dir():
            assert any(is_read(p) for p in outputs([name])) == (name in fetch.DEFAULT), name
    for name, item in fetch.MANUAL.items():
        if item.param == "data.mirror":
            assert any(is_read(p) for p in item.paths) == item.default, name
        else:
            assert (resolve("${" + item.param + "}", TINY) in data_doc.external_reads(TINY)) == item.default, name


def test_every_path_the_paper_profile_reads_is_fetched_or_manual():
    reads = data_doc.mirror_reads(PAPER)
    assert {"1-billion-word-language-modeling-benchmark-r13output/training-monolingual.tokenized.shuffled",
            "wsd_training_corpora/SemCor", "ptb/treebank_3/parsed/mrg/wsj"} <= set(reads)
    provided = outputs(list(fetch.MANIFEST)) + manual_paths(default_only=False)
    assert [path for path in reads if not any(covers(p, path) for p in provided)] == []
    for path in data_doc.external_reads(PAPER):       # GloVe: fetched with --dest data
        by_param = [item for item in fetch.MANUAL.values()
                    if item.param != "data.mirror" and resolve("${" + item.param + "}", PAPER) == path]
        fetched = path.startswith("data/") and any(covers(p, path.removeprefix("data/")) for p in provided)
        assert by_param or fetched, path


def test_pins_equal_the_mirror_files():
    if not MIRROR.is_dir():
        pytest.skip(f"no data mirror at {MIRROR}")

    def digest(path):
        data = (MIRROR / path).read_bytes()
        return len(data), hashlib.sha256(data).hexdigest()

    checked, absent = 0, []
    for name, source in fetch.MANIFEST.items():
        for path, pin in source.pins.items():
            assert digest(path) == pin, path
            checked += 1
        for path, members in source.files.items():
            if members == () and source.sha256:             # a file laid out as downloaded
                if (MIRROR / path).is_file():
                    assert digest(path) == (source.bytes, source.sha256), path
                    checked += 1
                else:
                    absent.append(path)
    assert absent == ["squad_v1.1/train-v1.1.json"]      # its sha256 is the published (TFDS) one
    assert checked == sum(len(table) for table in (fetch_pins.SST5_TREES, fetch_pins.ESNLI, fetch_pins.MULTI30K_RAW,
                                                   fetch_pins.MULTI30K_TOK, fetch_pins.WSD_EVAL,
                                                   fetch_pins.CONLL2005_TESTS, fetch_pins.CONLL2005_RELEASE,
                                                   fetch_pins.LITBANK)) + 4   # + nltk brown, abc, treebank; squad dev


def test_the_checks_given_for_the_wsj_words_equal_the_mirror_copies():
    if not MIRROR.is_dir():
        pytest.skip(f"no data mirror at {MIRROR}")
    words = MIRROR / "srl_conll2005"
    for files, pin in (([words / "devel/words/devel.24.words.gz"], fetch_pins.CONLL2005_DEVEL_WORDS),
                       (sorted((words / "train/words").glob("train.*.words.gz")), fetch_pins.CONLL2005_TRAIN_WORDS)):
        text = b"".join(gzip.decompress(f.read_bytes()) for f in files)
        assert (text.count(b"\n"), hashlib.sha256(text).hexdigest()) == pin
    assert f"{fetch_pins.CONLL2005_DEVEL_WORDS[0]:,} lines and sha256 {fetch_pins.CONLL2005_DEVEL_WORDS[1]}" \
        in fetch.MANUAL["conll2005_devel_words"].how


def test_docs_data_md_is_the_render_of_the_manifest_and_the_registry():
    assert (ROOT / "docs" / "data.md").read_text(encoding="utf-8") == data_doc.render_doc(), \
        "docs/data.md is stale: run python -m workflow.data_doc"


def test_docs_data_md_has_a_row_per_mirror_folder():
    text = (ROOT / "docs" / "data.md").read_text(encoding="utf-8")
    folders = {row.folders[0] for row in fetch.rows() if row.folders} | set(fetch.NOT_FETCHED)
    if MIRROR.is_dir():
        folders |= {p.name for p in MIRROR.iterdir() if p.is_dir()}
    assert [f for f in sorted(folders) if f"| `{f}/`" not in text and f != "probes.wordnet"] == []


def test_a_download_without_a_published_checksum_is_recorded_at_its_first_fetch_then_checked(tmp_path, server,
                                                                                               capsys):
    name = "elmo_released/2x1024_128_2048cnn_1xhighway_options.json"
    filename = "elmo_2x1024_128_2048cnn_1xhighway_options.json"
    server.files = {filename: b'{"lstm": {"dim": 4096}}\n'}
    dest = tmp_path / "mirror"
    assert run(dest, server, "--only", name) == 0                     # no --allow-unverified needed
    assert "recorded at this first fetch" in capsys.readouterr().err
    record = json.loads((dest / "downloads" / fetch.RECORDS).read_text())[filename]
    assert record["bytes"] == 24 and record["sha256"] == hashlib.sha256(b'{"lstm": {"dim": 4096}}\n').hexdigest()
    assert (dest / "elmo_released/2x1024_128_2048cnn_1xhighway/options.json").read_bytes() == server.files[filename]
    # a later fetch of other bytes under the same name is refused, and the download deleted
    (dest / "downloads" / filename).unlink()
    server.files = {filename: b'{"lstm": {"dim": 512}}\n'}
    assert run(dest, server, "--only", name) == 1
    err = capsys.readouterr().err
    assert "differs from its first fetch" in err and "the download was deleted" in err
    assert not (dest / "downloads" / filename).exists()
    # the recorded bytes pass again
    server.files = {filename: b'{"lstm": {"dim": 4096}}\n'}
    assert run(dest, server, "--only", name) == 0
