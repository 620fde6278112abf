"""Stage check_contamination: no evaluation sentence in any training text.

Compares every training text the pipeline builds (``TRAINING_TEXTS``: the LM text that the biLM
and the word vectors train on) with every evaluation split in the data mirror
(``contamination.splits``) and the LM held-out perplexity sample, sentence by sentence after
normalisation (``elmo_repro.data.contamination``). Writes ``results/metrics/contamination.json``
(counts per training text and split: the DVC metric) and ``results/contamination/overlaps.tsv``
(every overlap, by location only: no text of licensed data), then fails, naming the first
overlaps, when any evaluation sentence of at least ``contamination.min_words`` words occurs in a
training text. The training stages depend on the report, so they never run on a text that failed.
"""

from pathlib import Path

from elmo_repro.console import log
from elmo_repro.data.contamination import check, find_overlaps, summarize
from elmo_repro.data.eval_text import build_index
from elmo_repro.io import InputError, atomic_open, iter_lines, write_json
from elmo_repro.params import load_params, mirror_path
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["data", "contamination"]
# Training text name -> file (one tokenized sentence per line). Later training texts (task text for
# fine-tuning, translation text) are added here and to the stage's deps in the registry.
TRAINING_TEXTS = {"lm_train": Path("data/lm/train.txt")}
HELDOUT = Path("data/lm/heldout.txt")   # the LM perplexity sample is an evaluation split too
METRICS = Path("results/metrics/contamination.json")
OVERLAPS = Path("results/contamination/overlaps.tsv")


def numbered(path: Path) -> list[tuple[str, list[str]]]:
    """``(file:line, tokens)`` of a one-sentence-per-line text (blank lines skipped).

    Raises:
        InputError: a missing, non-UTF-8 or empty text (naming the file and line).
    """
    sentences = [(f"{path}:{number}", line.split()) for number, line in iter_lines(path) if line.split()]
    if not sentences:
        raise InputError(path, "no sentences (the file is empty or has only blank lines)")
    return sentences


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    with stage_run("check_contamination", params, SECTIONS) as run:
        index = build_index(mirror_path(params), params["contamination"],
                            extra={"lm_heldout_sample": numbered(HELDOUT)})
        overlaps, sizes = [], {}
        for name, path in TRAINING_TEXTS.items():
            sentences = numbered(path)
            overlaps += find_overlaps(name, sentences, index)
            sizes[name] = len(sentences)
        report = summarize(overlaps, index, sizes)
        with atomic_open(OVERLAPS) as handle:
            handle.write("training_text\tlocation\teval_split\teval_location\teval_words\tcounted\n")
            for o in overlaps:
                handle.write(f"{o.text}\t{o.location}\t{o.split}\t{o.eval_location}\t{o.words}\t{int(o.counted)}\n")
        write_json(METRICS, report)
        run.log_metrics({"counted_overlaps": report["counted_overlaps"],
                         "below_threshold_overlaps": report["below_threshold_overlaps"]})
        run.log_artifact(METRICS)
        log(f"[check_contamination] {report['counted_overlaps']} overlaps of >= {index.min_words} words, "
            f"{report['below_threshold_overlaps']} shorter ones (reported in {OVERLAPS})")
        check(overlaps, index.min_words)


if __name__ == "__main__":
    main()
