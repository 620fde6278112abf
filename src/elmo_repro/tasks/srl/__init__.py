"""CoNLL-2005 semantic role labelling (paper §4, Table 1's SRL row; issue 25): He et al.'s (2017)
deep highway BiLSTM tagger (:mod:`.model`) and the position floor (:mod:`.floor`), scored with the
official scorer's semantics (:mod:`elmo_repro.metrics.srl_eval`) over the data of
:mod:`elmo_repro.data.conll2005`.

Not yet a task of the run matrix: its declaration (``experiments/tasks.py``), prepare stage and
task contract (``TASK``) join the main job together with its runs, in one re-run of the pipeline.
"""
