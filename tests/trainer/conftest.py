"""Fixtures shared by the trainer's tests."""
import pytest

from .helpers import write_tiny_csv


@pytest.fixture(scope="session")
def tiny_csv(tmp_path_factory):
    """``write_tiny_csv``'s data file, for ``tiny_config``'s runs."""
    return write_tiny_csv(tmp_path_factory.mktemp("data") / "data.csv")
