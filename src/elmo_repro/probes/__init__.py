"""What the biLM's layers encode (paper §5.3): the word sense disambiguation probe (Table 5), the
part-of-speech probe (Table 6) and the nearest neighbours (Table 4)."""
