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

# No property test may depend on an idle machine: hypothesis's 200 ms per-example
# deadline and its too-slow health check measure wall time (one failed a whole run at
# 274 ms under load). Each test's pytest timeout bounds it instead (tests/_budget.py).
# scripts/packaging_check.sh runs tests/packaging in venvs without hypothesis.
try:
    from hypothesis import HealthCheck, settings
except ImportError:
    pass
else:
    settings.register_profile(
        "flowlib", deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile("flowlib")
