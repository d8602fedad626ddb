"""The slow set of tests/conftest.py names tests that exist."""

import pytest


def test_slow_set_is_current(stale_slow):
    """Every entry of ``SLOW`` in a collected file names one of its tests: a renamed or
    re-parametrized test would otherwise leave the slow set and run in the quick one."""
    if stale_slow is None:
        pytest.skip("only part of the files was collected")
    assert stale_slow == [], f"tests/conftest.py SLOW names tests that do not exist: {stale_slow}"
