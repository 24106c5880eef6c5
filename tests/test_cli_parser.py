"""The command line explains itself: every subcommand has a description and every
argument a help text (a walk over the whole parser), ``--version`` answers, and error
text reads as English."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import flowlib
from flowlib.cli import _main as cli

ROOT = Path(__file__).resolve().parent.parent


def _commands(
    parser: argparse.ArgumentParser, path: str = "flowlib"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{path} {name}")


def test_every_command_has_a_description_and_every_argument_help() -> None:
    missing: list[str] = []
    for path, parser in _commands(cli._parser()):
        if not parser.description:
            missing.append(f"`{path}` has no description")
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                name = "/".join(action.option_strings) or action.dest
                missing.append(f"`{path}` argument `{name}` has no help")
    assert not missing, "\n".join(missing)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"flowlib {flowlib.__version__}"


BAD_ENGLISH = [
    # "is a int": an article written before a name that may start with a vowel.
    (re.compile(r"\ba \{type\("), "'a {type(...)}': use flowlib._english.a"),
    # "1 edges": a count written before a fixed plural.
    (
        re.compile(r"\{(len\([^}]*\)|\w+)\} (edges|nodes|replies|steps|runs|tasks|ids)\b"),
        "'{n} <plural>': use flowlib._english.counted",
    ),
    # "boom..": an error's message, which may end its own sentence, before a full stop.
    (re.compile(r": \{(exc|error|cause|err|reason)\}\. "), "': {exc}. ': use clause(exc)"),
    (re.compile(r"[^.]\.\.[\"']"), "a string ending in '..'"),
]


def test_error_text_is_proofread() -> None:
    """No "is a int", "1 edges", "(1 replies)" or ".." in flowlib's own strings."""
    found: list[str] = []
    for path in sorted((ROOT / "flowlib").rglob("*.py")):
        if path.name == "_english.py":  # the helpers' own docstrings show the mistakes
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for pattern, what in BAD_ENGLISH:
                if pattern.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {what}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_exit_code_table_is_the_enum() -> None:
    page = (ROOT / "docs" / "cli.md").read_text()
    table = page.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| `(\w+)` \|", table, re.M)
    assert [(int(code), name) for code, name in rows] == [
        (int(member), member.name) for member in cli.ExitCode
    ]
