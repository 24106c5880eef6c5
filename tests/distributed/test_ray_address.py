"""A Ray address where nothing listens is a named error within ``connect_timeout``, not a
wait of minutes (no cluster is joined in this module)."""

from __future__ import annotations

import socket
import time

import pytest

ray = pytest.importorskip("ray")

from _batch_flows import build  # noqa: E402

from flowlib.distributed import RayRunner  # noqa: E402
from flowlib.errors import InvalidArgumentError, RayConnectionError  # noqa: E402

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("scheme", ["", "ray://"])
async def test_an_address_where_nothing_listens_raises_within_the_timeout(scheme: str) -> None:
    assert not ray.is_initialized()
    address = f"{scheme}127.0.0.1:{_free_port()}"
    runner = RayRunner(build, checkpoint_store=None, address=address, connect_timeout=2)
    started = time.monotonic()
    with pytest.raises(RayConnectionError, match="No Ray cluster answers at") as caught:
        await runner.start()
    assert time.monotonic() - started < 2 + 20
    assert isinstance(caught.value, InvalidArgumentError) and caught.value.argument == "address"
    assert not ray.is_initialized()


async def test_an_address_without_a_port_number_is_refused() -> None:
    runner = RayRunner(build, checkpoint_store=None, address="127.0.0.1:http")
    with pytest.raises(RayConnectionError, match="no port number"):
        await runner.start()
