"""Each task model built through its task's own factory at the paper profile's sizes has the
trainable parameter count derived by hand from the reference implementation's configuration
(written beside each count). Vocabulary-sized parts are counted with this test's small
vocabularies, as the reference's would be with the same ones. ELMo: the paper biLM's layers,
L + 1 = 3 of width D = 1024; the biLM itself is not part of a task model (its layers are cached).

The biLM's count (93.6M without the softmax) is tests/unit/test_paper_profile.py's.
"""

from __future__ import annotations

import numpy as np

from elmo_repro.experiments.specs import ElmoSpec, resolve_elmo
from elmo_repro.tasks.base import get_task
from elmo_repro.tasks.ner.task import NerVocab, bioul_labels
from workflow.profile import render

ELMO_SHAPE = (3, 1024)                  # (L + 1, D) of the paper's biLM


def trainable(model) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def lstm(inputs: int, hidden: int) -> int:
    """One direction of one layer, as torch and TF count it: 4 gates x (W_ih, W_hh) and two biases."""
    return 4 * hidden * (inputs + hidden) + 8 * hidden


def paper_elmo(task: str) -> ElmoSpec:
    spec = render("paper")["elmo_specs"]["elmo"]
    return resolve_elmo(ElmoSpec.model_validate({k: v for k, v in spec.items()}), task)


def test_ner_is_allennlps_elmo_ner_model():
    """allennlp-models training_config/tagging/ner_elmo.jsonnet (Peters et al. 2018's NER model with
    GloVe 50d for Senna): word embedding 50 (trainable); character_encoding: embedding 16, cnn of 128
    filters of width 3; ELMo scalar mix (3 weights + gamma, no layer norm); encoder lstm
    bidirectional, input 1202 = 50 + 128 + 1024, hidden 200, 2 layers; tag projection 400 -> K;
    CRF transitions K x K (include_start_end_transitions false)."""
    cfg = render("paper")["tasks"]["ner"]["model"]
    sentences = [{"tokens": ["EU", "rejects", "German", "call"], "ner": ["I-ORG", "O", "I-MISC", "O"]},
                 {"tokens": ["Peter", "Blackburn"], "ner": ["I-PER", "I-PER"]}]
    labels = bioul_labels(sentences)                                  # O + B/I/L/U of MISC, ORG, PER
    words, chars = 1000, 60                                           # rows of the word and char tables
    char_vocab = {str(i): i + 2 for i in range(chars - 2)}                  # + PAD and UNK
    vocab = NerVocab({}, np.zeros((words, 50), dtype=np.float32), char_vocab, labels)
    model = get_task("ner").build_model(cfg, vocab, paper_elmo("ner"), ELMO_SHAPE)
    k = len(labels)
    reference = (words * 50 + chars * 16 + (16 * 3 * 128 + 128) + (3 + 1)
                 + 2 * lstm(1202, 200) + 2 * lstm(400, 200) + (400 * k + k) + k * k)
    assert k == 13 and trainable(model) == reference == 3_272_218


def maxout(dims: list[int], pool: int) -> int:
    """allennlp's Maxout: layer i is Linear(dims[i], dims[i + 1] * pool)."""
    return sum(a * b * pool + b * pool for a, b in zip(dims, dims[1:]))


def test_sst5_is_allennlps_bcn_with_elmo_at_both_places():
    """allennlp-models training_config/classification/biattentive_classification_network_elmo.jsonnet:
    GloVe 840B 300d, not trainable; pre-encode feed-forward 1324 = 300 + 1024 -> 300 (relu); encoder
    bilstm 300 -> 300; integrator bilstm 1800 -> 300; self-attentive pooling Linear(600 -> 1); maxout
    output 2400 -> [1200, 600, 5], pool 4. That file puts ELMo at the input only; the first released
    configuration (2018, the paper's 54.7) and the paper's placement (§3.3: SST-5 at the input and
    the integrator's output) add it to the integrator's output too, whose width grows to
    600 + 1024: pooling Linear(1624 -> 1), output 4 x 1624 = 6496 -> [1200, 600, 5], and a second
    scalar mix. ELMo scalar mixes: 3 weights + gamma each."""
    from elmo_repro.tasks.classification import WordVocab

    cfg = render("paper")["tasks"]["sst5"]["model"]
    vocab = WordVocab({}, np.zeros((1000, 300), dtype=np.float32), (0, 1, 2, 3, 4))
    model = get_task("sst5").build_model(cfg, vocab, paper_elmo("sst5"), ELMO_SHAPE)
    integrated = 600 + 1024
    reference = ((1324 * 300 + 300) + 2 * lstm(300, 300) + 2 * lstm(1800, 300) + (integrated + 1)
                 + maxout([4 * integrated, 1200, 600, 5], 4) + 2 * (3 + 1))
    assert trainable(model) == reference == 40_968_753


