"""Issue 14 part 1: every public entry point checks the shape of its input (a sentence is a list of
str, a batch a list of sentences) and its counts, and says what it expected; and part 3's
length-bucketed ``embed_sentences``, whose outputs keep the input order."""

import re

import numpy as np
import pytest
import torch
from fp_bounds import bilm_bound

from elmo_repro.bilm.evaluate import bilm_perplexity
from elmo_repro.bilm.model import BiLM, BiLMConfig
from elmo_repro.bilm.token_cache import TokenCache
from elmo_repro.data.character_ids import batch_to_char_ids
from elmo_repro.data.vocabulary import Vocabulary, count_tokens
from elmo_repro.elmo import features
from elmo_repro.elmo.embedder import Elmo, ElmoEmbedder

pytestmark = pytest.mark.usefixtures("one_thread")
TEXT = "the cat sat on the mat"
NOT_SPLIT = re.escape("expected a tokenized sentence (a list of str), got a str ('the cat sat on the mat'; "
                      "split it into tokens first, e.g. text.split())")


@pytest.fixture(scope="module")
def model() -> BiLM:
    torch.manual_seed(0)
    return BiLM(BiLMConfig(filters=((1, 4), (2, 4)), char_dim=4, n_highway=1, cell_dim=8, projection_dim=4,
                           n_layers=2, dropout=0.0, n_tokens_vocab=12)).eval()


@pytest.fixture(scope="module")
def embedder(model) -> ElmoEmbedder:
    return ElmoEmbedder(model, batch_size=2)


def test_a_plain_string_is_refused_by_every_sentence_entry_point(model, embedder):
    # before: embed_long/iter_long embedded "the cat ..." character by character, without an error
    calls = {
        "ElmoEmbedder.embed_sentence": lambda: embedder.embed_sentence(TEXT),
        "ElmoEmbedder.embed_long": lambda: embedder.embed_long(TEXT, window=8, overlap=2),
        "ElmoEmbedder.iter_long": lambda: list(embedder.iter_long(TEXT, window=8, overlap=2)),
    }
    for where, call in calls.items():
        with pytest.raises(TypeError, match=f"^{re.escape(where)}: {NOT_SPLIT}$"):
            call()


def test_a_list_of_strings_is_not_a_batch(model, embedder):
    batch_message = r"sentence 0: expected a tokenized sentence \(a list of str\), got a str \('the'"
    calls = {
        "Elmo": lambda: Elmo(model)(TEXT.split()),
        "Elmo.char_ids": lambda: Elmo(model).char_ids(TEXT.split()),
        "ElmoEmbedder.embed_batch": lambda: embedder.embed_batch(TEXT.split()),
        "ElmoEmbedder.embed_sentences": lambda: list(embedder.embed_sentences(TEXT.split())),
        "embed_sentences": lambda: list(features.embed_sentences(model, TEXT.split())),
        "bilm_perplexity": lambda: bilm_perplexity(model, Vocabulary.build(*count_tokens([TEXT.split()])),
                                                   TEXT.split()),
        "batch_to_char_ids": lambda: batch_to_char_ids(TEXT.split()),
    }
    for where, call in calls.items():
        with pytest.raises(TypeError, match=f"^{re.escape(where)}: {batch_message}"):
            call()
    # a whole batch given as one str, and a token that is not a str
    with pytest.raises(TypeError, match=r"^ElmoEmbedder.embed_batch: expected a batch of tokenized sentences"):
        embedder.embed_batch(TEXT)
    with pytest.raises(TypeError, match=r"^ElmoEmbedder.embed_sentences: expected an iterable of tokenized"):
        list(embedder.embed_sentences(TEXT))
    with pytest.raises(TypeError, match=r"^Elmo: sentence 1: token 2 is a int, expected a str$"):
        Elmo(model)([["a"], ["b", "c", 3]])
    with pytest.raises(TypeError, match=r"^TokenCache words: expected a tokenized sentence"):
        TokenCache(model, "the")


@pytest.mark.parametrize("call, message", [
    (lambda m, e: ElmoEmbedder(m, batch_size=0), "batch_size must be an integer >= 1, got 0"),
    (lambda m, e: ElmoEmbedder(m, lookahead=0), "lookahead must be an integer >= 1, got 0"),
    # before: batch_size=0 fell back to the embedder's default, silently
    (lambda m, e: list(e.embed_sentences([["a"]], batch_size=0)), "batch_size must be an integer >= 1, got 0"),
    (lambda m, e: list(e.iter_long(["a"] * 20, window=8, overlap=2, batch_size=0)),
     "batch_size must be an integer >= 1, got 0"),
    (lambda m, e: Elmo(m, n_outputs=-1), "Elmo n_outputs must be an integer >= 0, got -1"),
    (lambda m, e: Elmo(m, dropout=1.5), "Elmo dropout must be a number in [0, 1), got 1.5"),
    (lambda m, e: list(features.embed_sentences(m, [["a"]], batch_size=0)), "batch_size must be an integer >= 1"),
    (lambda m, e: TokenCache(m, ["a"], batch_size=-2), "batch_size must be an integer >= 1, got -2"),
    (lambda m, e: bilm_perplexity(m, Vocabulary.build(*count_tokens([["a"]])), [["a"]], batch_size=0),
     "batch_size must be an integer >= 1, got 0"),
])
def test_counts_outside_their_domain_are_refused(model, embedder, call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call(model, embedder)


def test_embed_sentences_sorts_within_the_lookahead_window_and_keeps_the_input_order(model):
    sentences = [["w"] * n for n in (5, 1, 4, 2, 9, 3, 1)]
    embedder = ElmoEmbedder(model, batch_size=2, lookahead=4)
    seen: list[list[int]] = []
    real = embedder.embed_batch

    def spy(batch):
        seen.append([len(s) for s in batch])
        return real(batch)

    embedder.embed_batch = spy
    out = list(embedder.embed_sentences(iter(sentences)))
    # window 1 = lengths (5, 1, 4, 2) sorted -> (1, 2), (4, 5); window 2 = (9, 3, 1) -> (1, 3), (9,)
    assert seen == [[1, 2], [4, 5], [1, 3], [9]]
    assert [o.shape[1] for o in out] == [len(s) for s in sentences]                   # input order
    for sentence, layers in zip(sentences, out):
        # stateless: only the batch's BLAS blocking differs, but that difference is carried along
        # every time step and layer: twice the biLM chain bound (fp_bounds.py) over the sentence
        # and its boundaries (a single dot product's bound would ignore the recurrence)
        alone = real([sentence])[0]
        bound = 2 * bilm_bound(model.config, len(sentence) + 2, np.abs(alone).max())
        np.testing.assert_allclose(layers, alone, rtol=0, atol=bound)
    # lookahead <= batch_size: input-order batches
    seen.clear()
    list(embedder.embed_sentences(sentences, batch_size=2, lookahead=2))
    assert seen == [[1, 5], [2, 4], [3, 9], [1]]                  # the input-order batches, each sorted
