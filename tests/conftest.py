"""Shared test fixtures and hooks."""

from _budget import (  # noqa: F401  (the timeout budget: tests/_budget.py)
    pytest_addoption,
    pytest_configure,
    pytest_runtest_logreport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
    pytest_sessionfinish,
    pytest_terminal_summary,
)
from _groups import pytest_collection_modifyitems  # noqa: F401  (tests/_groups.py)
from _postgres import postgres_dsn, postgres_server  # noqa: F401  (a real PostgreSQL, lazy)
from openai_server import openai_server  # noqa: F401  (the local Chat Completions server)
