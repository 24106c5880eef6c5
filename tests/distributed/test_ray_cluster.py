"""A two-node Ray cluster on this machine (``ray start --head`` plus ``ray start
--address`` with resources of its own): Ray Client (``ray://``) streams, workers go where
their resources are, a node killed mid-batch leaves its runs to the other node, and
``runtime_env`` ships code (``working_dir``) and installs packages (``pip``)."""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import functools
import hashlib
import importlib.util
import os
import signal
import socket
import subprocess
import sysconfig
import tempfile
import time
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from _batch_flows import NODES, build, lines, transcript  # noqa: E402

from flowlib.base import TaskResult  # noqa: E402
from flowlib.distributed import RayRunner  # noqa: E402
from flowlib.errors import RayClusterError  # noqa: E402

pytestmark = pytest.mark.slow

TESTS = Path(__file__).parents[1]
ROOT = TESTS.parent


def _small_virtualenv(folder: Path) -> str:
    """A virtualenv of a few files that sees this one's packages (a ``.pth`` file), and
    its ``ray`` command.

    The nodes run from it: Ray builds a ``pip`` runtime environment by copying the
    virtualenv its node runs in, and this project's is 786 MB (two such copies at once
    failed here). A copy of this one is a few kilobytes, and still sees every package.
    """
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    python = folder / "bin" / "python"
    found = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    packages = sysconfig.get_paths()["purelib"]
    Path(found.stdout.strip(), "flowlib_tests_packages.pth").write_text(packages + "\n", "utf-8")
    ray_command = folder / "bin" / "ray"
    ray_command.write_text(
        f"#!{python}\nimport sys\nfrom ray.scripts.scripts import main\nsys.exit(main())\n",
        encoding="utf-8",
    )
    ray_command.chmod(0o755)
    return str(ray_command)


_GIVEN: set[int] = set()


