"""Domain fine-tuning of the biLM (paper §3.4): before a task model is trained, the pretrained biLM
is trained further on the task's unlabelled training text, then frozen.

As bilm-tf's ``restart.py``: training continues from the pretraining checkpoint with its weights
*and* its Adagrad accumulators and step counts (:class:`~elmo_repro.bilm.train.StartFrom`); the
vocabulary and softmax are the pretraining ones, so task words outside the vocabulary are
``<UNK>`` targets (the char CNN still reads them). Where the checkpoint does not hold the base
weights (released ELMo weights, which come without optimizer state), the accumulators start
afresh at ``initial_accumulator`` and the stage's metrics say so.

The text (:func:`finetuning_text`): every token field of every training example as one sentence
(each sentence of a field holding a document),
one sentence per line as bilm-tf's training files, in file order, each distinct sentence once
(SNLI premises recur with every hypothesis; SST and CoNLL sentences rarely). Then
:func:`drop_held_out` removes every sentence equal, by the contamination check's normalised key
(:func:`elmo_repro.data.contamination.sentence_key`), to a sentence of the task's dev or test split,
whatever its length: generic SNLI hypotheses ("A man is sleeping .") recur across splits, and a
held-out sentence must never be a fine-tuning target.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

import torch

from ..data.contamination import sentence_key
from ..data.examples import field_texts
from ..data.vocabulary import Vocabulary
from ..io import InputError, read_json
from .model import BiLM, BiLMConfig
from .train import StartFrom


def finetuning_text(examples: Sequence[dict], fields: Sequence[str]) -> list[list[str]]:
    """Each token field of each example as one sentence (a document field: each of its
    sentences), in order, each distinct sentence once.

    Args:
        examples: the task's training examples (``{field: [token, ...] or [[token, ...], ...]}``).
        fields: the token fields the biLM embeds (``("tokens",)``, SNLI's premise and hypothesis,
            coreference's document ``sentences``).
    """
    seen: set[tuple[str, ...]] = set()
    text = []
    for example in examples:
        for field in fields:
            for tokens in field_texts(example[field]):
                sentence = tuple(tokens)
                if sentence and sentence not in seen:
                    seen.add(sentence)
                    text.append(list(sentence))
    return text


def drop_held_out(text: list[list[str]], held_out: Sequence[Sequence[str]]) -> tuple[list[list[str]], int]:
    """``text`` without the sentences whose normalised key is that of a held-out sentence, and how
    many were dropped (sentences without letters or digits are kept: they carry no key)."""
    keys = {sentence_key(s) for s in held_out} - {""}
    kept = [s for s in text if sentence_key(s) not in keys or not sentence_key(s)]
    return kept, len(text) - len(kept)


def load_start(model_dir: str | Path, checkpoint: str | Path | None) -> tuple[BiLM, Vocabulary, StartFrom, bool]:
    """The base biLM of a model directory (``weights.pt``, ``options.json``, ``vocab.txt``) as a
    fine-tuning start, with the Adagrad state of ``checkpoint`` when that checkpoint holds exactly
    these weights.

    Returns:
        ``(model, vocabulary, start, optimizer_restored)``.

    Raises:
        InputError: a missing file, a vocabulary whose size is not the softmax's (naming the
            vocabulary and the weight file: a wrong vocabulary would otherwise fail deep in the
            sampled softmax, or silently train the wrong rows), or a model without a softmax.
    """
    model_dir = Path(model_dir)
    weights, options, vocab_file = model_dir / "weights.pt", model_dir / "options.json", model_dir / "vocab.txt"
    for path in (weights, options, vocab_file):
        if not path.is_file():
            raise InputError(path, "not found (fine-tuning needs a biLM trained here: weights.pt, options.json "
                             "and vocab.txt with its softmax)")
    counts = model_dir / "counts.tsv"
    vocab = Vocabulary.load(vocab_file, counts if counts.is_file() else None)
    config = BiLMConfig.from_options(read_json(options))
    if not config.n_tokens_vocab:
        raise InputError(weights, "this biLM has no softmax: fine-tuning needs the pretraining softmax")
    if config.n_tokens_vocab != len(vocab):
        raise InputError(vocab_file, f"holds {len(vocab)} tokens but the softmax of {weights} has "
                         f"{config.n_tokens_vocab} rows: the vocabulary does not belong to these weights")
    model = BiLM(config)
    state = torch.load(weights, map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    identity = hashlib.sha256(weights.read_bytes()).hexdigest()[:16]
    optimizer, restored = None, False
    if checkpoint is not None and Path(checkpoint).is_file():
        saved = torch.load(checkpoint, map_location="cpu", weights_only=True)
        same = saved.get("model", {}).keys() == state.keys() and all(
            torch.equal(saved["model"][k], v) for k, v in state.items())
        if same:
            optimizer, restored = saved["optimizer"], True
    return model.eval(), vocab, StartFrom(model.state_dict(), optimizer, identity), restored
