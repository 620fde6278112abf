"""Data readers: LM text, vocabularies, character ids, batches and task corpora."""
