"""Test configuration: float64 is enabled here, for the tests only (the library never does)."""

import os
import tempfile

# Compile time, not run time, dominates this suite (hundreds of small programs on XLA CPU).
# LLVM optimisation level 0 compiles them 1.5-3x faster; results are unchanged to the tolerances
# tested. Test-only, set before JAX starts its backend; inherited by the subprocess tests.
if "--xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

import jax  # noqa: E402
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