def _free_port() -> int:
    """A free port not given before in this process: the kernel may hand the same free
    port out twice in a row, and Ray refuses a node whose components share one (seen:
    ``dashboard_agent_http`` and ``dashboard_agent_grpc`` both on 44235)."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


def _node_ports() -> list[str]:
    # Each node's agents get ports of their own: two nodes share this machine (and
    # other clusters may run on it), so Ray's fixed defaults would collide.
    return [
        f"--dashboard-agent-listen-port={_free_port()}",
        f"--dashboard-agent-grpc-port={_free_port()}",
        f"--metrics-export-port={_free_port()}",
        f"--runtime-env-agent-port={_free_port()}",
    ]


def _pids_with(text: str) -> list[int]:
    """Processes whose command line mentions ``text`` (this cluster's temp dir), or that
    hold a file under it open: Ray's agents rename themselves (``ray::DashboardAgent``)
    and, missed, lived on for about 70 s after the cluster, using CPU."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                if text.encode() in file.read() or _holds_file_in(int(entry), text):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _holds_file_in(pid: int, folder: str) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(folder):
                return True
    return False


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/task/{current}/children", encoding="ascii") as file:
                children = [int(child) for child in file.read().split()]
        except OSError:
            continue
        found += children
        todo += children
    return found


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            return file.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@dataclass
class TwoNodes:
    address: str
    client: str
    side: subprocess.Popen[bytes]
    temp: str


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[TwoNodes]:
    """Head: 1 CPU and resource ``head``; second node: 1 CPU and resource ``side``."""
    temp = tempfile.mkdtemp(prefix="frc", dir="/tmp")  # short: Ray puts sockets in it
    ray_command = _small_virtualenv(Path(temp, "venv"))
    port, client = _free_port(), _free_port()
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{TESTS}", "RAY_USAGE_STATS_ENABLED": "0"}
    # A driver joining a `ray start` cluster sends no token unless told to: this test
    # cluster runs without Ray's token authentication.
    env["RAY_AUTH_MODE"] = "disabled"
    head = [ray_command, "start", "--head", f"--port={port}", f"--ray-client-server-port={client}"]
    head += ["--num-cpus=1", '--resources={"head": 1}', f"--temp-dir={temp}"]
    head += ["--include-dashboard=false", *_node_ports()]
    side: subprocess.Popen[bytes] | None = None
    # This process joins without a token too: a local `ray.init()` earlier in the same
    # process (another module's cluster) turns Ray's token mode on in os.environ, and a
    # driver in token mode sees this cluster's calls as unauthorized.
    auth_mode = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    try:
        for attempt in range(3):  # Ray gives a node 30 s to start: few on a loaded machine
            done = subprocess.run(head, env=env, timeout=240, capture_output=True)
            if done.returncode == 0:
                break
            _stop(temp)
            if attempt == 2:
                raise AssertionError(f"`ray start --head` failed:\n{done.stderr.decode()}")
        second = [ray_command, "start", f"--address=127.0.0.1:{port}", "--num-cpus=1"]
        second += ['--resources={"side": 1}', "--block", *_node_ports()]
        side = subprocess.Popen(
            second, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        # Both nodes in the cluster before any test asks for their resources.
        ray.init(address=f"127.0.0.1:{port}", logging_level="WARNING")
        try:
            joined = _wait_for_nodes(2, timeout=180)
        finally:
            ray.shutdown()
        assert set(joined) == {"head", "side"}, f"the second node did not join: {joined}"
        yield TwoNodes(f"127.0.0.1:{port}", f"ray://127.0.0.1:{client}", side, temp)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if side is not None and side.poll() is None:
            side.terminate()  # `ray start --block` stops its node's processes
            try:
                side.wait(60)
            except subprocess.TimeoutExpired:
                side.kill()
        _stop(temp)
        if auth_mode is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = auth_mode


def _stop(temp: str) -> None:
    """Stop this cluster's processes (by their ids: never `ray stop`, which would stop
    every Ray cluster on the machine)."""
    for signum, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        for pid in _pids_with(temp):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
        # Until they are gone, at most 2 s for SIGTERM as before (some of Ray's processes
        # outlive it, and a longer grace cost 10 s), not a fixed 2 s after each signal.
        deadline = time.monotonic() + grace
        while _pids_with(temp) and time.monotonic() < deadline:
            time.sleep(0.1)


def _wait_for_nodes(count: int, timeout: float = 120) -> dict[str, str]:
    """The alive nodes' ids by their custom resource (``head``/``side``)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [n for n in ray.nodes() if n["Alive"]]  # type: ignore[no-untyped-call]
        names = {
            name: n["NodeID"] for n in alive for name in ("head", "side") if name in n["Resources"]
        }
        if len(names) >= count or time.monotonic() > deadline:
            return names
        time.sleep(0.5)


async def _stats(actor: object) -> dict[str, int]:
    """A worker's run counts; none for a worker that is gone (or restarting)."""
    call = actor.stats.remote()  # type: ignore[attr-defined]
    try:
        return dict(await asyncio.wait_for(asyncio.wrap_future(call.future()), 30))
    except (ray.exceptions.RayError, TimeoutError):
        return {"resumed": 0, "finished_before": 0}


async def reference(tasks: list[str]) -> list[list[str]]:
    return [transcript((await build(think=0).run(task=task)).messages) for task in tasks]


@pytest.mark.timeout(1200)
async def test_ray_client_streams_every_method(two_nodes: TwoNodes) -> None:
    tasks = [f"c{i}" for i in range(12)]
    runner = RayRunner(
        build, checkpoint_store=None, address=two_nodes.client, workers=1, max_concurrency=4
    )
    for attempt in range(3):
        try:
            await runner.start()
            break
        except RayClusterError:  # Ray Client's own connect timeout, on a loaded machine
            if attempt == 2:
                raise
    async with runner:
        events = [e async for e in runner.stream_many(tasks, run_ids=tasks)]
        results = await runner.run_many(tasks[:3])
    assert not ray.is_initialized()  # the runner connected, so it disconnected
    finals = {e.run_id: e.item for e in events if e.done}
    assert sorted(finals) == sorted(tasks)
    for run_id in tasks:
        mine = [e for e in events if e.run_id == run_id]
        assert [e.done for e in mine] == [False] * (len(mine) - 1) + [True]
        assert transcript([e.item for e in mine[:-1]])[-1] == f"join:join|{run_id}"
    assert [transcript(r.messages) for r in results] == await reference(tasks[:3])  # type: ignore[union-attr]


@pytest.mark.timeout(1800)
async def test_workers_go_where_their_resources_are_and_a_killed_node_leaves_its_runs(
    two_nodes: TwoNodes, tmp_path: Path
) -> None:
    address = two_nodes.address
    # Placement by resources: one worker asking for `side`, then one asking for `head`.
    placed = {}
    for name in ("side", "head"):
        async with RayRunner(
            build, checkpoint_store=None, address=address, workers=1, resources={name: 1}
        ) as runner:
            nodes = _wait_for_nodes(2)
            assert set(nodes) == {"head", "side"}, nodes
            placed[name] = (await runner.actors[0].node.remote(), nodes[name])
    assert placed["side"][0] == placed["side"][1] and placed["head"][0] == placed["head"][1]

    # A batch over both nodes; the second node dies (its raylet SIGKILLed) mid-batch.
    tasks = [f"n{i}" for i in range(60)]
    store = f"sqlite:///{tmp_path}/runs.db"
    factory = functools.partial(build, log_dir=str(tmp_path))
    runner = RayRunner(
        factory,
        checkpoint_store=store,
        address=address,
        workers=2,
        max_concurrency=5,
        lost_after=5,
    )
    async with runner:
        where = [await actor.node.remote() for actor in runner.actors]
        nodes = _wait_for_nodes(2)
        assert sorted(where) == sorted(nodes.values())  # spread: one worker per node
        batch = runner.run_many(tasks, run_ids=tasks)
        running = asyncio.ensure_future(batch)
        while len(lines(tmp_path, "ends.txt")) < 60:
            assert not running.done(), "the batch ended before the node could be killed"
            await asyncio.sleep(0.01)
        # The whole node dies: its raylet and every process under it, the worker
        # included (a worker outlives its raylet for a while and could finish its runs).
        doomed = _descendants(two_nodes.side.pid)
        assert any("raylet" in _cmdline(p) for p in doomed), (
            "the second node's raylet was not found"
        )
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        results = await running
        # Whichever worker still answers (the head's, or the side's restarted on the
        # head node) took up the runs the dead node lost.
        stats = [await _stats(actor) for actor in runner.actors]
    failures = [r.traceback for r in results if not isinstance(r, TaskResult)]
    assert not failures, "\n".join(failures)
    assert [transcript(r.messages) for r in results] == await reference(tasks)
    ends = collections.Counter(lines(tmp_path, "ends.txt"))
    assert sorted(ends) == sorted(f"{t} {n}" for t in tasks for n in NODES)
    assert max(ends.values()) <= 2  # only turns in flight on the dead node ran again
    # A worker on the surviving node took the dead node's runs up from their checkpoints.
    assert sum(s["resumed"] + s["finished_before"] for s in stats) > 0, stats


@pytest.mark.timeout(1200)
async def test_runtime_env_working_dir_ships_the_factory_to_the_workers(
    two_nodes: TwoNodes, tmp_path: Path
) -> None:
    folder = tmp_path / "shipped"
    folder.mkdir()
    (folder / "shipped_flows.py").write_text(
        "from _batch_flows import build as _build\n\n\n"
        "def build(*, checkpoint_store=None):\n"
        "    return _build(checkpoint_store=checkpoint_store, think=0)\n",
        encoding="utf-8",
    )
    env = {"working_dir": str(folder)}
    # A module of the working_dir (on no worker's path), and a file in it named by its
    # path on this machine (the workers find it in their copy of the folder).
    for factory in ("shipped_flows:build", f"{folder}/shipped_flows.py:build"):
        runner = RayRunner(
            factory,
            checkpoint_store=None,
            address=two_nodes.address,
            workers=1,
            resources={"head": 1},
            runtime_env=env,
        )
        async with runner:
            [result] = await runner.run_many(["shipped"])
        assert transcript(result.messages)[-1] == "join:join|shipped"  # type: ignore[union-attr]


def _wheel(folder: Path, name: str, version: str, module: str, source: str) -> Path:
    """A wheel of one module, written here (no build tool, no index)."""
    dist = f"{name.replace('-', '_')}-{version}"
    files = {
        f"{module}.py": source.encode(),
        f"{dist}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
        ),
        f"{dist}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: flowlib-tests\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


@pytest.mark.timeout(1200)
async def test_runtime_env_pip_installs_a_package_for_the_workers(
    two_nodes: TwoNodes, tmp_path: Path
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "flowlib-pip-probe", "1.0", "flowlib_pip_probe", "VALUE = 'from pip'\n")
    assert importlib.util.find_spec("flowlib_pip_probe") is None  # installed nowhere yet
    flows = tmp_path / "pip_flows.py"
    flows.write_text(
        "from flowlib.agents import FunctionAgent\n"
        "from flowlib.teams import RoundRobinGroupChat\n\n\n"
        "def build(*, checkpoint_store=None):\n"
        "    import flowlib_pip_probe  # only in the runtime environment\n\n"
        "    async def answer(messages):\n"
        "        return f'{flowlib_pip_probe.VALUE} {flowlib_pip_probe.__file__}'\n\n"
        "    return RoundRobinGroupChat([FunctionAgent(answer, name='probe')], max_turns=1)\n",
        encoding="utf-8",
    )
    # Ray's pip plugin with pip's own options: the wheel from a folder, no index.
    pip = {
        "packages": ["flowlib-pip-probe==1.0"],
        "pip_install_options": ["--no-index", "--find-links", str(wheels), "--no-cache-dir"],
    }
    runner = RayRunner(
        f"{flows}:build",
        checkpoint_store=None,
        address=two_nodes.address,
        workers=1,
        resources={"head": 1},
        # Built where a worker needs it (not on every node as the job starts).
        runtime_env={"pip": pip, "config": {"eager_install": False}},
    )
    async with runner:
        [result] = await runner.run_many(["which"])
    value, where = result.messages[-1].content.rsplit(" ", 1)  # type: ignore[union-attr]
    assert value == "from pip"
    # Installed into the environment Ray built for the job, under the cluster's folder.
    assert where.startswith(two_nodes.temp) and "/runtime_resources/pip/" in where, where