def test_snli_is_esim_with_elmo_at_both_places():
    """allennlp-models training_config/pair_classification/esim_elmo.jsonnet, with the paper's
    setting instead of that file's simplification (which drops GloVe and uses ELMo at the input
    only): GloVe 840B 300d (trained, as esim.jsonnet) + ELMo at the input, encoder bilstm
    1324 -> 300, ELMo again at the encoder's output (600 + 1024 = 1624 wide, before the soft
    alignment); projection
    feed-forward 4 x 1624 = 6496 -> 300 (relu); inference bilstm 300 -> 300; output feed-forward
    2400 -> 300 (relu; avg and max pooling of both sides); logit 300 -> 3; two scalar mixes."""
    from elmo_repro.tasks.classification import WordVocab

    cfg = render("paper")["tasks"]["snli"]["model"]
    vocab = WordVocab({}, np.zeros((1000, 300), dtype=np.float32), ("entailment", "neutral", "contradiction"))
    model = get_task("snli").build_model(cfg, vocab, paper_elmo("snli"), ELMO_SHAPE)
    reference = (1000 * 300 + 2 * lstm(1324, 300) + (6496 * 300 + 300) + 2 * lstm(300, 300) + (2400 * 300 + 300)
                 + (300 * 3 + 3) + 2 * (3 + 1))
    assert trainable(model) == reference


def gru(inputs: int, hidden: int) -> int:
    """One direction of a GRU as torch and cuDNN count it: 3 gates x (W_ih, W_hh) and two biases."""
    return 3 * hidden * (inputs + hidden) + 6 * hidden


def test_squad_is_document_qas_elmo_model():
    """allenai/document-qa's SQuAD model with ELMo (Clark and Gardner 2018; the ELMo paper's SQuAD
    model): GloVe 840B 300d fixed; character embedding 20, CNN of 100 filters of width 5; ELMo at the
    input (1424 = 300 + 100 + 1024) and appended after the shared BiGRU (append_before_atten: 180 +
    1024 = 1204); shared BiGRU 90; bi-attention TriLinear(bias) over 1204 (3 x 1204 + 1); ReLU
    linear 4 x 1204 -> 180; residual self-attention: BiGRU 180 -> 90, TriLinear(bias) over 180 with
    the learned no-alignment bias (3 x 180 + 2), ReLU linear 540 -> 180; start BiGRU 180 -> 90 and
    end BiGRU 360 -> 90 (cuDNN GRUs), linear 180 -> 1 each; two scalar mixes."""
    from elmo_repro.tasks.squad.task import SquadVocab

    cfg = render("paper")["tasks"]["squad"]["model"]
    chars = 60
    vocab = SquadVocab({}, np.zeros((1000, 300), dtype=np.float32), {str(i): i + 2 for i in range(chars - 2)})
    model = get_task("squad").build_model(cfg, vocab, paper_elmo("squad"), ELMO_SHAPE)
    reference = (chars * 20 + (20 * 5 * 100 + 100) + 2 * (3 + 1) + 2 * gru(1424, 90) + (3 * 1204 + 1)
                 + (4816 * 180 + 180) + 2 * gru(180, 90) + (3 * 180 + 2) + (540 * 180 + 180)
                 + 2 * gru(180, 90) + 2 * gru(360, 90) + 2 * (180 + 1))
    assert trainable(model) == reference


def test_srl_is_allennlps_he_et_al_model_with_the_papers_vectors():
    """allennlp-models training_config/structured_prediction/srl_elmo.jsonnet (He et al. 2017 with
    ELMo): alternating highway LSTM, 8 layers of 300, each an input linearity without bias to 6 x 300
    and a state linearity 300 -> 5 x 300 with bias; predicate indicator embedding 2 x 100; tag
    projection 300 -> K; one scalar mix. That file feeds ELMo alone (input 1124 = 1024 + 100); the
    paper keeps He et al.'s GloVe 100d beside it (trainable), so the first layer reads
    1224 = 100 + 100 + 1024."""
    from elmo_repro.tasks.srl.task import SrlVocab

    cfg = render("paper")["tasks"]["srl"]["model"]
    labels = ["O", "B-V", "I-V", "B-A0", "I-A0", "B-A1", "I-A1"]
    vocab = SrlVocab({}, np.zeros((1000, 100), dtype=np.float32), labels)
    model = get_task("srl").build_model(cfg, vocab, paper_elmo("srl"), ELMO_SHAPE)
    layers = sum(d * 6 * 300 + (300 * 5 * 300 + 5 * 300) for d in [1224] + [300] * 7)
    reference = 1000 * 100 + 2 * 100 + (3 + 1) + layers + (300 * len(labels) + len(labels))
    assert trainable(model) == reference
