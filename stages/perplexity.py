"""Stage perplexity: held-out perplexity of the biLM (full softmax) beside a unigram baseline.

Reads models/bilm and data/lm/heldout.txt; writes results/metrics/perplexity.json.
"""

from pathlib import Path

from elmo_repro.bilm.evaluate import bilm_perplexity, oov_rate, unigram_perplexity
from elmo_repro.bilm.checkpoint import load_model
from elmo_repro.data.text import read_sentences
from elmo_repro.io import write_json
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["perplexity"]


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    with stage_run("perplexity", params, SECTIONS) as run:
        model, vocab = load_model(Path("models/bilm"))
        heldout = read_sentences("data/lm/heldout.txt")
        result = bilm_perplexity(model, vocab, heldout, params["perplexity"]["batch_size"])
        result.update({
            "unigram_perplexity": unigram_perplexity(vocab, heldout),
            "oov_rate": oov_rate(vocab, heldout),
            "vocab_size": float(len(vocab)),
            "heldout_sentences": float(len(heldout)),
            "heldout_tokens": float(sum(len(s) for s in heldout)),
        })
        run.log_metrics(result)
        write_json("results/metrics/perplexity.json", result)     # no MLflow id: the same bytes on a re-run


if __name__ == "__main__":
    main()
