"""Benchmark shapes, their sizes, and the measuring code shared by every framework.

A *peer* module (``bench/peers/*.py``) only knows how to build and run a shape on its
framework; everything that is timed or measured is timed or measured here, the same
way for every framework.

Peer module interface (module-level names):

``NAME``                      short key ("flowlib", "autogen", "langgraph")
``LABEL``                     human name shown in the report
``version() -> str``          imports the framework lazily; raises ImportError if missing
``make_chain(n)``             -> Runner for a chain A1 -> ... -> An of instant agents
``make_loop(iterations)``     -> Runner for A <-> B looping ``iterations`` times, then
                                 B -> X (exit) when B says "DONE" (2*iterations+1 turns)
``make_branches(branches)``   -> Runner for ``src -> [branch_1 | ... | branch_k] -> join``,
                                 each branch a list of per-agent sleep times in seconds;
                                 the join runs once, after every branch
``make_roundrobin(turns)``    -> Runner for a round-robin team of two instant agents A, B
                                 (A, B, A, ...) stopped after ``turns`` agent turns
``make_swarm(turns)``         -> Runner for a swarm of two instant agents that hand off to
                                 each other every turn (A -> B -> A ...), stopped after
                                 ``turns`` agent turns
``prepare_validation(spec)``  -> ``populate``: a zero-argument callable that puts the graph
                                 described by the :class:`GraphSpec` into the framework's
                                 builder (add_node/add_edge...) and returns ``finish``, a
                                 zero-argument callable that builds and validates it
                                 (AutoGen/flowlib: ``DiGraphBuilder.build()``, LangGraph:
                                 ``StateGraph.compile()``). Agent objects are created
                                 beforehand, outside the timed calls.
``NOTES``                     optional list of strings printed under the report

A Runner is ``async () -> int``: it runs the already-built team/graph once on the task
"go" and returns the number of agent turns that actually ran (checked against the
expected number, so a framework that silently skips work cannot look fast).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import random
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Runner = Callable[[], Awaitable[int]]

SHAPES = (
    "chain",
    "loop",
    "fanout",
    "map",
    "uneven",
    "validate",
    "memory",
    "roundrobin",
    "swarm",
    "longrun",
    "durablerun",
    "msgmem",
    "realclient",
)


# --------------------------------------------------------------------------- sizes


@dataclass(frozen=True)
class Sizes:
    chain_nodes: int
    chain_repeats: int
    loop_iterations: int
    loop_repeats: int
    fanout_workers: int
    fanout_sleep: float
    fanout_repeats: int
    uneven_repeats: int
    validate_chains: tuple[int, ...]
    validate_dag_nodes: int
    validate_repeats: int
    memory_turns: tuple[int, ...]
    roundrobin_turns: int
    swarm_turns: int
    team_repeats: int
    longrun_turns: int = 5_000
    msgmem_turns: int = 1_000
    realclient_turns: tuple[int, ...] = (150, 1_000)
    map_items: int = 100
    map_sleep: float = 0.05
    map_concurrency: int = 10
    map_repeats: int = 3


FULL = Sizes(
    chain_nodes=200,
    chain_repeats=5,
    loop_iterations=250,
    loop_repeats=5,
    fanout_workers=50,
    fanout_sleep=0.2,
    fanout_repeats=3,
    uneven_repeats=3,
    validate_chains=(5_000, 100_000),
    validate_dag_nodes=10_000,
    validate_repeats=3,
    memory_turns=(2_500, 5_000, 10_000),
    roundrobin_turns=200,
    swarm_turns=200,
    team_repeats=5,
)

QUICK = Sizes(
    chain_nodes=50,
    chain_repeats=2,
    loop_iterations=50,
    loop_repeats=2,
    fanout_workers=20,
    fanout_sleep=0.2,
    fanout_repeats=1,
    uneven_repeats=1,
    validate_chains=(1_000, 10_000),
    validate_dag_nodes=2_000,
    validate_repeats=1,
    memory_turns=(500, 1_000, 2_000),
    roundrobin_turns=50,
    swarm_turns=50,
    team_repeats=2,
    longrun_turns=1_000,
    msgmem_turns=300,
    realclient_turns=(50, 150),
    map_repeats=1,
)

# Uneven branches: source -> [branch] ... -> join. Sleep times in seconds.
# "uneven" is the shape as specified: long branch 3 x 0.1 s, short branch 0.05 s + 0.05 s.
# "uneven_skewed" keeps the same 0.3 s critical path but puts the long step first on the
# short branch (0.25 s + 0.05 s). An executor that runs level by level (waits for every
# node of a "superstep" before starting the next) needs 0.25 + 0.1 + 0.1 = 0.45 s here,
# while an eager executor needs 0.3 s; on the "uneven" shape both need 0.3 s.
UNEVEN_BRANCHES: dict[str, list[list[float]]] = {
    "uneven": [[0.1, 0.1, 0.1], [0.05, 0.05]],
    "uneven_skewed": [[0.1, 0.1, 0.1], [0.25, 0.05]],
}


def critical_path(branches: Sequence[Sequence[float]]) -> float:
    return max(sum(b) for b in branches)


# ------------------------------------------------------------------ graph specs


@dataclass
class GraphSpec:
    """A framework-neutral graph for the validation shape.

    ``edges`` are ``(source, target, condition)`` with ``condition`` ``None`` for an
    unconditional edge or a keyword string. A node with any conditional out-edge has
    only conditional out-edges (AutoGen rejects a mix).
    """

    name: str
    nodes: list[str]
    edges: list[tuple[str, str, str | None]]
    entry: str
    back_edges: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


def chain_spec(n: int) -> GraphSpec:
    nodes = [f"n{i}" for i in range(n)]
    edges: list[tuple[str, str, str | None]] = [
        (nodes[i], nodes[i + 1], None) for i in range(n - 1)
    ]
    return GraphSpec(name=f"chain {n:,}", nodes=nodes, edges=edges, entry=nodes[0])


def random_dag_spec(n: int, seed: int = 1234) -> GraphSpec:
    """A random DAG on ``n`` nodes (in topological order n0..n{n-1}) plus conditional
    back-edges.

    * every node but n0 gets one edge from a uniformly chosen earlier node, so every
      node is reachable from the entry n0;
    * ``n`` more random forward edges (about 2n edges in all);
    * ``n // 100`` conditional back-edges ``b -> a`` (a < b). Every out-edge of a node
      that has a back-edge is conditional: back-edges on "BACK", the node's forward
      edges on "FWD". So every cycle has a conditional edge and the graph is valid.
    """
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(n)]
    forward: set[tuple[int, int]] = set()
    for i in range(1, n):
        forward.add((rng.randrange(i), i))
    for _ in range(n):
        a, b = rng.randrange(n), rng.randrange(n)
        if a != b:
            forward.add((min(a, b), max(a, b)))
    back: set[tuple[int, int]] = set()
    # back-edge sources: never the last node, so leaves (nodes without out-edges) remain
    while len(back) < n // 100:
        b = rng.randrange(1, n - 1)
        a = rng.randrange(b)
        back.add((b, a))
    conditional_sources = {b for b, _ in back}
    edges: list[tuple[str, str, str | None]] = []
    for a, b in sorted(forward):
        edges.append((nodes[a], nodes[b], "FWD" if a in conditional_sources else None))
    for b, a in sorted(back):
        edges.append((nodes[b], nodes[a], "BACK"))
    return GraphSpec(
        name=f"random DAG {n:,}",
        nodes=nodes,
        edges=edges,
        entry=nodes[0],
        back_edges=len(back),
        meta={"edges": len(edges), "back_edges": len(back), "seed": seed},
    )


# ------------------------------------------------------------------ result rows


@dataclass
class Row:
    """One figure of one framework. ``key`` is the same for every framework."""

    key: str
    label: str
    unit: str
    value: float | None = None
    error: str | None = None
    detail: str = ""
    extra: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "unit": self.unit,
            "value": self.value,
            "error": self.error,
            "detail": self.detail,
            "extra": self.extra,
        }


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = text[:160]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _check_turns(got: int, expected: int, what: str) -> None:
    if got != expected:
        raise RuntimeError(f"{what}: expected {expected} agent turns, the run produced {got}")


async def _best_wall(
    make: Callable[[], Runner],
    repeats: int,
    expected_turns: int,
    what: str,
    *,
    built: bool = False,
) -> float:
    """The best wall time of ``repeats`` runs; with ``built``, each timed from before
    the team is constructed (agents, builder, graph, team), not just its run."""
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        if not built:
            runner = make()
            gc.collect()
            t0 = time.perf_counter()
        else:
            runner = make()
        turns = await runner()
        dt = time.perf_counter() - t0
        _check_turns(turns, expected_turns, what)
        best = min(best, dt)
        del runner
    return best


# ---------------------------------------------------------------------- shapes


async def run_chain(peer: Any, sizes: Sizes) -> list[Row]:
    n = sizes.chain_nodes
    rows = []
    for built in (False, True):
        key = "chain_built" if built else "chain"
        label = f"chain {n} nodes" + (", construction included" if built else "")
        row = Row(key, label, "ms/turn")
        try:
            wall = await _best_wall(
                lambda: peer.make_chain(n), sizes.chain_repeats, n, "chain", built=built
            )
            row.value = wall / n * 1000.0
            row.detail = f"best of {sizes.chain_repeats}: {wall * 1000:.1f} ms for {n} turns"
        except Exception as exc:
            row.error = _reason(exc)
        rows.append(row)
    return rows


async def run_loop(peer: Any, sizes: Sizes) -> list[Row]:
    it = sizes.loop_iterations
    turns = 2 * it + 1
    rows = []
    for built in (False, True):
        key = "loop_built" if built else "loop"
        label = f"loop A<->B x{it} (+exit)" + (", construction included" if built else "")
        row = Row(key, label, "ms/turn")
        try:
            wall = await _best_wall(
                lambda: peer.make_loop(it), sizes.loop_repeats, turns, "loop", built=built
            )
            row.value = wall / turns * 1000.0
            row.detail = f"best of {sizes.loop_repeats}: {wall * 1000:.1f} ms for {turns} turns"
        except Exception as exc:
            row.error = _reason(exc)
        rows.append(row)
    return rows


async def run_fanout(peer: Any, sizes: Sizes) -> list[Row]:
    k, s = sizes.fanout_workers, sizes.fanout_sleep
    rows = []
    for built in (False, True):
        key = "fanout_built" if built else "fanout"
        label = f"fan-out {k} x {s}s + join" + (", construction included" if built else "")
        row = Row(key, label, "wall/ideal")
        try:
            branches = [[s] for _ in range(k)]
            wall = await _best_wall(
                functools.partial(peer.make_branches, branches),
                sizes.fanout_repeats,
                k + 2,
                "fanout",
                built=built,
            )
            row.value = wall / s
            row.detail = f"best of {sizes.fanout_repeats}: {wall:.3f} s (ideal {s} s)"
        except Exception as exc:
            row.error = _reason(exc)
        rows.append(row)
    return rows


async def run_map(peer: Any, sizes: Sizes) -> list[Row]:
    """Map-reduce over a list decided at run time: ``map_items`` workers of
    ``map_sleep`` seconds, at most ``map_concurrency`` at once. The ideal is the bound's
    waves: ceil(items / concurrency) x sleep."""
    n, s, c = sizes.map_items, sizes.map_sleep, sizes.map_concurrency
    row = Row("map", f"map {n} items x {s}s, {c} at once + reduce", "wall/ideal")
    if not hasattr(peer, "make_map"):
        row.error = "no dynamic fan-out (a list decided at run time)"
        return [row]
    ideal = -(-n // c) * s
    try:
        wall = await _best_wall(lambda: peer.make_map(n, s, c), sizes.map_repeats, n, "map")
        row.value = wall / ideal
        row.detail = f"best of {sizes.map_repeats}: {wall:.3f} s (ideal {ideal:.2f} s)"
    except Exception as exc:
        row.error = _reason(exc)
    return [row]


async def run_uneven(peer: Any, sizes: Sizes) -> list[Row]:
    rows = []
    for key, branches in UNEVEN_BRANCHES.items():
        cp = critical_path(branches)
        desc = " | ".join("+".join(f"{d:g}" for d in b) for b in branches)
        row = Row(key, f"{key.replace('_', ' ')} [{desc}]", "wall/crit")
        try:
            turns = sum(len(b) for b in branches) + 2
            wall = await _best_wall(
                functools.partial(peer.make_branches, branches), sizes.uneven_repeats, turns, key
            )
            row.value = wall / cp
            row.detail = f"best of {sizes.uneven_repeats}: {wall:.3f} s (critical path {cp:g} s)"
        except Exception as exc:
            row.error = _reason(exc)
        rows.append(row)
    return rows


async def run_validate(peer: Any, sizes: Sizes) -> list[Row]:
    specs = [chain_spec(n) for n in sizes.validate_chains]
    specs.append(random_dag_spec(sizes.validate_dag_nodes))
    rows = []
    for spec in specs:
        key = "validate_" + spec.name.replace(" ", "_").replace(",", "").lower()
        row = Row(key, f"build+validate {spec.name}", "s")
        if spec.back_edges:
            row.label += f" ({spec.meta['edges']:,} edges, {spec.back_edges} cond. back)"
        try:
            repeats = 1 if len(spec.nodes) > 20_000 else sizes.validate_repeats
            best = (float("inf"), 0.0)
            for _ in range(repeats):
                populate = peer.prepare_validation(spec)
                gc.collect()
                t0 = time.perf_counter()
                finish = populate()
                t1 = time.perf_counter()
                finish()
                t2 = time.perf_counter()
                best = min(best, (t2 - t0, t2 - t1))
                del populate, finish
            row.value = best[0]
            row.extra = {"validate_s": best[1], "populate_s": best[0] - best[1]}
            row.detail = (
                f"best of {repeats}: add_*() {best[0] - best[1]:.3f} s + "
                f"build/compile {best[1]:.3f} s"
            )
        except RecursionError as exc:
            row.error = f"failed: RecursionError ({exc})"
        except Exception as exc:
            row.error = "failed: " + _reason(exc)
        finally:
            gc.collect()
        rows.append(row)
    return rows


async def run_memory(peer: Any, sizes: Sizes) -> list[Row]:
    rows = []
    for turns_wanted in sizes.memory_turns:
        it = turns_wanted // 2
        turns = 2 * it + 1
        row = Row(f"memory_{turns_wanted}", f"peak memory, loop {turns_wanted:,} turns", "MiB")
        try:
            runner = peer.make_loop(it)
            gc.collect()
            tracemalloc.start()
            try:
                got = await runner()
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            _check_turns(got, turns, "memory loop")
            row.value = peak / (1024 * 1024)
            row.detail = f"tracemalloc peak during run(), {turns} turns"
            del runner
        except Exception as exc:
            row.error = _reason(exc)
        rows.append(row)
    return rows


async def _run_team(
    key: str, label: str, make: Callable[[int], Runner], turns: int, repeats: int
) -> list[Row]:
    row = Row(key, label, "ms/turn")
    try:
        wall = await _best_wall(lambda: make(turns), repeats, turns, key)
        row.value = wall / turns * 1000.0
        row.detail = f"best of {repeats}: {wall * 1000:.1f} ms for {turns} turns"
    except Exception as exc:
        row.error = _reason(exc)
    return [row]


async def run_roundrobin(peer: Any, sizes: Sizes) -> list[Row]:
    n = sizes.roundrobin_turns
    label = f"round-robin A,B x{n} turns"
    return await _run_team("roundrobin", label, peer.make_roundrobin, n, sizes.team_repeats)


async def run_swarm(peer: Any, sizes: Sizes) -> list[Row]:
    n = sizes.swarm_turns
    label = f"swarm A->B->A handoffs x{n} turns"
    return await _run_team("swarm", label, peer.make_swarm, n, sizes.team_repeats)


# ------------------------------------------------- model-backed agents (issue 15)

WINDOW = 100  # turns averaged at the start and at the end of a long run


def _window_ms(stamps: Sequence[float], start: float, first: int, last: int) -> tuple[float, float]:
    """Median and mean ms per turn over turns ``first+1 .. last`` (1-based; turn 0 ends
    at ``start``)."""
    ends = list(stamps[first:last])
    begins = [start if first == 0 else stamps[first - 1], *stamps[first : last - 1]]
    times = sorted((end - begin) * 1000.0 for begin, end in zip(begins, ends, strict=True))
    middle = len(times) // 2
    median = times[middle] if len(times) % 2 else (times[middle - 1] + times[middle]) / 2
    return median, sum(times) / len(times)


async def _growth_rows(
    key: str, label: str, n: int, make: Callable[[], Callable[[], Awaitable[list[float]]]]
) -> list[Row]:
    """Median turn time over the first and the last ``WINDOW`` turns of an ``n``-turn run
    made by ``make()``, and their ratio."""
    first = Row(f"{key}_first", f"{label}: median turn, 1-{WINDOW}", "ms/turn")
    last = Row(f"{key}_last", f"  ... median turn, {n - WINDOW + 1:,}-{n:,} of {n:,}", "ms/turn")
    growth = Row(f"{key}_growth", "  ... last / first", "x")
    rows = [first, last, growth]
    try:
        runner = make()
        gc.collect()
        start = time.perf_counter()
        stamps = await runner()
        _check_turns(len(stamps), n, key)
        first.value, first_mean = _window_ms(stamps, start, 0, WINDOW)
        last.value, last_mean = _window_ms(stamps, start, n - WINDOW, n)
        growth.value = last.value / first.value
        total = stamps[-1] - start
        first.detail = f"median; mean {first_mean:.3f} ms; {n:,} turns in {total:.2f} s"
        last.detail = f"median; mean {last_mean:.3f} ms"
        growth.detail = f"of the medians; of the means {last_mean / first_mean:.2f}x"
        del runner
    except Exception as exc:
        for row in rows:
            row.error = _reason(exc)
    return rows


async def run_longrun(peer: Any, sizes: Sizes) -> list[Row]:
    if not hasattr(peer, "make_assistant_loop"):
        return []
    n = sizes.longrun_turns
    label = "2 assistants, replay"
    return await _growth_rows("longrun", label, n, lambda: peer.make_assistant_loop(n))


async def run_durablerun(peer: Any, sizes: Sizes) -> list[Row]:
    """The ``longrun`` team with a checkpoint after every turn (SQLite): flowlib only, the
    peers' agent teams have no per-turn checkpointer."""
    if not hasattr(peer, "make_durable_assistant_loop"):
        return []
    n = sizes.longrun_turns
    label = "  ... checkpointed (SQLite)"
    with tempfile.TemporaryDirectory(prefix="flowlib-bench-") as folder:
        return await _growth_rows(
            "durablerun", label, n, lambda: peer.make_durable_assistant_loop(n, folder)
        )


