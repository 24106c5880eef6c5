"""Patches between two JSON values, so a checkpoint stores what changed, not everything.

A participant's state is a JSON value (dicts, lists, strings, numbers, booleans, None).
Between two turns most of it is unchanged, and what grows (an agent's model context)
grows by appending. A patch says exactly that:

- ``{}``: nothing changed;
- ``{"set": value}``: the value is replaced;
- ``{"append": [items]}``: the old list, extended by ``items``;
- ``{"update": {key: patch}, "remove": [keys]}``: a dict whose listed keys changed
  (each by its own patch) and whose ``remove`` keys are gone.

So an agent whose model context grows by one message per turn writes that one message,
whatever the length of the context. Equality is strict (``1``, ``1.0`` and ``True`` are
three different values), so ``apply_patch(a, diff_state(a, b)) == b`` holds with types.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import is_
from typing import Any

from pydantic_core import to_json

from .._english import a
from ..errors import CheckpointError

__all__ = ["apply_patch", "diff_state", "patch_of"]

Patch = dict[str, Any]


def diff_state(old: Any, new: Any) -> Patch:
    """The patch that turns ``old`` into ``new`` (both JSON values).

    Args:
        old: The previous value (None when there was none).
        new: The current value.

    Returns:
        A JSON patch (see the module docstring); ``{}`` when the values are equal.

    Examples:
        >>> diff_state({"messages": ["a"]}, {"messages": ["a", "b"]})
        {'update': {'messages': {'append': ['b']}}}
    """
    if _same(old, new):
        return {}
    if type(old) is dict and type(new) is dict:
        return patch_of(old, new, {})
    if type(old) is list and type(new) is list and len(new) > len(old):
        size = len(old)
        if _same(old, new[:size]):
            return {"append": new[size:]}
    return {"set": new}


def patch_of(
    base: Mapping[str, Any], state: Mapping[str, Any], known: Mapping[str, Patch]
) -> Patch:
    """``diff_state(base, state)`` for two dicts, given the patches of some keys
    (``known``: a list that grew, a nested state's own change); the other keys are
    compared with `diff_state()`."""
    update: dict[str, Patch] = {}
    for key, value in state.items():
        if key in known:
            sub = known[key]
        elif key in base:
            sub = diff_state(base[key], value)
        else:
            sub = {"set": value}
        if sub:
            update[key] = sub
    removed = [key for key in base if key not in state]
    patch: Patch = {}
    if update:
        patch["update"] = update
    if removed:
        patch["remove"] = removed
    return patch


def apply_patch(old: Any, patch: Patch) -> Any:
    """The value ``patch`` (from `diff_state()`) makes of ``old``.

    ``old`` is not changed: the result shares unchanged parts with it, so do not mutate
    either afterwards.

    Raises:
        CheckpointError: The patch is malformed or does not fit ``old`` (an ``append`` to
            something that is not a list, an ``update`` of something that is not a dict).
    """
    if type(patch) is not dict:
        raise CheckpointError(
            f"A state patch must be a dict, got {type(patch).__name__}: the checkpoint "
            "record is corrupt."
        )
    if not patch:
        return old
    if "set" in patch:
        return patch["set"]
    if "append" in patch:
        items = patch["append"]
        if type(old) is not list or type(items) is not list:
            raise CheckpointError(
                f"A state patch appends to {a(type(old).__name__)}, not a list: the "
                "records do not fold in order (a missing or reordered checkpoint)."
            )
        return [*old, *items]
    if "update" in patch or "remove" in patch:
        if type(old) is not dict:
            raise CheckpointError(
                f"A state patch updates keys of {a(type(old).__name__)}, not a dict: the "
                "records do not fold in order (a missing or reordered checkpoint)."
            )
        result = dict(old)
        for key in patch.get("remove", []):
            result.pop(key, None)
        for key, sub in patch.get("update", {}).items():
            result[key] = apply_patch(old.get(key), sub)
        return result
    raise CheckpointError(
        f"Unknown state patch keys {sorted(patch)}: expected `set`, `append`, `update` or `remove`."
    )


def _same(a: Any, b: Any) -> bool:
    """JSON equality that also tells ``1``, ``1.0`` and ``True`` apart.

    Containers are compared by Python's own (C) equality first, which is fast but treats
    ``1 == 1.0 == True``; only containers that pass are compared again as JSON text, which
    tells those apart. (Equal dicts with their keys in another order then count as
    changed: the patch is larger, never wrong.)
    """
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) is dict or type(a) is list:
        if _identical(a, b):
            return True
        if a != b:
            return False
        try:
            return bool(to_json(a) == to_json(b))
        except Exception:  # not JSON after all: compare strictly, item by item
            return _same_items(a, b)
    return bool(a == b)


def _identical(a: Any, b: Any) -> bool:
    """Whether two containers hold the very same objects, in the same places (and dict
    keys in the same order): then they are equal as JSON too, without dumping them.

    A participant's state saved after a resume holds the objects its stored state was
    loaded with, so its many unchanged items are compared by identity (a C loop),
    where dumping two 10,000-item contexts to compare them took milliseconds."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is list:
        return len(a) == len(b) and (all(map(is_, a, b)) or all(map(_identical, a, b)))
    if kind is dict:
        return list(a) == list(b) and all(map(_identical, a.values(), b.values()))
    return False


def _same_items(a: Any, b: Any) -> bool:
    if type(a) is dict:
        return len(a) == len(b) and all(k in b and _same(v, b[k]) for k, v in a.items())
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
