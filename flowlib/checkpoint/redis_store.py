"""A checkpoint store on Redis, shared by processes on many machines.

Written against flowlib's public names only (``flowlib.checkpoint``, its ``rules`` and
``flowlib.errors``), as a store of your own would be (flowlib does not import it until a
``redis://`` URL is opened or the name ``RedisCheckpointStore`` is used): it is the worked
example of
"Writing a checkpoint store" in docs/extending.md, and passes
``flowlib.testing.check_checkpoint_store`` like the built-in stores.

Keys (``prefix`` default ``flowlib:``):

- ``{prefix}meta``: a hash holding the layout's ``version``;
- ``{prefix}runs``: a sorted set of run ids, scored by ``created_at`` (listings);
- ``{prefix}run:{id}``: a hash: ``run`` (the ``RunRecord`` as created, JSON) and the
  fields each append changes (``status``, ``turns``, ``stop_reason``,
  ``last_checkpoint``, ``updated_at``), plus ``first``, the oldest kept checkpoint;
- ``{prefix}records:{id}``: a hash of checkpoint id -> ``CheckpointRecord`` JSON;
- ``{prefix}lease:{id}``: a hash: ``owner``, ``expires_at``.

Every write is one optimistic transaction (``WATCH`` the keys it checks, read, check,
``MULTI``/``EXEC``; retried when another client changed a watched key first), so of two
writers on one run exactly one appends each checkpoint, and of two executors racing for
a lease exactly one gets it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ValidationError

from flowlib.checkpoint import (
    CheckpointInfo,
    CheckpointRecord,
    FoldedRun,
    Lease,
    RunRecord,
    RunStatus,
    fold,
)
from flowlib.checkpoint.rules import (
    RunFilter,
    RunListing,
    check_acquire,
    check_first,
    check_lease_args,
    check_lease_held,
    check_next,
    check_owner,
    closed_error,
    first_run,
    info_of,
    lease_lost,
    pruned,
    records_upto,
    run_exists,
    unknown_run,
    updated_run,
)
from flowlib.errors import CheckpointArgumentError, CheckpointError, MissingExtraError

__all__ = ["RedisCheckpointStore", "open_redis_store"]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

LAYOUT_VERSION = "1"
"""The version of the key layout this code writes (``{prefix}meta``, field ``version``)."""

_CHANGING = ("status", "turns", "stop_reason", "last_checkpoint", "updated_at")
"""The run fields an append sets (kept beside the run's JSON, so an append writes them
and not the whole run)."""


def _changed_outside(what: str) -> CheckpointError:
    """The error of reading what is not flowlib's (``what``: where and what was found)."""
    return CheckpointError(
        f"Redis {what}. It was changed outside flowlib; remove the run or restore the database."
    )


