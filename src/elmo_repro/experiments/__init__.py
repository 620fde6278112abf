"""Run specs and table specs: the run matrix as data (see :mod:`.specs`)."""
