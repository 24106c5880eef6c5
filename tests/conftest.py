"""Shared test fixtures and hooks."""

import pytest
from _budget import (  # noqa: F401  (the timeout budget: tests/_budget.py)
    pytest_addoption,
    pytest_configure,
    pytest_runtest_logreport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
    pytest_sessionfinish,
    pytest_terminal_summary,
)
from _postgres import postgres_dsn, postgres_server  # noqa: F401  (a real PostgreSQL, lazy)
from openai_server import openai_server  # noqa: F401  (the local Chat Completions server)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``-n``, ``--dist loadgroup``) the Ray cluster tests run one after
    the other in one worker: two local Ray clusters at once would only fight over the
    machine's two cores (and Ray's shared session directory)."""
    for item in items:
        if "tests/distributed/test_ray_" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.xdist_group("ray"))
