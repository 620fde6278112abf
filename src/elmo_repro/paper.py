"""Published numbers from Peters et al. (NAACL 2018), quoted for comparison in the tables.

Table 1 (test set, single models): previous state of the art, the authors' baseline and the
baseline + ELMo; §3.4 / Table 6 for the biLM's perplexity.
"""

TABLE1 = {
    # task: (metric, previous SOTA system, previous SOTA, baseline, +ELMo, +ELMo std or None,
    #        increase as printed in the paper: absolute, relative error reduction)
    # Numbers are strings so they keep the paper's precision.
    "SQuAD": ("F1", "Liu et al. (2017)", "84.4", "81.1", "85.8", None, "4.7", "24.9%"),
    "SNLI": ("accuracy", "Chen et al. (2017)", "88.6", "88.0", "88.7", "0.17", "0.7", "5.8%"),
    "SRL": ("F1", "He et al. (2017)", "81.7", "81.4", "84.6", None, "3.2", "17.2%"),
    "Coref": ("average F1", "Lee et al. (2017)", "67.2", "67.2", "70.4", None, "3.2", "9.8%"),
    "NER": ("span F1", "Peters et al. (2017)", "91.93", "90.15", "92.22", "0.10", "2.06", "21%"),
    "SST-5": ("accuracy", "McCann et al. (2017)", "53.7", "51.4", "54.7", "0.5", "3.3", "6.8%"),
}
PREVIOUS_SOTA_STD = {"NER": "0.19"}

# Average of forward and backward perplexity of the released biLM on the 1B Word Benchmark test
# set (heldout shard 00000), after one epoch of pretraining plus fine-tuning, §3.4.
PAPER_PERPLEXITY = 39.7
