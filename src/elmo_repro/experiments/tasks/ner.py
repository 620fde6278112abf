"""Task ``ner``: CoNLL-2003 NER, the BiLSTM-CRF tagger (its code: ``elmo_repro/tasks/ner/``).

The model of its params section ``tasks.ner`` and its declaration. Torch-free: the params schema
and the stage registry read it without the task's code.
"""

from __future__ import annotations


from pydantic import Field

from ..declaration import Prepare, TaskDeclaration, TrainerConfig, VectorsPath
from ..strict import Strict


class NerModelConfig(Strict):
    char_embedding_dim: int = Field(ge=1)
    char_filters: int = Field(ge=1)
    char_kernel: int = Field(ge=1)                       # characters per convolution window
    lstm_hidden: int = Field(ge=1)                       # per direction
    lstm_layers: int = Field(ge=1)
    dropout: float = Field(ge=0, lt=1)
    crf_start_end: bool                                  # learned first/last-tag scores (allennlp's ELMo
                                                         # NER config: include_start_end_transitions false)


class NerConfig(Strict):
    vectors: VectorsPath
    trainer: TrainerConfig
    model: NerModelConfig


DECLARATION = TaskDeclaration(
    name="ner", title="NER", metric="f1", placement="input",
    data_dir="data/conll2003", features_dir="data/features/conll2003",
    prepare=Prepare("prepare_conll2003", ("conll2003/eng.train", "conll2003/eng.testa", "conll2003/eng.testb")),
    config=NerConfig,
    caption=('CoNLL-2003 NER entity span F1 on eng.testb, selected on eng.testa'),
    floor_caption="NER: each token's most frequent training tag",
    order=1)
