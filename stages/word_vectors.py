"""Stage word_vectors: train the NER baseline's static word vectors (gensim word2vec).

Reads ``data/lm/train.txt`` (the LM training text, one tokenized sentence per line); writes
``data/vectors/vectors.txt`` in word2vec text format (header ``<count> <dim>``, then
``word v_1 ... v_dim`` per line). One worker thread, so the file is a function of the text and the
``word_vectors`` params (see ``elmo_repro.vectors.train_word2vec``).
"""

from pathlib import Path

from elmo_repro.console import log
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from elmo_repro.vectors import train_word2vec
from stages import stage_args

SECTIONS = ["word_vectors"]
TEXT = Path("data/lm/train.txt")
OUT = Path("data/vectors/vectors.txt")


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    with stage_run("word_vectors", params, SECTIONS) as run:
        config = params["word_vectors"]
        info = train_word2vec(TEXT, OUT, dim=int(config["dim"]), window=int(config["window"]),
                              min_count=int(config["min_count"]), epochs=int(config["epochs"]),
                              sg=int(config["sg"]), seed=int(config["seed"]), workers=1)
        run.log_metrics({"vocab_size": info["vocab_size"], "dim": info["dim"],
                         "corpus_tokens": info["corpus_tokens"], "train_seconds": info["seconds"]})
        log(f"[word_vectors] {info['vocab_size']} words x {info['dim']} dims from "
            f"{info['corpus_tokens']} tokens in {info['seconds']:.1f} s")


if __name__ == "__main__":
    main()
