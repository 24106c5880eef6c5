"""What a loaded config may touch (issue 11.4).

A config is data that may come from someone else. Loading it builds objects from
flowlib's registry only (no imports), and by default it also may not:

* create or change files: a store or a code executor whose config names a path
  (``SQLiteStore.path``, ``DiskCacheStore.directory``,
  ``LocalCommandLineCodeExecutor.work_dir``) loads only when the path lies inside one of
  the directories given as ``allow_paths=``;
* start programs: an MCP workbench whose server is a command (stdio) loads only with
  ``allow_commands=True``;
* run code unasked: a ``CodeExecutorAgent`` loads only with an ``approval_func=``, which
  it then asks before every execution;
* send the user's API key elsewhere: see ``flowlib/models/_openai.py`` (a key from
  the environment goes only to the endpoint it belongs to).

The checks run before anything is built, so a refused config changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import ArgumentTypeError
from ._errors import ComponentLoadError

__all__ = ["MAX_DEPTH", "LoadPolicy"]


class Loader(Protocol):
    """What a policy needs of the loader running it: errors located at a field."""

    def error(self, message: str, field_name: str = "") -> ComponentLoadError: ...


MAX_DEPTH = 100
"""How deeply components may nest in one config (a team in a team in ... ): deeper
configs are refused with a ``ComponentLoadError`` instead of exhausting the stack."""

# Classes whose config names a path they create or write, and the field that holds it.
_PATH_FIELDS = {
    "SQLiteStore": "path",
    "DiskCacheStore": "directory",
    "LocalCommandLineCodeExecutor": "work_dir",
}


@dataclass(frozen=True)
class LoadPolicy:
    """The permissions of one ``load_component`` call.

    Attributes:
        allow_paths: Resolved directories under which loaded components may create or
            change files.
        allow_commands: Whether an MCP workbench may start its server command.
        approval_func: Given to every loaded ``CodeExecutorAgent``.
    """

    allow_paths: tuple[Path, ...] = ()
    allow_commands: bool = False
    approval_func: Any = None

    @classmethod
    def build(
        cls,
        *,
        allow_paths: Iterable[str | os.PathLike[str]] | None,
        allow_commands: bool,
        approval_func: Any,
    ) -> LoadPolicy:
        """Check the ``load_component`` arguments and resolve the directories."""
        if isinstance(allow_paths, (str, os.PathLike)):
            allow_paths = [allow_paths]
        if allow_paths is not None and not isinstance(allow_paths, Iterable):
            raise ArgumentTypeError(
                f"allow_paths must be a list of directory paths, not {allow_paths!r}.",
                argument="allow_paths",
            )
        paths: list[Path] = []
        for index, path in enumerate(allow_paths or ()):
            if not isinstance(path, (str, os.PathLike)):
                raise ArgumentTypeError(
                    f"allow_paths[{index}] must be a directory path, not {path!r}.",
                    argument=f"allow_paths[{index}]",
                )
            paths.append(Path(path).expanduser().resolve())
        if not isinstance(allow_commands, bool):
            raise ArgumentTypeError(
                f"allow_commands must be True or False, not {allow_commands!r}.",
                argument="allow_commands",
            )
        if approval_func is not None and not callable(approval_func):
            raise ArgumentTypeError(
                "approval_func must be a function (ApprovalRequest) -> ApprovalResponse, "
                f"not {approval_func!r}.",
                argument="approval_func",
            )
        return cls(tuple(paths), allow_commands, approval_func)

    def check(self, cls: type, config: Mapping[str, Any], loader: Loader) -> None:
        """Refuse ``config`` (a ``ComponentLoadError``) if building ``cls`` from it would
        do something this policy does not allow."""
        name = cls.__name__
        field = _PATH_FIELDS.get(name)
        if field is not None:
            self._check_path(config.get(field), field, name, loader)
        elif name == "McpWorkbench":
            self._check_command(config, loader)
        elif name == "CodeExecutorAgent" and self.approval_func is None:
            raise loader.error(
                "a CodeExecutorAgent loaded from a config would run the code it is sent "
                "without anyone approving it: pass `approval_func=` to `load_component` "
                "(it is asked before every execution), or build the agent in code."
            )

    def _check_path(self, value: Any, field: str, name: str, loader: Loader) -> None:
        if value is None:
            return  # a temporary directory of its own
        if not isinstance(value, (str, os.PathLike)):
            return  # the config's own validation names the wrong type
        target = Path(value).expanduser().resolve()
        if any(target == root or root in target.parents for root in self.allow_paths):
            return
        allowed = ", ".join(f"`{root}`" for root in self.allow_paths) or "none"
        raise loader.error(
            f"this {name} would create or change files at `{target}`, outside the "
            f"directories this load may write to ({allowed}). Pass "
            f"`allow_paths=[{str(target.parent)!r}]` (or a parent) to `load_component` "
            "if the config is trusted.",
            field,
        )

    def _check_command(self, config: Mapping[str, Any], loader: Loader) -> None:
        params = config.get("server_params")
        if not isinstance(params, Mapping):
            return
        is_stdio = params.get("type") == "StdioServerParams" or (
            "command" in params and "url" not in params
        )
        if is_stdio and not self.allow_commands:
            command = " ".join(
                str(part) for part in [params.get("command"), *(params.get("args") or [])]
            )
            raise loader.error(
                f"this MCP workbench would start the program `{command}`: pass "
                "`allow_commands=True` to `load_component` if the config is trusted.",
                "server_params",
            )
