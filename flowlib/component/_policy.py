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
* read environment variables: a config naming one (``api_key_env``) loads only when the
  variable is listed in ``allow_env=``, or it is the key of the very endpoint the config
  names (``OPENAI_API_KEY`` for OpenAI's own or ``OPENAI_BASE_URL``'s endpoint,
  ``AZURE_OPENAI_API_KEY`` for ``AZURE_OPENAI_ENDPOINT``), see
  ``flowlib/models/_openai_config.py``;
* import functions: a ``FunctionTool`` config names its function as
  ``"module:qualname"``, and loads only when that name is listed in
  ``allow_functions=`` (a config holding source code is always refused);
* connect to network hosts other than its model endpoint: an MCP workbench's SSE or
  HTTP ``url``, a ``RedisStore``'s ``host`` and any ``dsn`` (a PostgreSQL connection
  string) load only when the host is listed in ``allow_hosts=``.

The checks run over the whole config before anything is built (``Loader.root``), so a
refused config changes nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..errors import ArgumentTypeError, InvalidArgumentError
from ._errors import ComponentLoadError

__all__ = ["MAX_DEPTH", "LoadPolicy", "host_of"]


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

# An environment variable's name: what allow_env= entries must look like.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A function as allow_functions= takes it: ``package.module:Outer.name``.
_FUNCTION = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")
# A host as allow_hosts= takes it: a name or an address, optionally ``:port``.
_HOST = re.compile(
    r"\[[0-9a-fA-F:.]+\](:[0-9]{1,5})?|[0-9a-fA-F.]*:[0-9a-fA-F:.]*|[A-Za-z0-9_.-]+(:[0-9]{1,5})?"
)


def host_of(address: str) -> tuple[str, int | None]:
    """The host (lower case) and port a URL, a libpq DSN or a bare host names.

    ``postgresql://u@db.example:5432/x`` -> ``("db.example", 5432)``;
    ``host=db port=5433 dbname=x`` -> ``("db", 5433)``; a DSN without a host (a local
    Unix socket) -> ``("localhost", None)``. Unparsable text gives its own lower-cased
    text, which no ``allow_hosts`` entry but itself matches.
    """
    text = address.strip()
    if "://" in text:
        try:
            parts = urlsplit(text)
            host, port = parts.hostname, parts.port
        except ValueError:
            return text.lower(), None
        return (host or "localhost").lower(), port
    if "=" in text:  # libpq key=value form
        pairs = dict(re.findall(r"(\w+)\s*=\s*'?([^'\s]*)'?", text))
        host = pairs.get("host") or pairs.get("hostaddr") or "localhost"
        port_text = pairs.get("port", "")
        return host.split(",")[0].lower(), int(port_text) if port_text.isdigit() else None
    return text.lower(), None


