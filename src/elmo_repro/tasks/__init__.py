"""Downstream task models of the paper's evaluation (§4): the CoNLL-2003 NER BiLSTM-CRF and its parts."""
