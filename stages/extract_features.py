"""Stage features_conll2003: ELMo features (all biLM layers) for every CoNLL-2003 sentence.

Reads the biLM at ``bilm_source.path`` (``models/bilm``, trained by this pipeline, or a directory
with the released ELMo ``options.json`` + ``weights.hdf5``) and data/conll2003/{train,dev,test}.jsonl;
writes
data/features/conll2003/{train,dev,test}.hdf5 (allennlp ``elmo --all`` layout).
"""

import time
from pathlib import Path

from elmo_repro.elmo.embedder import load_bilm
from elmo_repro.elmo.features import write_features
from elmo_repro.data.conll import read_jsonl
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["features", "bilm_source"]
SPLITS = ("train", "dev", "test")


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    cfg = params["features"]
    with stage_run("features_conll2003", params, SECTIONS) as run:
        model = load_bilm(params["bilm_source"]["path"])
        for split in SPLITS:
            source = Path(f"data/conll2003/{split}.jsonl")
            sentences = [sentence["tokens"] for sentence in read_jsonl(source)]
            start = time.monotonic()
            write_features(f"data/features/conll2003/{split}.hdf5", model, sentences,
                           cfg["batch_size"], cfg["dtype"])
            seconds = time.monotonic() - start
            tokens = sum(len(s) for s in sentences)
            run.log_metrics({f"{split}_sentences": len(sentences), f"{split}_tokens": tokens,
                             f"{split}_tokens_per_second": tokens / seconds})


if __name__ == "__main__":
    main()
