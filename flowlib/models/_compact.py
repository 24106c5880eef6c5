"""``CompactModel``: a pydantic base for value types kept by the thousand (messages, usage).

pydantic gives every instance its own ``set`` of the fields that were given explicitly
(``model_fields_set``, 216 bytes even for two names). Messages of one kind are nearly always
built with the same fields, so a ``CompactModel`` swaps its set, once built, for one
read-only set shared by every instance built with the same fields; the first assignment to
a field gives the instance its own set again. On a long conversation this is about a
third of what each kept message costs.
"""

from __future__ import annotations

from typing import Any, NoReturn

from pydantic import BaseModel

from ..errors import InvalidTypeError

__all__ = ["CompactModel", "SharedFieldsSet"]

_SHARED_MAX = 4096
"""How many distinct field sets are shared; past it (only a model that allows extra fields
can make that many) new instances keep their own sets."""


class SharedFieldsSet(set[str]):
    """The fields set of every instance that was built with these fields; read-only.

    Copies (``copy.copy``, ``model_copy``, pickling) are plain sets.
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise InvalidTypeError(
            "model_fields_set is shared by the messages built with the same fields and is "
            "read-only; assign the field on the message (or use model_copy) instead."
        )

    add = discard = remove = pop = clear = update = _refuse
    difference_update = intersection_update = symmetric_difference_update = _refuse
    __ior__ = __iand__ = __isub__ = __ixor__ = _refuse

    def __copy__(self) -> set[str]:
        return set(self)

    def __deepcopy__(self, memo: Any) -> set[str]:
        return set(self)

    def __reduce__(self) -> tuple[type[set[str]], tuple[list[str]]]:
        return set, (list(self),)


_SHARED: dict[frozenset[str], SharedFieldsSet] = {}


class CompactModel(BaseModel):
    """A pydantic model whose instances share their ``model_fields_set``.

    Behaves as a ``BaseModel`` in every other way; ``model_fields_set`` is read-only
    until a field is assigned.
    """

    def model_post_init(self, context: Any, /) -> None:
        """Swap the instance's fields set for the shared one with the same fields."""
        fields = self.__pydantic_fields_set__
        if type(fields) is not set:
            return
        key = frozenset(fields)
        shared = _SHARED.get(key)
        if shared is None:
            if len(_SHARED) >= _SHARED_MAX:
                return
            shared = _SHARED.setdefault(key, SharedFieldsSet(key))
        object.__setattr__(self, "__pydantic_fields_set__", shared)

    def __setattr__(self, name: str, value: Any) -> None:
        fields = self.__pydantic_fields_set__
        if type(fields) is SharedFieldsSet:
            object.__setattr__(self, "__pydantic_fields_set__", set(fields))
        super().__setattr__(name, value)
