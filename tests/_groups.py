"""Tests that pytest-xdist must run in one worker, one after the other (the hook is
imported by tests/conftest.py; tests/test_groups.py checks it)."""

from __future__ import annotations

import pytest

RAY = "tests/distributed/test_ray_"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``-n``, ``--dist loadgroup``) the Ray cluster tests run one after
    the other in one worker: two local Ray clusters at once would only fight over the
    machine's two cores (and Ray's shared session directory).

    xdist groups by a ``@name`` suffix it adds to each marked test's node id, by setting
    ``item._nodeid``; pytest 9 keeps the id in ``item._id`` instead, so with pytest-xdist
    3.8 the mark alone groups nothing (seen: two Ray clusters at once). Here the suffix is
    set where this pytest keeps it.

    The Ray tests also come first in the collection: they are the run's longest chain
    (minutes, one after the other), and xdist hands out work in collection order (its
    default reorder puts the largest group first too; this does not rely on it), so the
    other workers take the short tests while the Ray group runs."""
    grouping = bool(getattr(config.option, "loadgroup", False))
    ray = [item for item in items if RAY in item.nodeid.replace("\\", "/")]
    if grouping and ray:
        items[:] = ray + [item for item in items if RAY not in item.nodeid.replace("\\", "/")]
    for item in ray:
        item.add_marker(pytest.mark.xdist_group("ray"))
        if grouping and hasattr(item, "_id") and "@" not in item.nodeid:
            from _pytest.nodeid import coerce_node_id

            item._id = coerce_node_id(f"{item.nodeid}@ray")
