"""Coreference on LitBank (paper §4, Table 1's coreference row; issue 26): Lee et al.'s (2017)
end-to-end span-ranking model (:mod:`.model`), scored with MUC, B³ and CEAFφ4
(:mod:`elmo_repro.metrics.coref`) over documents read by :mod:`elmo_repro.data.coref_conll`.

Not yet a task of the run matrix: its declaration (``experiments/tasks.py``), prepare stage (the
documented split by document) and task contract (``TASK``) join the main job together with its
runs, in one re-run of the pipeline.
"""
