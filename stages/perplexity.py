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
from elmo_repro.device import add_device_options, device_args
from stages import stage_args, stage_parser

SECTIONS = ["perplexity"]


def main(argv: list[str] | None = None) -> None:
    parser = add_device_options(stage_parser(__doc__))
    device, precision = device_args(stage_args(parser, argv), parser)
    params = load_params()
    with stage_run("perplexity", params, SECTIONS) as run:
        model, vocab = load_model(Path("models/bilm"))
        heldout = read_sentences("data/lm/heldout.txt")
        result = bilm_perplexity(model.to(device), vocab, heldout, params["perplexity"]["batch_size"], precision)
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
