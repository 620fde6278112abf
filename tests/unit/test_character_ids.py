"""Character ids against hand-computed values (bilm-tf / allennlp conventions, +1 shifted)."""

import numpy as np

from elmo_repro.data.character_ids import MAX_CHARS, batch_to_char_ids, token_to_char_ids

PAD = 261  # 260 + 1


def test_single_ascii_char():
    assert token_to_char_ids("a") == [259, 98, 260] + [PAD] * 47


def test_sentence_boundaries():
    assert token_to_char_ids("<S>") == [259, 257, 260] + [PAD] * 47
    assert token_to_char_ids("</S>") == [259, 258, 260] + [PAD] * 47


def test_multibyte_word():
    # "é" is two UTF-8 bytes, 0xC3 0xA9
    assert token_to_char_ids("né") == [259, ord("n") + 1, 0xC3 + 1, 0xA9 + 1, 260] + [PAD] * 45


def test_sixty_byte_token_is_truncated_to_48_bytes():
    ids = token_to_char_ids("x" * 60)
    assert len(ids) == MAX_CHARS
    assert ids == [259] + [ord("x") + 1] * 48 + [260]


def test_cut_in_the_middle_of_a_character():
    # 47 ASCII bytes then "é" (2 bytes): the 48-byte cut keeps only the first byte of "é".
    ids = token_to_char_ids("a" * 47 + "é")
    assert ids[1:48] == [98] * 47
    assert ids[48] == 0xC3 + 1
    assert ids[49] == 260


def test_batch_pads_with_zero_tokens_and_adds_boundaries():
    batch = batch_to_char_ids([["a"], ["a", "b", "c"]])
    assert batch.shape == (2, 5, MAX_CHARS)
    assert batch[0, 0].tolist() == token_to_char_ids("<S>")
    assert batch[0, 2].tolist() == token_to_char_ids("</S>")
    assert not batch[0, 3:].any()
    assert batch[1, 4].tolist() == token_to_char_ids("</S>")
    assert batch.dtype == np.int64
