"""Test configuration: float64 is enabled here, for the tests only (the library never does)."""

import os
import tempfile

import jax
import pytest

jax.config.update("jax_enable_x64", True)
# Share compiled executables between the xdist workers (and between runs): compile time, not
# run time, dominates this suite. Test-only setting; the library never touches jax.config.
jax.config.update("jax_compilation_cache_dir", os.path.join(tempfile.gettempdir(), "jaxdyn-test-jax-cache"))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)

DATA = os.path.join(os.path.dirname(__file__), "data")


@pytest.fixture(scope="session")
def data_dir():
    return DATA
