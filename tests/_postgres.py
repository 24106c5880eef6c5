"""A real PostgreSQL server for tests: Debian's ``initdb`` and ``pg_ctl`` on a temporary
directory, listening on a free port on 127.0.0.1, stopped at the end of the session.

``postgres_server`` (session scope) starts the server the first time a test asks for it;
``postgres_dsn`` gives each test a DSN whose ``search_path`` is a fresh schema, so tests
see only their own tables. As root the server runs as the ``postgres`` user (PostgreSQL
refuses to run as root). ``scripts/bootstrap.sh`` installs the package when missing.

Example (outside pytest):
    >>> server = PostgresServer.start()  # doctest: +SKIP
    >>> server.new_dsn()  # doctest: +SKIP
    'postgresql://flowlib@127.0.0.1:54321/postgres?options=-csearch_path%3Dt1'
    >>> server.stop()  # doctest: +SKIP
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

__all__ = ["PostgresServer", "postgres_dsn", "postgres_server"]


def _bin_dir() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        path = shutil.which("initdb")
        if path is None:
            raise RuntimeError(
                "PostgreSQL's initdb is not installed: run scripts/bootstrap.sh "
                "(or apt-get install postgresql)."
            )
        return os.path.dirname(path)
    return os.path.dirname(found[-1])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    """A running server: ``dsn`` reaches its ``postgres`` database as ``flowlib``."""

    root: str
    port: int
    bin_dir: str
    _schemas: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def dsn(self) -> str:
        return f"postgresql://flowlib@127.0.0.1:{self.port}/postgres"

    @classmethod
    def start(cls, *, fsync: bool = False) -> PostgresServer:
        root = tempfile.mkdtemp(prefix="flowlib-pg-")
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
        server = cls(root=root, port=_free_port(), bin_dir=_bin_dir())
        data = os.path.join(root, "data")
        try:
            server._pg(
                "initdb", "-D", data, "-U", "flowlib", "--auth=trust", "-E", "UTF8", "--no-sync"
            )
            options = (
                f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 "
                f"-c fsync={'on' if fsync else 'off'} -c max_connections=200"
            )
            log = os.path.join(root, "server.log")
            server._pg("pg_ctl", "-D", data, "-o", options, "-l", log, "-w", "-t", "60", "start")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return server

    def _pg(self, program: str, *args: str) -> None:
        command = [os.path.join(self.bin_dir, program), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.root, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"{program} failed ({done.returncode}): {done.stderr or done.stdout}"
            )

    def new_dsn(self) -> str:
        """A DSN whose ``search_path`` is a new, empty schema."""
        import psycopg

        name = f"t{next(self._schemas)}"
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return f"{self.dsn}?options=-csearch_path%3D{name}"

    def stop(self) -> None:
        try:
            self._pg(
                "pg_ctl", "-D", os.path.join(self.root, "data"), "-m", "immediate", "-w", "stop"
            )
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the session, started by the first test that asks."""
    server = PostgresServer.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> str:
    """A DSN on the session's server with a fresh schema of its own."""
    return postgres_server.new_dsn()
