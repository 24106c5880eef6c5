"""Joining a Ray cluster and placing the workers, each within a bounded time."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping
from typing import Any

import ray

from .._english import clause
from ..errors import RayClusterError, RayConnectionError, RayWorkersError

__all__ = ["check_reachable", "connect", "placeable", "wait_ready"]

_DEFAULT_PORTS = {"ray": 10001, "": 6379}


def _host_port(address: str) -> tuple[str, int] | None:
    """``host:port`` of an address (``ray://`` or a GCS address); None for ``auto``."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "", address
    if scheme not in _DEFAULT_PORTS or address in ("auto", "local"):
        return None
    rest = rest.split("/", 1)[0]
    host, colon, port = rest.rpartition(":")
    if not colon:
        return rest, _DEFAULT_PORTS[scheme]
    if not port.isdigit():
        raise RayConnectionError(
            f"`address` {address!r} has no port number after `:`; write `host:6379` or "
            "`ray://host:10001`.",
            argument="address",
        )
    return host.strip("[]"), int(port)


def check_reachable(address: str, timeout: float) -> None:
    """Refuse an address where nothing listens, within ``timeout`` seconds (Ray itself
    retries for minutes).

    Raises:
        RayConnectionError: If no TCP connection opens to the address's host and port.
    """
    target = _host_port(address)
    if target is None:
        return
    try:
        with socket.create_connection(target, timeout=timeout):
            pass
    except OSError as exc:
        raise RayConnectionError(
            f"No Ray cluster answers at `{address}` ({exc or type(exc).__name__}, within "
            f"{timeout:g} s). Start one (`ray start --head`), check the address and port "
            "(6379 for a head node, 10001 for `ray://`), or pass `address=None` for a "
            "local cluster.",
            argument="address",
        ) from exc


def connect(
    address: str | None,
    *,
    timeout: float,
    include_dashboard: bool | None,
    log_to_driver: bool,
    runtime_env: dict[str, Any] | None = None,
) -> bool:
    """Join the cluster at ``address`` (or start a local one); True if this call did.

    Raises:
        RayConnectionError: If nothing answers at the address.
    """
    if ray.is_initialized():
        return False
    if address is not None:
        check_reachable(address, timeout)
    options: dict[str, Any] = {"log_to_driver": log_to_driver}
    if include_dashboard is not None:
        options["include_dashboard"] = include_dashboard
    if runtime_env is not None:
        options["runtime_env"] = runtime_env  # the job's: local folders are uploaded
    try:
        ray.init(address=address, **options)
    except ConnectionError as exc:
        raise RayConnectionError(
            f"No Ray cluster at `{address}`: {clause(exc)}. Start one (`ray start --head`), or "
            "pass `address=None` for a local cluster.",
            argument="address",
        ) from exc
    except Exception as exc:  # Ray raises a bare Exception when a node does not start
        ray.shutdown()
        where = "a local Ray cluster" if address is None else f"the Ray cluster at `{address}`"
        raise RayClusterError(
            f"Could not start or join {where}: {clause(exc)}. Ray gives up after timeouts "
            "of its own (30 s for a node to start, or to connect through Ray Client), which "
            "an overloaded machine can miss: try again."
        ) from exc
    if address is None:  # a local cluster of this process: gone with it, even if killed
        from ._reaper import start_reaper

        start_reaper()
    return True


def placeable(count: int, per_worker: Mapping[str, float]) -> None:
    """Refuse more workers than the cluster's resources can hold at all.

    Raises:
        RayWorkersError: If ``count`` workers need more of a resource than the whole
            cluster has.
    """
    total: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    for name, amount in per_worker.items():
        if amount > 0 and count * amount > total.get(name, 0.0) + 1e-9:
            have = total.get(name, 0.0)
            raise RayWorkersError(
                f"{count} workers need {count * amount:g} `{name}` ({amount:g} each) but "
                f"the cluster has {have:g} in all; ask for fewer `workers`, less "
                f"`{name}` per worker, or add nodes."
            )


async def wait_ready(
    actors: list[Any], timeout: float, per_worker: Mapping[str, float]
) -> list[str | None]:
    """Each worker's ``check()`` answer (None: it built a team), waiting at most
    ``timeout`` seconds for all of them.

    Raises:
        RayWorkersError: If some worker did not answer in time (it could not be placed,
            its runtime environment is still being set up, or the factory hangs).
    """
    from ._dispatch import _awaited

    calls = [asyncio.ensure_future(_awaited(actor.check.remote())) for actor in actors]
    _, pending = await asyncio.wait(calls, timeout=timeout)
    for call in pending:
        call.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
        available: dict[str, float] = ray.available_resources()  # type: ignore[no-untyped-call]
        wanted = ", ".join(f"{amount:g} {name}" for name, amount in per_worker.items() if amount)
        free = ", ".join(
            f"{available.get(name, 0.0):g} {name}" for name, amount in per_worker.items() if amount
        )
        raise RayWorkersError(
            f"{len(pending)} of {len(actors)} Ray workers were not ready after "
            f"{timeout:g} s (each asks for {wanted}; the cluster has {free} free now). A "
            "worker waits when no node has room for it (other jobs hold the resources), "
            "while its `runtime_env` is being installed, or when the factory hangs. Raise "
            "`ready_timeout`, ask for less, or check the factory."
        )
    answers: list[str | None] = []
    for call in calls:
        exc = call.exception()
        if exc is not None:
            answers.append(f"{type(exc).__name__}: {exc}")
        else:
            answers.append(call.result())
    return answers
