"""Shared test fixtures."""

from _postgres import postgres_dsn, postgres_server  # noqa: F401  (a real PostgreSQL, lazy)
from openai_server import openai_server  # noqa: F401  (the local Chat Completions server)
