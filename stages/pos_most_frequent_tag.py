"""Stage pos_most_frequent_tag: Table 6's baseline row, each word's most frequent training tag.

Each dev and test word of the treebank (``probes.pos``) takes the tag it has most often in the
train documents, an unseen word the most frequent tag overall
(:func:`elmo_repro.probes.pos.most_frequent_tags`). Writes
``results/probes/pos/most_frequent_tag/most_frequent_tag.json`` and the test predictions as tag ids
to ``results/probes/predictions/pos/most_frequent_tag/most_frequent_tag.json``.
"""

import torch

from elmo_repro.io import write_json
from elmo_repro.params import load_params
from elmo_repro.probes.corpora import pos_split, pos_trees, tag_ids
from elmo_repro.probes.pos import accuracy, most_frequent_tags
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["data", "probes.pos"]
OUT = "results/probes/pos/most_frequent_tag/most_frequent_tag.json"
PREDICTIONS = "results/probes/predictions/pos/most_frequent_tag/most_frequent_tag.json"


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    with stage_run("pos_most_frequent_tag", params, SECTIONS) as run:
        trees = pos_trees(params)
        split = pos_split(params, trees)
        tags = sorted({t for i in split["train"] for t in trees[i].tags})
        gold = tag_ids(trees, split, tags)
        words = {name: [w for i in rows for w in trees[i].words] for name, rows in split.items()}
        best, overall = most_frequent_tags(words["train"], [t for i in split["train"] for t in trees[i].tags])
        predicted = {name: torch.tensor([tags.index(best.get(w, overall)) for w in words[name]])
                     for name in ("dev", "test")}
        metrics = {f"{name}_accuracy": accuracy(predicted[name], gold[name]) for name in ("dev", "test")}
        metrics["unseen_test_words"] = sum(w not in best for w in words["test"])
        write_json(OUT, {"row": "most frequent tag", "source": "most_frequent_tag", "layer": None, "seed": None,
                         "tags": tags, "tokens": {n: len(g) for n, g in gold.items()}, "metrics": metrics})
        write_json(PREDICTIONS, predicted["test"].tolist())
        run.log_metrics(metrics)


if __name__ == "__main__":
    main()
