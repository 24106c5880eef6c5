"""``Named``: the read-only ``name`` and ``description`` of agents, teams, routers and
tools, written once."""

from __future__ import annotations

__all__ = ["Named"]


class Named:
    """Has a read-only ``name`` and ``description``, which its constructor stores in
    ``_name`` and ``_description``."""

    _name: str
    _description: str

    @property
    def name(self) -> str:
        """The name other participants, the graph and models know it by."""
        return self._name

    @property
    def description(self) -> str:
        """What it does, as given: read by selectors, models and people."""
        return self._description
