"""Each public package's ``__all__`` matches what it exports (STYLE: curated surface)."""

from __future__ import annotations

import importlib
import inspect

import pytest

PUBLIC = [
    "flowlib",
    "flowlib.agents",
    "flowlib.base",
    "flowlib.code_executors",
    "flowlib.component",
    "flowlib.conditions",
    "flowlib.conversation",
    "flowlib.errors",
    "flowlib.graph",
    "flowlib.memory",
    "flowlib.messages",
    "flowlib.model_context",
    "flowlib.models",
    "flowlib.teams",
    "flowlib.render",
    "flowlib.testing",
    "flowlib.tools",
    "flowlib.ui",
]


@pytest.mark.parametrize("name", PUBLIC)
def test_all_matches_public_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    assert len(exported) == len(module.__all__), "duplicates in __all__"
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and not inspect.ismodule(value)
        and attr not in {"annotations", "TYPE_CHECKING"}
        and str(getattr(value, "__module__", name)).startswith(name)
    }
    assert public - exported == set(), f"public but not in __all__: {public - exported}"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names missing {attr}"
