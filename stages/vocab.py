"""Stage vocab: count the training tokens and write bilm-tf's vocabulary file.

Reads data/lm/train.txt; writes data/vocab/vocab.txt (``<S>``, ``</S>``, ``<UNK>``, then tokens by
descending count) and data/vocab/counts.tsv (the training counts, same order).
"""

from elmo_repro.data.text import iter_sentences
from elmo_repro.data.vocabulary import Vocabulary, count_tokens
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["vocab"]


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    cfg = params["vocab"]
    with stage_run("vocab", params, SECTIONS) as run:
        counts, n_sentences = count_tokens(iter_sentences("data/lm/train.txt"))
        vocab = Vocabulary.build(counts, n_sentences, cfg["min_count"], cfg["max_size"])
        vocab.save("data/vocab/vocab.txt", "data/vocab/counts.tsv")
        n_tokens = sum(counts.values())
        run.log_metrics({"vocab_size": len(vocab), "training_types": len(counts),
                         "training_tokens": n_tokens, "training_sentences": n_sentences,
                         "training_oov_rate": vocab.counts[vocab.unk] / n_tokens})


if __name__ == "__main__":
    main()