class RedisCheckpointStore(RunListing):
    """Checkpoints in Redis (one server, or a primary with replicas; not Redis Cluster:
    a write touches keys of one run and the run index together).

    Needs the ``redis`` extra: ``pip install 'flowlib[redis]'``.

    Args:
        url: The server: ``redis://[user:password@]host:6379/0`` (``rediss://`` for TLS);
            other query options are redis-py's (``socket_timeout=...``), and
            ``prefix=...`` sets ``prefix``.
        prefix: Put before every key, so several stores share one database
            (default ``flowlib:``).
        connect_timeout: Seconds to wait for a connection.
        create: Whether a database without this store's keys becomes an empty store on
            first use; False (what read-only commands use): the first call raises
            ``CheckpointError`` saying there is no store there, and nothing is written.

    ``load`` folds all of a run's records (no snapshots): its time grows with the run,
    unlike the SQL stores'. Values are JSON made by pydantic, never pickle; a value that
    does not decode raises ``CheckpointError`` naming its key.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str | None = None,
        connect_timeout: float = 5.0,
        create: bool = True,
    ) -> None:
        if not isinstance(url, str) or not url.lower().startswith(("redis://", "rediss://")):
            raise CheckpointArgumentError(
                f"`url` must be a `redis://host:6379/0` or `rediss://...` URL, got {url!r}."
            )
        parts = urlsplit(url)
        options = parse_qsl(parts.query, keep_blank_values=True)
        given = [value for key, value in options if key == "prefix"]
        if prefix is None:
            prefix = given[-1] if given else "flowlib:"
        if not isinstance(prefix, str) or not prefix:
            raise CheckpointArgumentError(f"`prefix` must be a non-empty string, got {prefix!r}.")
        try:
            import redis.asyncio  # noqa: F401
        except ImportError as exc:
            raise MissingExtraError(
                "RedisCheckpointStore needs redis-py: pip install 'flowlib[redis]'."
            ) from exc
        rest = [(key, value) for key, value in options if key != "prefix"]
        scheme, netloc, path = parts.scheme, parts.netloc, parts.path
        self._server = urlunsplit((scheme, netloc, path, urlencode(rest), ""))
        self.prefix = prefix
        self.url = urlunsplit((scheme, netloc, path, urlencode([*rest, ("prefix", prefix)]), ""))
        """The URL that opens this store in another process (``prefix`` included)."""
        self._timeout = connect_timeout
        self._create = create
        self._redis: Any = None
        self._opening: asyncio.Lock | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"RedisCheckpointStore({_redact(self.url)!r})"

    # -- plumbing ---------------------------------------------------------------------

    def _key(self, kind: str, run_id: str | None = None) -> str:
        return self.prefix + kind + ("" if run_id is None else ":" + run_id)

    async def _client(self) -> Any:
        if self._closed:
            raise closed_error(self)
        if self._redis is None:
            if self._opening is None:
                self._opening = asyncio.Lock()
            async with self._opening:  # concurrent first calls open one client
                if self._redis is None:
                    self._redis = await self._connect()
        return self._redis

    async def _connect(self) -> Any:
        """A client, once the database is known to hold this store's keys (made, with
        ``create``)."""
        import redis.asyncio

        client = redis.asyncio.Redis.from_url(
            self._server, decode_responses=True, socket_connect_timeout=self._timeout
        )
        try:
            meta = self._key("meta")
            if self._create:
                await client.hsetnx(meta, "version", LAYOUT_VERSION)
            version = await client.hget(meta, "version")
            if version is None:
                raise CheckpointError(
                    f"No checkpoint store at `{_redact(self.url)}`: the database has no "
                    f"`{meta}` key. Check the URL and the prefix; nothing was created."
                )
            if version != LAYOUT_VERSION:
                raise CheckpointError(
                    f"Store `{_redact(self.url)}` has key layout version {version!r}; this "
                    f"flowlib reads version {LAYOUT_VERSION}. Upgrade flowlib to open it."
                )
        except BaseException:
            await client.aclose()
            raise
        return client

    async def _call(self, work: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``work(client)``, Redis's errors as ``CheckpointError``."""
        import redis

        try:
            return await work(await self._client())
        except redis.RedisError as exc:
            raise CheckpointError(
                f"Redis store `{_redact(self.url)}` failed with {type(exc).__name__} "
                f"({exc}); check that the server is running and reachable. Nothing of "
                "this call was written unless it said so."
            ) from exc

    async def _atomically(self, keys: Sequence[str], step: Callable[[Any], Awaitable[T]]) -> T:
        """One optimistic transaction: ``step(pipe)`` reads the watched ``keys``, checks,
        and (to write) calls ``pipe.multi()`` and queues the writes; run again from the
        start whenever another client changed a watched key before ``EXEC``."""
        import redis

        async def work(client: Any) -> T:
            async with client.pipeline(transaction=True) as pipe:
                while True:
                    try:
                        await pipe.watch(*keys)
                        result = await step(pipe)
                        if pipe.explicit_transaction:
                            await pipe.execute()
                        return result
                    except redis.WatchError:
                        continue

        return await self._call(work)

    def _parse(self, model: type[M], text: str, key: str, field: str) -> M:
        try:
            return model.model_validate_json(text)
        except ValidationError as exc:
            raise _changed_outside(
                f"key `{key}` field `{field}` does not hold a {model.__name__}: "
                f"{exc.errors()[0]['msg']}"
            ) from None

    def _run_of(self, run_id: str, fields: dict[str, str]) -> RunRecord | None:
        """The run from its hash's fields (None: no such run)."""
        if not fields:
            return None
        key = self._key("run", run_id)
        run = self._parse(RunRecord, fields.get("run", ""), key, "run")
        try:
            changed = {
                "status": fields["status"],
                "turns": int(fields["turns"]),
                "stop_reason": json.loads(fields["stop_reason"]),
                "last_checkpoint": int(fields["last_checkpoint"]),
                "updated_at": float(fields["updated_at"]),
            }
            return RunRecord.model_validate({**run.model_dump(), **changed})
        except (KeyError, ValueError) as exc:
            what = f"{type(exc).__name__}: {exc}"
            raise _changed_outside(f"key `{key}` does not hold a run ({what})") from None

    def _lease_of(self, run_id: str, fields: dict[str, str]) -> Lease | None:
        if not fields:
            return None
        try:
            return Lease(run_id=run_id, owner=fields["owner"], expires_at=fields["expires_at"])
        except (KeyError, ValidationError) as exc:
            key = self._key("lease", run_id)
            raise _changed_outside(f"key `{key}` does not hold a lease: {exc}") from None

    def _records_of(self, run_id: str, fields: dict[str, str]) -> list[CheckpointRecord]:
        key = self._key("records", run_id)
        records = []
        for field in sorted(fields, key=_checkpoint_number):
            record = self._parse(CheckpointRecord, fields[field], key, field)
            if str(record.checkpoint_id) != field or record.run_id != run_id:
                raise _changed_outside(
                    f"key `{key}` field `{field}` holds checkpoint {record.checkpoint_id} of "
                    f"run `{record.run_id}`"
                )
            records.append(record)
        return records

    @staticmethod
    def _changing(run: RunRecord) -> dict[str, str]:
        return {
            "status": run.status,
            "turns": str(run.turns),
            "stop_reason": json.dumps(run.stop_reason),
            "last_checkpoint": str(run.last_checkpoint),
            "updated_at": repr(run.updated_at),
        }

    async def _read(self, run_id: str, *kinds: str) -> list[dict[str, str]]:
        """The hashes ``kinds`` of a run (``run``, ``records``, ``lease``), read in one
        ``MULTI``: one moment's view."""

        async def work(client: Any) -> list[dict[str, str]]:
            async with client.pipeline(transaction=True) as pipe:
                for kind in kinds:
                    pipe.hgetall(self._key(kind, run_id))
                return list(await pipe.execute())

        return await self._call(work)

    async def _records(self, run_id: str) -> list[CheckpointRecord]:
        run, records = await self._read(run_id, "run", "records")
        if not run:
            raise unknown_run(run_id)
        return self._records_of(run_id, records)

    # -- the protocol ------------------------------------------------------------------

    async def create_run(self, run: RunRecord, *, first: CheckpointRecord | None = None) -> None:
        """Store a new run (with its first record in the same transaction, when given).
        Raises ``CheckpointError`` if ``run.run_id`` exists."""
        check_first(run, first)
        stored = first_run(run, first)
        run_key = self._key("run", run.run_id)

        async def step(pipe: Any) -> None:
            if await pipe.exists(run_key):
                raise run_exists(run.run_id)
            pipe.multi()
            records_key = self._key("records", run.run_id)
            pipe.delete(records_key)
            pipe.hset(
                run_key,
                mapping={
                    "run": run.model_dump_json(),
                    "first": "0" if first is None else "1",
                    **self._changing(stored),
                },
            )
            if first is not None:
                pipe.hset(records_key, "1", first.model_dump_json())
            pipe.zadd(self._key("runs"), {run.run_id: run.created_at})

        await self._atomically([run_key], step)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run (with its lease), or None."""
        fields, lease = await self._read(run_id, "run", "lease")
        return self._with_lease(self._run_of(run_id, fields), lease)

    def _with_lease(self, run: RunRecord | None, fields: dict[str, str]) -> RunRecord | None:
        if run is None:
            return None
        held = self._lease_of(run.run_id, fields)
        if held is not None:
            run.lease_owner, run.lease_expires_at = held.owner, held.expires_at
        return run

    async def append(
        self, record: CheckpointRecord, *, status: RunStatus, lease_owner: str | None = None
    ) -> None:
        """See the protocol: one optimistic transaction (``WATCH`` on the run and its
        lease, retried if another client wrote them meanwhile)."""
        if lease_owner is not None:
            check_owner(lease_owner)
        run_key = self._key("run", record.run_id)
        lease_key = self._key("lease", record.run_id)

        async def step(pipe: Any) -> None:
            run = self._run_of(record.run_id, await pipe.hgetall(run_key))
            if run is None:
                raise unknown_run(record.run_id)
            if lease_owner is not None:
                held = self._lease_of(record.run_id, await pipe.hgetall(lease_key))
                check_lease_held(record.run_id, lease_owner, held, now=time.time())
            check_next(run, record)
            first = await pipe.hget(run_key, "first")
            pipe.multi()
            pipe.hset(self._key("records", record.run_id), str(record.checkpoint_id),
                      record.model_dump_json())  # fmt: skip
            changed = self._changing(updated_run(run, record, status))
            if first == "0":
                changed["first"] = str(record.checkpoint_id)
            pipe.hset(run_key, mapping=changed)

        await self._atomically([run_key, lease_key], step)

    async def acquire_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        """Take the run's lease (see the protocol): one transaction."""
        expires_at = check_lease_args(run_id, owner, ttl)
        key = self._key("lease", run_id)

        async def step(pipe: Any) -> Lease:
            check_acquire(run_id, owner, self._lease_of(run_id, await pipe.hgetall(key)),
                          now=time.time())  # fmt: skip
            pipe.multi()
            pipe.hset(key, mapping={"owner": owner, "expires_at": repr(expires_at)})
            return Lease(run_id=run_id, owner=owner, expires_at=expires_at)

        return await self._atomically([key], step)

    async def renew_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        """Extend ``owner``'s lease (see the protocol): one transaction."""
        expires_at = check_lease_args(run_id, owner, ttl)
        key = self._key("lease", run_id)

        async def step(pipe: Any) -> Lease:
            held = self._lease_of(run_id, await pipe.hgetall(key))
            if held is None or held.owner != owner:
                raise lease_lost(run_id, owner, held, now=time.time())
            pipe.multi()
            pipe.hset(key, "expires_at", repr(expires_at))
            return Lease(run_id=run_id, owner=owner, expires_at=expires_at)

        return await self._atomically([key], step)

    async def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (a no-op unless ``owner`` holds it)."""
        check_owner(owner)
        key = self._key("lease", run_id)

        async def step(pipe: Any) -> None:
            if await pipe.hget(key, "owner") == owner:
                pipe.multi()
                pipe.delete(key)

        await self._atomically([key], step)

    async def get_lease(self, run_id: str) -> Lease | None:
        """The run's lease (expired or not), or None."""
        (fields,) = await self._read(run_id, "lease")
        return self._lease_of(run_id, fields)

    async def records(self, run_id: str, *, upto: int | None = None) -> list[CheckpointRecord]:
        """The run's records in order, up to and including ``upto`` (default: all)."""
        return records_upto(run_id, await self._records(run_id), upto)

    async def load(self, run_id: str, *, upto: int | None = None) -> FoldedRun:
        """The run's state at checkpoint ``upto`` (default: its last): its records,
        folded."""
        return fold(await self.records(run_id, upto=upto), run_id=run_id)

    async def select_runs(self, filters: RunFilter) -> list[RunRecord]:
        """The runs ``filters`` keeps (see ``RunListing``). The run index is read whole
        (ids and times only); runs are then read a page at a time until ``limit`` runs
        passed the filters."""

        async def ids(client: Any) -> list[tuple[str, float]]:
            return list(await client.zrange(self._key("runs"), 0, -1, withscores=True))

        ordered = sorted(await self._call(ids), key=lambda entry: (-entry[1], entry[0]))
        if filters.after is not None:
            created, after = filters.after
            ordered = [e for e in ordered if e[1] < created or (e[1] == created and e[0] > after)]
        found: list[RunRecord] = []
        page = max(filters.limit or 0, 100)
        for start in range(0, len(ordered), page):
            chunk = [run_id for run_id, _ in ordered[start : start + page]]

            async def read(client: Any, chunk: list[str] = chunk) -> list[dict[str, str]]:
                async with client.pipeline(transaction=False) as pipe:
                    for run_id in chunk:
                        pipe.hgetall(self._key("run", run_id))
                        pipe.hgetall(self._key("lease", run_id))
                    return list(await pipe.execute())

            rows = await self._call(read)
            for index, run_id in enumerate(chunk):
                run = self._with_lease(self._run_of(run_id, rows[2 * index]), rows[2 * index + 1])
                if run is not None and filters.keeps(run):  # None: deleted meanwhile
                    found.append(run)
            if filters.limit is not None and len(found) >= filters.limit:
                break
        return filters.select(found)

    async def history(self, run_id: str) -> list[CheckpointInfo]:
        """The run's checkpoints, oldest first."""
        return [info_of(record) for record in await self._records(run_id)]

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        """Fold all but the newest ``keep_last`` records into one ``base`` record; returns
        how many records were removed."""
        run_key = self._key("run", run_id)
        records_key = self._key("records", run_id)

        async def step(pipe: Any) -> int:
            if not await pipe.exists(run_key):
                raise unknown_run(run_id)
            records = self._records_of(run_id, await pipe.hgetall(records_key))
            left = pruned(records, keep_last)
            if left is None:
                return 0
            base = left[0]
            gone = [str(r.checkpoint_id) for r in records if r.checkpoint_id < base.checkpoint_id]
            pipe.multi()
            pipe.hdel(records_key, *gone)
            pipe.hset(records_key, str(base.checkpoint_id), base.model_dump_json())
            pipe.hset(run_key, "first", str(base.checkpoint_id))
            return len(records) - len(left)

        return await self._atomically([run_key, records_key], step)

    async def delete(self, run_id: str) -> None:
        """Remove the run, its records and its lease (no error if unknown)."""

        async def work(client: Any) -> None:
            async with client.pipeline(transaction=True) as pipe:
                for kind in ("run", "records", "lease"):
                    pipe.delete(self._key(kind, run_id))
                pipe.zrem(self._key("runs"), run_id)
                await pipe.execute()

        await self._call(work)

    async def close(self) -> None:
        """Close the connections; the store cannot be used afterwards."""
        self._closed = True
        client, self._redis = self._redis, None
        if client is not None:
            await client.aclose()


def _checkpoint_number(field: str) -> int:
    return int(field) if field.isdigit() else -1


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{quote(parts.username or '')}:***@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def open_redis_store(url: str, *, create: bool) -> RedisCheckpointStore:
    """The opener of ``redis://host:6379/0`` and ``rediss://...`` URLs (``?prefix=...``),
    registered by name in ``flowlib.checkpoint`` (so the module is imported when a
    Redis URL is first opened)."""
    return RedisCheckpointStore(url, create=create)
