"""Stage prepare_multi30k: Multi30k English -> German pairs for the CoVe translation model.

Reads ``multi30k/raw/{train,val,test_2016_flickr}.{en,de}.gz`` (:mod:`elmo_repro.data.multi30k`:
cased, tokenized with the 1B Word-style tokenizer), drops every training pair whose English
sentence is an SNLI dev or test sentence (Flickr30k captions are SNLI's premises; any length) or
an evaluation sentence of at least ``contamination.min_words`` words (every split of
``contamination.splits`` and the LM perplexity sample: what stage check_contamination_multi30k then
verifies), keeps the first ``cove.data.max_train_pairs`` of the rest (0 = all), and writes
``data/multi30k/{train,val,test}.jsonl`` (``{"line", "source", "target", "reference"}``) and the
counts to ``results/metrics/multi30k_data.json``.
"""

from pathlib import Path

from elmo_repro.console import log
from elmo_repro.data.eval_text import SPLITS as EVAL_SPLITS
from elmo_repro.data.eval_text import build_index
from elmo_repro.data.examples import write_examples
from elmo_repro.data.multi30k import SIZES, drop_held_out_pairs, read_pairs
from elmo_repro.io import iter_lines, write_json
from elmo_repro.params import load_params, mirror_path
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["data", "contamination", "cove.data"]
OUT_DIR = Path("data/multi30k")
STATS = Path("results/metrics/multi30k_data.json")
HELDOUT = Path("data/lm/heldout.txt")


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    cap = params["cove"]["data"]["max_train_pairs"]
    with stage_run("prepare_multi30k", params, SECTIONS) as run:
        raw = mirror_path(params, "multi30k", "raw")
        pairs = {split: read_pairs(raw, split) for split in SIZES}
        mirror = Path(params["data"]["mirror"])
        snli = [tokens for split in ("snli_dev", "snli_test") for _, tokens in EVAL_SPLITS[split](mirror)]
        pairs["train"], dropped = drop_held_out_pairs(pairs["train"], snli)
        index = build_index(mirror, params["contamination"], extra={
            "lm_heldout_sample": [(f"{HELDOUT}:{n}", line.split()) for n, line in iter_lines(HELDOUT) if line.split()]})
        before = len(pairs["train"])
        pairs["train"] = [p for p in pairs["train"] if not any(index.is_counted(m) for m in index.matches(p.source))]
        stats = {"dropped_snli_pairs": dropped, "dropped_eval_pairs": before - len(pairs["train"])}
        if cap:
            pairs["train"] = pairs["train"][:cap]
        for split, items in pairs.items():
            write_examples(OUT_DIR / f"{split}.jsonl", ({"line": p.line, "source": p.source, "target": p.target,
                                                         "reference": p.reference} for p in items))
            stats[f"{split}_pairs"] = len(items)
            stats[f"{split}_source_tokens"] = sum(len(p.source) for p in items)
            stats[f"{split}_target_tokens"] = sum(len(p.target) for p in items)
        write_json(STATS, stats)
        run.log_metrics(stats)
        log(f"[prepare_multi30k] train {stats['train_pairs']} pairs ({dropped} dropped: SNLI dev/test "
            f"sentences; {stats['dropped_eval_pairs']}: other evaluation sentences), val {stats['val_pairs']}, "
            f"test {stats['test_pairs']}")


if __name__ == "__main__":
    main()
