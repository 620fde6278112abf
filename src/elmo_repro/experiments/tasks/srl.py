"""Task ``srl``: SRL, He et al.'s deep highway BiLSTM (its code: ``elmo_repro/tasks/srl/``).

The model of its params section ``tasks.srl`` and its declaration. Torch-free: the params schema
and the stage registry read it without the task's code.
"""

from __future__ import annotations


from pydantic import Field

from ..declaration import Prepare, TaskDeclaration, TrainerConfig, VectorsPath
from ..strict import Strict


class SrlDataConfig(Strict):
    """What stage ``prepare_srl`` reads (``elmo_repro.tasks.srl.reader``)."""

    max_train_sentences: int = Field(ge=0)               # 0 = all 39,832; else the nested cap spread over
                                                         # WSJ 02-21 (data.conll2005.cap_sentences)


class SrlModelConfig(Strict):
    """He et al.'s tagger (tasks/srl/model.py)."""

    predicate_dim: int = Field(ge=1)                     # the predicate indicator's embedding (He et al.: 100)
    lstm_hidden: int = Field(ge=1)                       # per layer (He et al.: 300)
    lstm_layers: int = Field(ge=1)                       # alternating directions (He et al.: 8)
    recurrent_dropout: float = Field(ge=0, lt=1)         # variational, per sequence and layer (0.1)
    embedding_dropout: float = Field(ge=0, lt=1)         # on [word ; predicate] (allennlp-models: 0.1)


class SrlConfig(Strict):
    vectors: VectorsPath
    data: SrlDataConfig
    trainer: TrainerConfig
    model: SrlModelConfig


DECLARATION = TaskDeclaration(
    name="srl", title="SRL", metric="f1", placement="input",
    data_dir="data/srl", features_dir="data/features/srl",
    prepare=Prepare("prepare_srl", tuple(f"srl_conll2005/{part}/{kind}" for part in ("train", "devel", "test.wsj",
                                                                                      "test.brown")
                                         for kind in ("words", "props")), ("data", "tasks.srl.data"),
                    ("results/metrics/srl_data.json",)),
    config=SrlConfig,
    caption=('SRL span F1 as the official CoNLL-2005 scorer (srl-eval.pl) on CoNLL-2005 WSJ section 23, selected'
             " on WSJ 24, trained on WSJ 02-21 (the profile's `tasks.srl.data` caps the training sentences), the"
             " Brown test set beside it (the paper's SRL numbers are on CoNLL-2012 OntoNotes, a licensed corpus "
             'not in the mirror: the same task on another corpus, so set the increase, not the level, beside the'
             " paper's)"),
    floor_caption="SRL: each token's most frequent training tag at its position relative to the predicate",
    secondary=(("brown_f1", "Brown test F1 (out of domain)"),),
    order=5)
