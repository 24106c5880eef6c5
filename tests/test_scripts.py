"""The two set-ups: ``scripts/demo.sh`` installs only what the demo needs, ``scripts/test.sh``
(through ``scripts/bootstrap.sh``) everything the tests need, and both skip what is done.

The scripts run for real in a scratch copy of ``scripts/`` and ``pyproject.toml``, with
stand-ins on ``PATH`` for ``apt-get`` and the tools the scripts look for, and a stand-in
``.venv/bin/python`` that records the ``pip install`` it is asked for, so the tests see
what each script would install without installing it.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).parent.parent
TEST_STACK = ("postgresql", "redis-server", "chromium", "nodejs", "npm")


def _tool(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _sandbox(tmp_path: Path, *, present: tuple[str, ...]) -> tuple[Path, dict[str, str], Path]:
    """A copy of the scripts with a fake venv, and PATH stand-ins for ``present`` tools."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for script in ("_setup.sh", "bootstrap.sh", "demo.sh"):
        shutil.copy(ROOT / "scripts" / script, repo / "scripts" / script)
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    log = tmp_path / "log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (repo / ".venv" / "bin").mkdir(parents=True)
    _tool(repo / ".venv" / "bin" / "python", f'echo "python $*" >> {log}')
    _tool(repo / ".venv" / "bin" / "flowlib", f'echo "flowlib $*" >> {log}')
    _tool(repo / ".venv" / "bin" / "uv", f'echo "uv $*" >> {log}')
    # apt-get "installs" a package by putting a stand-in for its command on PATH.
    commands = {"graphviz": "dot", "postgresql": "initdb", "nodejs": "node"}
    installs = "".join(
        f"    {package}) tool={command} ;;\n" for package, command in commands.items()
    )
    _tool(
        bin_dir / "apt-get",
        f'echo "apt-get $*" >> {log}\n'
        f'for package in "$@"; do\n  tool=$package\n  case $package in\n{installs}'
        f"    -*) continue ;;\n  esac\n"
        f'  printf \'#!/bin/sh\\necho "%s $*" >> {log}\\n\' "$tool" > {bin_dir}/$tool\n'
        f"  chmod +x {bin_dir}/$tool\ndone",
    )
    _tool(bin_dir / "python3", "exit 0")  # passes the version check
    for name in present:
        _tool(bin_dir / name, f'echo "{name} $*" >> {log}')
    # Only the basic commands the scripts use, so that the machine's own tools are not seen.
    for name in ("bash", "dirname", "touch", "ls", "id", "env", "chmod", "printf", "cat"):
        found = shutil.which(name)
        assert found is not None
        (bin_dir / name).symlink_to(found)
    env = {
        "PATH": str(bin_dir),
        "HOME": str(tmp_path),
        "PYTHON": str(bin_dir / "python3"),
    }
    return repo, env, log


def _run(repo: Path, script: str, env: dict[str, str], log: Path) -> list[str]:
    if log.exists():
        log.unlink()
    completed = subprocess.run(
        ["bash", f"scripts/{script}"],
        cwd=repo,
        env=env,
        check=False,
        timeout=60,
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 0, completed.stderr
    return log.read_text().splitlines() if log.exists() else []


def test_demo_installs_flowlib_and_graphviz_only_and_only_once(tmp_path: Path) -> None:
    repo, env, log = _sandbox(tmp_path, present=())  # a fresh machine: no dot either
    first = _run(repo, "demo.sh", env, log)
    installs = [line for line in first if line.startswith("python -m pip install")]
    assert len(installs) == 1 and installs[0].endswith(" -e ."), first  # no extras
    apt = [line for line in first if line.startswith("apt-get install")]
    assert apt == ["apt-get install -y -qq graphviz"], first
    assert not any(pkg in line for line in first for pkg in TEST_STACK), first
    assert first[-1] == "flowlib demo"
    # Again: nothing to install (dot is there now), the demo runs straight away.
    assert _run(repo, "demo.sh", env, log) == ["flowlib demo"]


def test_demo_passes_its_arguments_on(tmp_path: Path) -> None:
    repo, env, log = _sandbox(tmp_path, present=("dot",))
    assert _run(repo, "demo.sh", env, log)[-1] == "flowlib demo"
    assert _run(repo, "demo.sh", {**env}, log) == ["flowlib demo"]
    subprocess.run(
        ["bash", "scripts/demo.sh", "--task", "hi"], cwd=repo, env=env, check=True, timeout=60
    )
    assert log.read_text().splitlines()[-1] == "flowlib demo --task hi"


def test_test_setup_installs_the_test_stack_once_and_the_demo_reuses_it(tmp_path: Path) -> None:
    repo, env, log = _sandbox(tmp_path, present=("dot",))
    first = _run(repo, "bootstrap.sh", env, log)
    apt = " ".join(line for line in first if line.startswith("apt-get install"))
    postgres_here = any(Path("/usr/lib/postgresql").glob("*/bin/initdb"))  # looked up by path
    for package in (
        "redis-server",
        "chromium",
        "nodejs npm",
        *(() if postgres_here else ("postgresql",)),
    ):
        assert package in apt, first
    assert any(line.startswith("npm ci --prefix tests/js") for line in first), first
    # pip installs uv into the venv, and uv installs flowlib with every extra.
    installs = [line for line in first if line.startswith(("python -m pip install", "uv "))]
    assert len(installs) == 2, first
    assert installs[0].startswith("python -m pip install") and installs[0].endswith(" uv")
    assert installs[1] == "uv pip install -q --python .venv/bin/python -e .[dev,docs,studio]"
    # Once the tools are there, a second run installs nothing.
    (repo / "tests" / "js" / "node_modules" / "mermaid").mkdir(parents=True)
    assert _run(repo, "bootstrap.sh", env, log) == []
    # The test set-up is a superset of the demo's: the demo installs nothing more.
    assert _run(repo, "demo.sh", env, log) == ["flowlib demo"]
    # A changed pyproject.toml is installed again.
    time.sleep(0.01)
    os.utime(repo / "pyproject.toml", (time.time() + 5, time.time() + 5))
    again = _run(repo, "bootstrap.sh", env, log)
    assert [line for line in again if "pip install" in line], again


def test_test_command_sets_up_the_test_stack_and_ci_runs_it() -> None:
    test_sh = (ROOT / "scripts" / "test.sh").read_text()
    assert "bash scripts/bootstrap.sh" in test_sh
    assert "scripts/bootstrap.sh" not in (ROOT / "scripts" / "demo.sh").read_text()
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_test_setup_falls_back_to_pip_when_uv_fails(tmp_path: Path) -> None:
    repo, env, log = _sandbox(tmp_path, present=("dot",))
    _tool(repo / ".venv" / "bin" / "uv", f'echo "uv $*" >> {log}\nexit 1')
    first = _run(repo, "bootstrap.sh", env, log)
    installs = [line for line in first if line.startswith(("python -m pip install", "uv "))]
    assert len(installs) == 3, first
    assert installs[1].startswith("uv pip install")
    assert installs[2].startswith("python -m pip install")
    assert installs[2].endswith(" -e .[dev,docs,studio]")