async def run_msgmem(peer: Any, sizes: Sizes) -> list[Row]:
    n = sizes.msgmem_turns
    row = Row("msgmem", "2 assistants, replay client: memory kept per message", "B/msg")
    if not hasattr(peer, "make_assistant_loop"):
        return []
    try:
        kept: list[int] = []
        # Every team stays alive until the last reading: one freed in between would let
        # go, during a later run, of what a cache still held of it (allocated before that
        # reading), and that reading would come out short. An untraced first run takes
        # what a framework allocates once (first calls, caches filling) out of both.
        warm_up = peer.make_assistant_loop(min(n, 300), clear_client_logs=True)
        alive: list[Any] = [warm_up]
        await warm_up()
        for turns in (n, 2 * n):
            runner = peer.make_assistant_loop(turns, clear_client_logs=True)
            alive.append(runner)
            gc.collect()
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                # The runner's per-turn timestamps (a float and a list slot a turn) are
                # the benchmark's own: count them and let them go before the reading.
                turns_run = len(await runner())
                gc.collect()
                kept.append(tracemalloc.get_traced_memory()[0] - before)
            finally:
                tracemalloc.stop()
            _check_turns(turns_run, turns, "msgmem")
            del runner
        del alive
        row.value = (kept[1] - kept[0]) / n
        row.detail = (
            f"memory still held after the run, test clients' call logs and the "
            f"benchmark's own timestamps released, every team alive to the end, after an "
            f"untraced warm-up run, "
            f"(run of {2 * n:,} turns - run of {n:,}) / {n:,}"
        )
    except Exception as exc:
        row.error = _reason(exc)
    return [row]


