"""SQuAD v1.1 (paper §4, Table 1): extractive question answering with Clark and Gardner's
BiDAF + self-attention reader, exact match and F1 on the report part (issue 24, under way).

Built so far: span decoding (:mod:`.decode`) and the sliding-window floor (:mod:`.sliding_window`);
the data reader is :mod:`elmo_repro.data.squad`, the metric :mod:`elmo_repro.metrics.squad`, the
attention layers :mod:`elmo_repro.nn.attention`. The task declaration, model and runs come next.
"""
