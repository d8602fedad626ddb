"""Test configuration: float64 is enabled here, for the tests only (the library never does)."""

import os

import jax
import pytest

jax.config.update("jax_enable_x64", True)

DATA = os.path.join(os.path.dirname(__file__), "data")


@pytest.fixture(scope="session")
def data_dir():
    return DATA
