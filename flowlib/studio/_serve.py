"""``flowlib studio``: open the store, build the named flows, serve until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import ipaddress
import os
import secrets
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from .._english import a
from ..errors import FlowlibError, InvalidArgumentError, MissingExtraError
from ._data import Flow, Studio

__all__ = ["is_loopback", "load_flows", "register", "serve"]

_STORE_HELP = (
    "the checkpoint store: sqlite:///runs.db, postgresql://user@host/db (default: $FLOWLIB_STORE)"
)


def register(commands: Any) -> None:
    """Add ``flowlib studio`` to the parser (``commands``: its ``add_subparsers()``)."""
    default = os.environ.get("FLOWLIB_STORE") or None
    studio = commands.add_parser(
        "studio",
        help="a local web app to watch, steer and debug the runs of a store, live",
        description="Serve the studio: a web page listing the store's runs, showing one "
        "run live on its flow's drawing, answering its pending requests, resuming, forking "
        "and deleting runs, and starting runs of the flows named here. Loopback only "
        "unless --host says otherwise (then a token is required). Serves until "
        "interrupted (Ctrl-C); opens no browser.",
    )
    studio.add_argument(
        "flows",
        nargs="*",
        metavar="FILE.py:build",
        help="functions building the flows that can be started, resumed and forked from "
        "the page (each takes checkpoint_store=); runs of other flows can still be viewed",
    )
    studio.add_argument(
        "--store",
        metavar="URL",
        default=default,
        required=default is None,
        help=_STORE_HELP,
    )
    studio.add_argument(
        "--host",
        default="127.0.0.1",
        help="the interface to listen on (default 127.0.0.1, loopback only; any other "
        "needs the token the studio prints)",
    )
    studio.add_argument(
        "--port", type=int, default=8765, help="the port to listen on (default 8765; 0: any free)"
    )
    studio.add_argument(
        "--token",
        default=os.environ.get("FLOWLIB_STUDIO_TOKEN") or None,
        help="the token every request must carry (default: $FLOWLIB_STUDIO_TOKEN; generated "
        "on a non-loopback --host when not given)",
    )
    studio.set_defaults(handler=_cmd_studio)


def _cmd_studio(args: argparse.Namespace, out: TextIO) -> int:
    return serve(args.store, args.flows, host=args.host, port=args.port, token=args.token, out=out)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback name or address (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _need_extra() -> None:
    missing = [name for name in ("starlette", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtraError(
            f"flowlib studio needs {' and '.join(missing)}, which are not installed: "
            "pip install 'flowlib[studio]'"
        )


def _flow_name(reference: str, taken: set[str]) -> str:
    where, _, _ = reference.rpartition(":")
    stem = Path(where).stem if where.endswith(".py") else where.rsplit(".", 1)[-1]
    return stem if stem and stem not in taken else reference


def load_flows(references: Sequence[str], store: Any) -> list[Flow]:
    """Build each named flow once with ``store`` to learn its graph and signature."""
    from ..batch import build_team, resolve_factory
    from ..graph import graph_warnings, validate_graph

    flows: list[Flow] = []
    taken: set[str] = set()
    for reference in references:
        factory = resolve_factory(reference)
        team = build_team(factory, store)
        signature = getattr(team, "graph_signature", None)
        graph = getattr(team, "graph", None)
        if not isinstance(signature, str) or graph is None:
            raise InvalidArgumentError(
                f"{reference!r} builds {a(type(team).__name__)}, which is not a graph team "
                "with a checkpoint store; name a function returning a GraphFlow (or another "
                "graph team) built with checkpoint_store=",
                argument="flows",
            )
        findings = [f"[{w.kind}] {w}" for w in graph_warnings(graph, validate_graph(graph))]
        name = _flow_name(reference, taken)
        taken.add(name)
        flows.append(
            Flow(
                name=name,
                reference=reference,
                factory=factory,
                signature=signature,
                graph=graph,
                team_type=type(team).__name__,
                findings=findings,
            )
        )
    return flows


def _draw(graph: Any) -> str:
    from ..render import to_svg

    return to_svg(graph, title="")


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise InvalidArgumentError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another --port "
            "(0: any free one)",
            argument="port",
        ) from exc
    sock.listen(128)
    sock.setblocking(False)
    return sock


def serve(
    store_url: str,
    flows: Sequence[str] = (),
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    out: TextIO,
) -> int:
    """Serve the studio on ``host:port`` until interrupted; returns the exit code.

    Raises:
        MissingExtraError: Starlette or uvicorn is not installed (``flowlib[studio]``).
        InvalidArgumentError: The port cannot be bound, or a flow is not a graph team.
    """
    _need_extra()
    if not 0 <= port <= 65535:
        raise InvalidArgumentError(f"--port must be 0 to 65535, got {port}", argument="port")
    loopback = is_loopback(host)
    if not loopback and not token:
        token = secrets.token_urlsafe(24)
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host
    address = f"http://{shown}:{bound}/"
    hosts: set[str] | None = None
    if loopback:
        names = {shown.lower(), "127.0.0.1", "localhost", "[::1]"}
        hosts = {f"{name}:{bound}" for name in names}
    return asyncio.run(_serve(store_url, flows, sock, address, hosts, token, out))


async def _serve(
    store_url: str,
    references: Sequence[str],
    sock: socket.socket,
    address: str,
    hosts: set[str] | None,
    token: str | None,
    out: TextIO,
) -> int:
    import uvicorn

    from ..checkpoint import open_store
    from ._app import create_app

    store = open_store(store_url)
    try:
        studio = Studio(store, load_flows(references, store), draw=_draw)
        app = create_app(studio, hosts=hosts, token=token)
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2
        )
        server = uvicorn.Server(config)
        where = f"{address}?token={token}" if token else address
        print(f"flowlib studio: {where}", file=out, flush=True)
        if token:
            print("(the token is required: open the address above as it is)", file=out)
        print("Ctrl-C stops it.", file=out, flush=True)
        await server.serve(sockets=[sock])
        for task in list(studio.tasks.values()):
            task.cancel()
        return 0
    except FlowlibError:
        raise
    finally:
        await store.close()
