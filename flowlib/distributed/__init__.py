"""Batches of durable runs on a Ray cluster (the ``ray`` extra: ``pip install 'flowlib[ray]'``).

[`RayRunner`][flowlib.distributed.RayRunner] has the methods of the one-process
[`flowlib.batch.LocalRunner`][flowlib.batch.LocalRunner], which needs no Ray.
"""

try:
    import ray as _ray  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without Ray
    from ..errors import RayNotInstalledError

    raise RayNotInstalledError(
        "flowlib.distributed needs Ray: pip install 'flowlib[ray]' (or run the batch in one "
        "process with flowlib.batch.LocalRunner, which needs nothing more)."
    ) from exc

from ._runner import RayRunner
from ._worker import RunWorker

__all__ = ["RayRunner", "RunWorker"]
