"""MkDocs hooks: draw every example and list them on the examples page.

Each file in ``examples/`` exposes ``build()`` returning its team (on scripted models, so
nothing needs a network). Each team is drawn with Graphviz into the built site as
``examples/<name>.svg`` (a generated file: nothing is written into ``docs/``); the
examples page gets one section per example: its docstring, its drawing and how to run
it. A broken example breaks the docs build (``mkdocs build --strict``), which is the
point.

The API pages' long signatures are formatted by mkdocstrings-python with one ``ruff
format`` process each (about 400 a build, ~4 s of CPU). :class:`SignatureCache` keeps
ruff's answers between builds (docs/choices.md, "The test command's speed"): the built
site is byte for byte the same.
"""

from __future__ import annotations

import ast
import html
import json
import os
import re
import string
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MARKER = "<!-- examples -->"

# mkdocstrings-python hides each cross-reference in a signature behind a random name of
# the same length before formatting (the shape below) and puts it back afterwards.
_HIDDEN = re.compile(r"\b_[A-Za-z0-9]{2,}\b")
_DIGITS = string.digits + string.ascii_letters


def _placeholder(index: int, length: int) -> str | None:
    """``_`` and ``index`` in base 62, ``length`` characters in all (None: no room)."""
    digits = ""
    while index or not digits:
        index, digit = divmod(index, len(_DIGITS))
        digits = _DIGITS[digit] + digits
    width = length - 1
    return "_" + digits.rjust(width, "0") if len(digits) <= width else None


class SignatureCache:
    """A formatter's answers, kept in a JSON file and keyed by the formatter's version.

    The random names in a signature change every build, so each is replaced by a fixed
    name of the same length (its place in the signature) before the look-up and put back
    in the answer in the same order; the formatter sees names of the same lengths in the
    same places, which is all its layout depends on. An answer whose names do not come
    back in order is not used: the formatter is asked again.
    """

    def __init__(self, formatter: Callable[[str, int], str], path: Path, version: str) -> None:
        self.formatter = formatter
        self.path = path
        self.version = version
        self.calls = 0
        self.answers: dict[str, str] = {}
        self.new = False
        try:
            stored = json.loads(path.read_text())
        except (OSError, ValueError):
            stored = None
        if isinstance(stored, dict) and stored.get("version") == version:
            answers = stored.get("answers")
            if isinstance(answers, dict):
                self.answers = {str(k): str(v) for k, v in answers.items()}

    def _ask(self, code: str, line_length: int) -> str:
        self.calls += 1
        return self.formatter(code, line_length)

    def __call__(self, code: str, line_length: int) -> str:
        names: list[str] = []
        fixed: list[str] = []

        def hide(match: re.Match[str]) -> str:
            name = _placeholder(len(names), len(match[0])) or match[0]
            names.append(match[0])
            fixed.append(name)
            return name

        plain = _HIDDEN.sub(hide, code)
        key = f"{line_length}\0{plain}"
        answer = self.answers.get(key)
        if answer is None:
            answer = self._ask(plain, line_length)
            self.answers[key] = answer
            self.new = True
        found = _HIDDEN.findall(answer)
        if found != fixed:
            return self._ask(code, line_length)
        back = iter(names)
        return _HIDDEN.sub(lambda _: next(back), answer)

    def save(self) -> None:
        """Write the answers (atomically: builds may run side by side)."""
        if not self.new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps({"version": self.version, "answers": self.answers})
        handle, name = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
        with os.fdopen(handle, "w") as out:
            out.write(data)
        os.replace(name, self.path)
        self.new = False


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "-"


_CACHE: list[SignatureCache] = []


def on_startup(command: str, dirty: bool) -> None:
    """Put the signature cache in front of mkdocstrings-python's formatter."""
    try:
        from mkdocstrings_handlers.python._internal import rendering
    except ImportError:  # another layout: format as it does, without the cache
        return
    get_formatter = getattr(rendering, "_get_formatter", None)
    if get_formatter is None or _CACHE:
        return
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    cache = SignatureCache(
        get_formatter(),
        home / "flowlib-docs" / "signatures.json",
        # The formatter it picks: Black if installed, else ruff.
        f"black {_version('black')}, ruff {_version('ruff')}",
    )
    _CACHE.append(cache)
    rendering._get_formatter = lambda: cache


def on_post_build(config: Any) -> None:
    """Keep the new answers for the next build."""
    for cache in _CACHE:
        cache.save()


def _examples() -> list[Path]:
    return sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def _has_build(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "build"
        for node in tree.body
    )


def on_files(files: Any, config: Any) -> Any:
    """Add each example's drawing to the site as a generated file."""
    from mkdocs.structure.files import File

    from flowlib.cli import load_object
    from flowlib.render import to_svg

    for path in _examples():
        if not _has_build(path):
            continue
        team = load_object(f"{path}:build")
        files.append(File.generated(config, f"examples/{path.stem}.svg", content=to_svg(team)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the examples page."""
    if MARKER not in markdown:
        return markdown
    sections = []
    for path in _examples():
        doc = _docstring(path)
        title, _, body = doc.partition("\n")
        parts = [f"## {path.stem}", "", f"**{title.strip()}**", ""]
        parts += ["```text", html.unescape(body.strip()), "```", ""]
        if _has_build(path):
            parts += [f"![{path.stem}](examples/{path.stem}.svg)", ""]
        parts += [f"Source: `examples/{path.name}`", ""]
        sections.append("\n".join(parts))
    return markdown.replace(MARKER, "\n".join(sections))
