"""Stage cove_vectors: the fixed input word vectors of the CoVe translation model (gensim word2vec).

McCann et al.'s MT-LSTM reads 300-d GloVe vectors that it never changes. GloVe is not in the data
mirror, so this stage trains 300-d word2vec vectors (``cove.word_vectors``) on the same
decontaminated LM text as the task vectors (``data/lm/train.txt``); the 50-d task vectors are too
coarse for translation (measured: val BLEU 10.8 after 3 epochs against 16.6 with these, the same
model otherwise). Writes ``data/cove_vectors/vectors.txt`` (word2vec text format), one worker
thread, so the file is a function of the text and the params.
"""

from pathlib import Path

from elmo_repro.console import log
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from elmo_repro.vectors import train_word2vec
from stages import stage_args

SECTIONS = ["cove.word_vectors"]
TEXT = Path("data/lm/train.txt")
OUT = Path("data/cove_vectors/vectors.txt")


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    with stage_run("cove_vectors", params, SECTIONS) as run:
        config = params["cove"]["word_vectors"]
        info = train_word2vec(TEXT, OUT, dim=int(config["dim"]), window=int(config["window"]),
                              min_count=int(config["min_count"]), epochs=int(config["epochs"]),
                              sg=int(config["sg"]), seed=int(config["seed"]), workers=1)
        run.log_metrics({"vocab_size": info["vocab_size"], "dim": info["dim"],
                         "corpus_tokens": info["corpus_tokens"], "train_seconds": info["seconds"]})
        log(f"[cove_vectors] {info['vocab_size']} words x {info['dim']} dims from "
            f"{info['corpus_tokens']} tokens in {info['seconds']:.1f} s")


if __name__ == "__main__":
    main()
