"""Stage check_contamination: no evaluation sentence in any training text.

Compares a training text the pipeline builds with every evaluation split in the data mirror
(``contamination.splits``) and the LM held-out perplexity sample, sentence by sentence after
normalisation (``elmo_repro.data.contamination``), then fails, naming the first overlaps, when any
evaluation sentence of at least ``contamination.min_words`` words occurs in it. One stage per
training text (``--text``), each with its own report, so that a training stage depends only on its
own text's check:

* ``lm`` (stage check_contamination): the LM text that the biLM and the word vectors train on;
  writes ``results/metrics/contamination.json`` (counts per split: the DVC metric) and
  ``results/contamination/overlaps.tsv`` (every overlap, by location only: no licensed text).
* ``multi30k`` (stage check_contamination_multi30k): the English side of CoVe's translation pairs
  (Flickr30k captions, like SNLI's premises); writes ``results/metrics/contamination_multi30k.json``
  and ``results/contamination_multi30k/overlaps.tsv``.
"""

from pathlib import Path
from typing import Iterable, Iterator, TypeVar

from elmo_repro.console import log
from elmo_repro.data.contamination import check, find_overlaps, summarize
from elmo_repro.data.examples import read_examples
from elmo_repro.data.eval_text import build_index
from elmo_repro.io import InputError, atomic_open, iter_lines, write_json
from elmo_repro.params import load_params, mirror_path
from elmo_repro.tracking import stage_run
from stages import stage_args, stage_parser

T = TypeVar("T")
SECTIONS = ["data", "contamination"]
HELDOUT = Path("data/lm/heldout.txt")   # the LM perplexity sample is an evaluation split too
# --text -> (stage name, {training text name: file}, metrics, overlaps)
TEXTS = {
    "lm": ("check_contamination", {"lm_train": Path("data/lm/train.txt")},
           Path("results/metrics/contamination.json"), Path("results/contamination/overlaps.tsv")),
    "multi30k": ("check_contamination_multi30k", {"multi30k_train": Path("data/multi30k/train.jsonl")},
                 Path("results/metrics/contamination_multi30k.json"),
                 Path("results/contamination_multi30k/overlaps.tsv")),
}


def numbered(path: Path) -> Iterator[tuple[str, list[str]]]:
    """``(file:line, tokens)`` of a one-sentence-per-line text (blank lines skipped), or of the
    ``source`` sides of a ``.jsonl`` file of translation pairs, as they are read (the paper
    profile's LM text has ~30M sentences).

    Raises:
        InputError: a missing, non-UTF-8 or empty text, or a malformed pair (naming the file and line).
    """
    if path.suffix == ".jsonl":             # translation pairs: the English side ("source" tokens)
        pairs = read_examples(path, ("source",))
        sentences = ((f"{path}:{number}", pair["source"]) for number, pair in enumerate(pairs, start=1))
    else:
        sentences = ((f"{path}:{number}", line.split()) for number, line in iter_lines(path) if line.split())
    empty = True
    for sentence in sentences:
        empty = False
        yield sentence
    if empty:
        raise InputError(path, "no sentences (the file is empty or has only blank lines)")


def counted(items: Iterable[T], sizes: dict[str, int], name: str) -> Iterator[T]:
    """``items`` as they come, counted into ``sizes[name]``."""
    sizes[name] = 0
    for item in items:
        sizes[name] += 1
        yield item


def main(argv: list[str] | None = None) -> None:
    parser = stage_parser(__doc__)
    parser.add_argument("--text", required=True, choices=sorted(TEXTS), help="the training text to check")
    known = stage_args(parser, argv)
    params = load_params()
    stage, texts, metrics, overlaps_path = TEXTS[known.text]
    with stage_run(stage, params, SECTIONS) as run:
        index = build_index(mirror_path(params), params["contamination"],
                            extra={"lm_heldout_sample": list(numbered(HELDOUT))})
        overlaps: list = []
        sizes: dict[str, int] = {}
        for name, path in texts.items():
            overlaps += find_overlaps(name, counted(numbered(path), sizes, name), index)
        report = summarize(overlaps, index, sizes)
        with atomic_open(overlaps_path) as handle:
            handle.write("training_text\tlocation\teval_split\teval_location\teval_words\tcounted\n")
            for o in overlaps:
                handle.write(f"{o.text}\t{o.location}\t{o.split}\t{o.eval_location}\t{o.words}\t{int(o.counted)}\n")
        write_json(metrics, report)
        run.log_metrics({"counted_overlaps": report["counted_overlaps"],
                         "below_threshold_overlaps": report["below_threshold_overlaps"]})
        run.log_artifact(metrics)
        log(f"[{stage}] {report['counted_overlaps']} overlaps of >= {index.min_words} words, "
            f"{report['below_threshold_overlaps']} shorter ones (reported in {overlaps_path})")
        check(overlaps, index.min_words)


if __name__ == "__main__":
    main()
