"""Stage neighbours: Table 4, the nearest neighbours of polysemous words (paper §5.3),
static and in context.

For each query of ``probes.neighbours.queries``: its ``k`` nearest words by the static word
vectors (``probes.neighbours.vectors``: the pipeline's word2vec vectors where the paper has GloVe),
and, among its first ``max_sentences`` sentences in ``probes.neighbours.corpus`` (the biLM's own
decontaminated training text: no evaluation sentence in it), for the first ``examples`` of them
the two nearest other sentences by the pretrained biLM's layer ``probes.neighbours.layer`` vector of
the query word (:mod:`elmo_repro.probes.neighbours`). Writes ``results/probes/neighbours.json``.
"""

import numpy as np

from elmo_repro.elmo.embedder import load_bilm
from elmo_repro.elmo.features import embed_sentences
from elmo_repro.io import InputError, iter_lines, write_json
from elmo_repro.params import load_params
from elmo_repro.probes.neighbours import contextual_neighbours, occurrences, static_neighbours
from elmo_repro.tracking import stage_run
from elmo_repro.vectors import load_text_vectors
from stages import stage_args

SECTIONS = ["probes.sources.bilm.model", "probes.neighbours"]
OUT = "results/probes/neighbours.json"
SHOWN = 2                        # nearest other sentences per example sentence, as the paper


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    cfg = params["probes"]["neighbours"]
    with stage_run("neighbours", params, SECTIONS) as run:
        words, matrix = load_text_vectors(cfg["vectors"])
        model = load_bilm(params["probes"]["sources"]["bilm"]["model"])
        corpus = [(number, line.split()) for number, line in iter_lines(cfg["corpus"]) if line.split()]
        rows = []
        missing = [q for q in cfg["queries"] if q not in set(words)]
        if missing:
            raise InputError(cfg["vectors"], f"probes.neighbours.queries: no static vector for {missing}")
        for query in cfg["queries"]:
            holding = [(n, tokens) for n, tokens in corpus if query in tokens][:cfg["max_sentences"]]
            if len(holding) < 2:
                raise InputError(cfg["corpus"], f"probes.neighbours: {query!r} is in {len(holding)} sentence(s); "
                                 "at least 2 are needed")
            sentences = [tokens for _, tokens in holding]
            found = occurrences(sentences, query)
            layers = dict(embed_sentences(model, sentences))
            vectors = np.stack([layers[o.sentence][cfg["layer"]][o.token] for o in found])
            sentence_of = [o.sentence for o in found]
            firsts = [sentence_of.index(s) for s in dict.fromkeys(sentence_of)][:cfg["examples"]]
            examples = []
            for q in firsts:
                nearest = contextual_neighbours(vectors, q, SHOWN, sentence_of)
                examples.append({"line": holding[sentence_of[q]][0], "sentence": " ".join(sentences[sentence_of[q]]),
                                 "nearest": [{"line": holding[sentence_of[i]][0],
                                              "sentence": " ".join(sentences[sentence_of[i]]),
                                              "cosine": similarity} for i, similarity in nearest]})
            rows.append({"query": query, "sentences": len(holding), "occurrences": len(found),
                         "static": [{"word": w, "cosine": c}
                                    for w, c in static_neighbours(words, matrix, query, cfg["k"])],
                         "contextual": examples})
            run.log_metrics({f"{query}_occurrences": len(found)})
        write_json(OUT, {"corpus": cfg["corpus"], "layer": cfg["layer"], "static_vectors": cfg["vectors"],
                         "rows": rows})


if __name__ == "__main__":
    main()