@dataclass(frozen=True)
class LoadPolicy:
    """The permissions of one ``load_component`` call.

    Attributes:
        allow_paths: Resolved directories under which loaded components may create or
            change files.
        allow_commands: Whether an MCP workbench may start its server command.
        approval_func: Given to every loaded ``CodeExecutorAgent``.
        allow_env: Names of the environment variables a loaded config may read.
        allow_hosts: Hosts (``"db.internal"``, ``"127.0.0.1:6379"``; lower case) a
            loaded config may connect to besides its model endpoint.
        allow_functions: Functions (``"module:qualname"``) a ``FunctionTool`` config may
            import.
    """

    allow_paths: tuple[Path, ...] = ()
    allow_commands: bool = False
    approval_func: Any = None
    allow_env: frozenset[str] = frozenset()
    allow_hosts: frozenset[str] = frozenset()
    allow_functions: frozenset[str] = frozenset()

    @classmethod
    def build(
        cls,
        *,
        allow_paths: Iterable[str | os.PathLike[str]] | None,
        allow_commands: bool,
        approval_func: Any,
        allow_env: Iterable[str] | None = None,
        allow_hosts: Iterable[str] | None = None,
        allow_functions: Iterable[str] | None = None,
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
        return cls(
            tuple(paths),
            allow_commands,
            approval_func,
            _names(allow_env, "allow_env", _ENV_NAME, "an environment variable name"),
            frozenset(
                _host_entry(name)
                for name in _names(allow_hosts, "allow_hosts", _HOST, "a host or host:port")
            ),
            _names(
                allow_functions, "allow_functions", _FUNCTION, "a function as 'module:qualname'"
            ),
        )

    def read_env(self, name: str, field: str, loader: Loader, *, owned: bool = False) -> str:
        """The value of the environment variable ``name`` a config asks for in ``field``.

        Args:
            name: The variable.
            field: The config field naming it (for the error).
            loader: The load in progress.
            owned: The variable is the key of the very endpoint the config names (as
                ``OPENAI_API_KEY`` is OpenAI's): allowed without ``allow_env``.

        Raises:
            ComponentLoadError: The variable is not allowed, or not set.
        """
        if not owned and name not in self.allow_env:
            raise loader.error(
                f"the config reads the environment variable `{name}`, which this load may "
                f"not read (a config from elsewhere could send it to its own server). Pass "
                f"`allow_env=[{name!r}]` to `load_component` if the config is trusted.",
                field,
            )
        value = os.environ.get(name)
        if not value:
            raise loader.error(
                f"`{field}` names the environment variable `{name}`, which is not set.", field
            )
        return value

    def check_host(self, address: str, field: str, what: str, loader: Loader) -> None:
        """Refuse a config that would connect ``what`` to the host of ``address``
        unless that host (or ``host:port``) is in ``allow_hosts``."""
        host, port = host_of(address)
        with_port = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if host in self.allow_hosts or (port is not None and with_port in self.allow_hosts):
            return
        target = host if port is None else with_port
        raise loader.error(
            f"this {what} would connect to `{target}`, a host this load may not reach (a "
            f"config from elsewhere could make it talk to your internal services). Pass "
            f"`allow_hosts=[{host!r}]` to `load_component` if the config is trusted.",
            field,
        )

    def check(self, cls: type, config: Mapping[str, Any], loader: Loader) -> None:
        """Refuse ``config`` (a ``ComponentLoadError``) if building ``cls`` from it would
        do something this policy does not allow."""
        name = cls.__name__
        field = _PATH_FIELDS.get(name)
        if field is not None:
            self._check_path(config.get(field), field, name, loader)
        elif name == "McpWorkbench":
            self._check_command(config, loader)
            params = config.get("server_params")
            if isinstance(params, Mapping) and isinstance(params.get("url"), str):
                self.check_host(params["url"], "server_params.url", "MCP workbench", loader)
        elif name == "FunctionTool":
            self._check_function(config, loader)
        elif name == "RedisStore":
            host = config.get("host", "localhost")
            port = config.get("port", 6379)
            if isinstance(host, str):
                bracketed = f"[{host}]" if ":" in host else host
                address = f"redis://{bracketed}:{port}" if isinstance(port, int) else host
                self.check_host(address, "host", "RedisStore", loader)
        if isinstance(config.get("dsn"), str):
            self.check_host(config["dsn"], "dsn", name, loader)
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

    def _check_function(self, config: Mapping[str, Any], loader: Loader) -> None:
        if "source_code" in config:
            raise loader.error(
                "this FunctionTool config carries Python source code, and flowlib never "
                "executes code from a config. Dump the agent with flowlib (its function "
                "tools are then named by their import path) or build the tool in code."
            )
        function = config.get("function")
        if isinstance(function, str) and function not in self.allow_functions:
            raise loader.error(
                f"this FunctionTool would import and call the function `{function}`, which "
                f"this load may not import. Pass `allow_functions=[{function!r}]` to "
                "`load_component` if the config is trusted.",
                "function",
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


def _host_entry(entry: str) -> str:
    """An ``allow_hosts`` entry as hosts are compared: lower case, an IPv6 address
    without its brackets unless a port follows (``[::1]:8080``)."""
    entry = entry.lower()
    if entry.startswith("[") and entry.endswith("]"):
        return entry[1:-1]
    return entry


def _names(
    values: Iterable[str] | None, argument: str, pattern: re.Pattern[str], what: str
) -> frozenset[str]:
    if isinstance(values, str):
        values = [values]
    if values is not None and not isinstance(values, Iterable):
        raise ArgumentTypeError(
            f"{argument} must be a list of strings, not {values!r}.", argument=argument
        )
    names: set[str] = set()
    for index, value in enumerate(values or ()):
        if not isinstance(value, str):
            raise ArgumentTypeError(
                f"{argument}[{index}] must be {what}, not {value!r}.",
                argument=f"{argument}[{index}]",
            )
        if not pattern.fullmatch(value):
            raise InvalidArgumentError(
                f"{argument}[{index}] must be {what}, not {value!r}.",
                argument=f"{argument}[{index}]",
            )
        names.add(value)
    return frozenset(names)
