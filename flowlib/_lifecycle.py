"""``AsyncResource``: something started before use and stopped after, as an ``async with``
block (a code executor, a workbench)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType

from typing_extensions import Self

__all__ = ["AsyncResource"]


class AsyncResource(ABC):
    """Has `start()` and `stop()`; ``async with`` starts it and stops it again."""

    @abstractmethod
    async def start(self) -> None:
        """Acquire what the object needs."""

    @abstractmethod
    async def stop(self) -> None:
        """Release what `start()` acquired."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()