async def _raw_sdk_loop(base_url: str, turns: int, stream: bool) -> float:
    """The same conversation straight through ``openai.AsyncOpenAI``: one request per
    turn with the whole history. Returns the wall time."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": "go", "name": "user"},
    ]
    t0 = time.perf_counter()
    for turn in range(turns):
        if stream:
            chunks = await client.chat.completions.create(
                model="gpt-4o",
                messages=history,
                stream=True,  # type: ignore[arg-type]
            )
            parts = []
            async for chunk in chunks:
                if chunk.choices and chunk.choices[0].delta.content:
                    parts.append(chunk.choices[0].delta.content)
            content = "".join(parts)
        else:
            completion = await client.chat.completions.create(
                model="gpt-4o",
                messages=history,  # type: ignore[arg-type]
            )
            content = completion.choices[0].message.content or ""
        role = "assistant" if turn % 2 == 0 else "user"
        history.append({"role": role, "content": content})
    wall = time.perf_counter() - t0
    await client.close()
    return wall


async def _realclient_rows(peer: Any, base_url: str, stream: bool, turns: int) -> list[Row]:
    """The framework's ms/turn, the raw SDK loop's in the same process, and the
    difference; best of two alternating runs below 1,000 turns."""
    mode = "streaming" if stream else "plain"
    key = f"realclient_{mode}_{turns}"
    total = Row(key, f"real client, {mode}, {turns:,} turns", "ms/turn")
    raw_row = Row(key + "_raw", "  ... raw SDK loop, same requests", "ms/turn")
    over = Row(key + "_over", "  ... framework above the raw SDK loop", "ms/turn")
    rows = [total, raw_row, over]
    try:
        best_raw = best_mine = float("inf")
        for _ in range(2 if turns < 1_000 else 1):
            best_raw = min(best_raw, await _raw_sdk_loop(base_url, turns, stream))
            runner = peer.make_openai_loop(turns, base_url, stream)
            gc.collect()
            t0 = time.perf_counter()
            stamps = await runner()
            best_mine = min(best_mine, time.perf_counter() - t0)
            _check_turns(len(stamps), turns, key)
            del runner
        total.value = best_mine / turns * 1000.0
        raw_row.value = best_raw / turns * 1000.0
        over.value = total.value - raw_row.value
    except Exception as exc:
        for row in rows:
            row.error = _reason(exc)
    return rows


async def run_realclient(peer: Any, sizes: Sizes) -> list[Row]:
    import subprocess
    import sys

    if not hasattr(peer, "make_openai_loop"):
        return []
    rows: list[Row] = []
    server = subprocess.Popen(
        [sys.executable, "-m", "bench._chat_server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        await _raw_sdk_loop(base_url, 3, False)  # warm up imports and the server
        for stream in (False, True):
            for turns in sizes.realclient_turns:
                rows.extend(await _realclient_rows(peer, base_url, stream, turns))
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=10)
    return rows


RUNNERS: dict[str, Callable[[Any, Sizes], Awaitable[list[Row]]]] = {
    "chain": run_chain,
    "loop": run_loop,
    "fanout": run_fanout,
    "map": run_map,
    "uneven": run_uneven,
    "validate": run_validate,
    "memory": run_memory,
    "roundrobin": run_roundrobin,
    "swarm": run_swarm,
    "longrun": run_longrun,
    "durablerun": run_durablerun,
    "msgmem": run_msgmem,
    "realclient": run_realclient,
}


async def run_shapes(
    peer: Any, shapes: Sequence[str], sizes: Sizes, log: Callable[[str], None]
) -> list[Row]:
    rows: list[Row] = []
    for shape in shapes:
        t0 = time.perf_counter()
        got = await RUNNERS[shape](peer, sizes)
        for r in got:
            fig = f"{r.value:.4g} {r.unit}" if r.value is not None else r.error
            log(f"  {peer.NAME:<9} {r.label:<58} {fig}")
        log(f"  {peer.NAME:<9} ({shape} took {time.perf_counter() - t0:.1f} s)")
        rows.extend(got)
    return rows


def run_shapes_sync(
    peer: Any, shapes: Sequence[str], sizes: Sizes, log: Callable[[str], None]
) -> list[Row]:
    return asyncio.run(run_shapes(peer, shapes, sizes, log))
