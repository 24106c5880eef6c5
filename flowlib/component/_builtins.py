"""Registers flowlib's own components (called once, on first dump or load)."""

from __future__ import annotations

from ..tools._components import eco_specs  # workbenches, agent/team tools, cache stores
from ._agents import agent_specs
from ._clients import client_specs
from ._conditions import condition_specs
from ._parts import part_specs
from ._registry import register
from ._teams import team_specs

__all__ = ["register_builtins"]


def register_builtins() -> None:
    """Add the built-in agents, teams, conditions, clients and parts to the registry."""
    for spec in (
        *condition_specs(),
        *client_specs(),
        *part_specs(),
        *agent_specs(),
        *team_specs(),
        *eco_specs(),
    ):
        register(spec)
