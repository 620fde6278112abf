"""CoVe (McCann et al. 2017): an English->German translation model whose encoder is a feature source."""
