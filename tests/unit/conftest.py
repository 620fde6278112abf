"""Fixtures shared by unit tests."""

import pytest
import torch


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models on a shared machine: intra-op threads only add contention. Use with
    ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
