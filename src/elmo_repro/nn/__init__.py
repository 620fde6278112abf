"""Task-model building blocks: biLSTM, character CNN, CRF."""
