"""One exception tree: everything flowlib raises on purpose is a ``FlowlibError``."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import flowlib
from flowlib.errors import FlowlibError

ROOT = Path(__file__).resolve().parent.parent
BUILTINS = {"ValueError", "TypeError", "RuntimeError", "Exception"}
"""KeyError stays: lookups by key raise it, as a Mapping does."""

# Modules allowed bare raises for now (none left).
PENDING: set[str] = set()


def _bare_raises(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(target, ast.Name) and target.id in BUILTINS:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: raise {target.id}")
    return found


def test_no_bare_builtin_raises() -> None:
    offences = []
    for path in sorted((ROOT / "flowlib").rglob("*.py")):
        if str(path.relative_to(ROOT)) not in PENDING:
            offences += _bare_raises(path)
    assert offences == []


def test_the_raise_check_sees_a_bare_raise(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    raise ValueError('x')\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert _bare_raises(source) == ["m.py:2: raise ValueError"]
    finally:
        ROOT = saved


def test_every_exception_class_is_under_the_root() -> None:
    for module in pkgutil.walk_packages(flowlib.__path__, "flowlib."):
        if module.name.endswith("__main__"):
            continue
        importlib.import_module(module.name)
    outside = []
    stack: list[type[BaseException]] = [BaseException]
    seen: set[type[BaseException]] = set()
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub in seen:
                continue
            seen.add(sub)
            stack.append(sub)
            if sub.__module__.startswith("flowlib") and not issubclass(
                sub, (FlowlibError, Warning)
            ):
                outside.append(f"{sub.__module__}.{sub.__qualname__}")
    assert outside == []
