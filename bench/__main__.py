"""``python -m bench``: run the benchmark shapes on flowlib and its peers, print a report.

Each framework runs in its own subprocess (``python -m bench --worker NAME``), one after
the other, so that imports, memory measurements and a crash of one framework do not
touch the others. A framework that is not installed is skipped with a line saying so.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import report, shapes

FRAMEWORKS: dict[str, str] = {
    "flowlib": "bench.peers.flowlib_impl",
    "autogen": "bench.peers.autogen_graphflow",
    "langgraph": "bench.peers.langgraph_impl",
}
LABELS = {"flowlib": "flowlib", "autogen": "AutoGen GraphFlow", "langgraph": "LangGraph"}


def _csv(value: str, allowed: tuple[str, ...] | list[str], what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown {what}: {', '.join(bad)} (choose from {', '.join(allowed)})"
        )
    return items


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark flowlib against AutoGen AgentChat GraphFlow and LangGraph.",
    )
    p.add_argument(
        "--only",
        metavar="SHAPE[,SHAPE]",
        type=lambda v: _csv(v, shapes.SHAPES, "shape"),
        default=list(shapes.SHAPES),
        help=f"shapes to run (default: all): {', '.join(shapes.SHAPES)}",
    )
    p.add_argument(
        "--frameworks",
        metavar="NAME[,NAME]",
        type=lambda v: _csv(v, list(FRAMEWORKS), "framework"),
        default=list(FRAMEWORKS),
        help=f"frameworks to run (default: all): {', '.join(FRAMEWORKS)}",
    )
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    p.add_argument("--json", metavar="OUT.json", help="also write the results as JSON")
    p.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="seconds allowed per framework before its run is abandoned (default 900)",
    )
    p.add_argument("--worker", metavar="NAME", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    return p


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------- worker side


def _worker(name: str, only: list[str], quick: bool, out: str) -> int:
    sizes = shapes.QUICK if quick else shapes.FULL
    result: dict[str, Any] = {
        "name": name,
        "label": LABELS[name],
        "version": None,
        "skipped": None,
        "rows": [],
        "notes": [],
        "elapsed": None,
    }
    t0 = time.perf_counter()
    try:
        peer = importlib.import_module(FRAMEWORKS[name])
        result["version"] = peer.version()
        result["label"] = getattr(peer, "LABEL", LABELS[name])
        result["notes"] = list(getattr(peer, "NOTES", []))
    except ImportError as exc:
        result["skipped"] = f"not installed or incomplete ({type(exc).__name__}: {exc})"
    except Exception as exc:  # e.g. a half-written flowlib
        result["skipped"] = f"not usable ({type(exc).__name__}: {exc})"
    if result["skipped"]:
        _log(f"  {name:<9} skipped: {result['skipped']}")
    else:
        _log(f"  {name:<9} {result['label']} {result['version']}")
        rows = shapes.run_shapes_sync(peer, only, sizes, _log)
        result["rows"] = [r.as_dict() for r in rows]
    result["elapsed"] = time.perf_counter() - t0
    Path(out).write_text(json.dumps(result, indent=2))
    return 0


# --------------------------------------------------------------- orchestrator side


def _run_framework(name: str, args: argparse.Namespace) -> dict[str, Any]:
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="flowlib-bench-") as tmp:
        out = Path(tmp) / f"{name}.json"
        cmd = [
            sys.executable,
            "-m",
            "bench",
            "--worker",
            name,
            "--only",
            ",".join(args.only),
            "--out",
            str(out),
        ]
        if args.quick:
            cmd.append("--quick")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(root)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
        )
        t0 = time.perf_counter()
        failure = None
        try:
            proc = subprocess.run(cmd, cwd=root, env=env, timeout=args.timeout, check=False)
            if proc.returncode != 0:
                failure = f"worker exited with code {proc.returncode}"
        except subprocess.TimeoutExpired:
            failure = f"timed out after {args.timeout:.0f} s"
        if out.exists():
            data: dict[str, Any] = json.loads(out.read_text())
            if failure:
                data.setdefault("notes", []).append(f"{name}: {failure}")
            return data
        return {
            "name": name,
            "label": LABELS[name],
            "version": None,
            "skipped": failure or "worker wrote no result",
            "rows": [],
            "notes": [],
            "elapsed": time.perf_counter() - t0,
        }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.worker:
        if args.worker not in FRAMEWORKS or not args.out:
            _parser().error("--worker needs a known framework and --out")
        return _worker(args.worker, args.only, args.quick, args.out)

    _log(
        f"bench: shapes {', '.join(args.only)}; frameworks {', '.join(args.frameworks)}"
        + ("; quick sizes" if args.quick else "")
    )
    t0 = time.perf_counter()
    frameworks = [_run_framework(name, args) for name in args.frameworks]
    elapsed = time.perf_counter() - t0
    results: dict[str, Any] = {
        "meta": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "quick": args.quick,
            "shapes": args.only,
            "sizes": vars(shapes.QUICK if args.quick else shapes.FULL),
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "elapsed": elapsed,
        },
        "frameworks": frameworks,
    }
    report.print_report(results, sys.stdout)
    print(f"\n(total {elapsed:.1f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=list))
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
