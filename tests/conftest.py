"""Shared test fixtures."""

from openai_server import openai_server  # noqa: F401  (the local Chat Completions server)
