"""Task scorers: entity-level span F1 for NER (conlleval semantics, via seqeval)."""
