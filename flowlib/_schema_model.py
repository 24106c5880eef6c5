"""Build a pydantic model class from a JSON schema (the subset pydantic itself writes).

Used by ``StructuredMessageFactory`` to rebuild a message's content model from a dumped
config. Supported: objects with ``properties`` / ``required`` (nested, inline or through
``$ref`` to ``$defs`` / ``definitions``), ``string``, ``integer``, ``number``,
``boolean``, ``null``, ``array`` (with ``items``), ``enum`` and ``const`` (as
``Literal``), ``anyOf`` / ``oneOf`` and type lists (as unions), ``default``,
``description`` and ``title``. Anything else is refused with the path of the offending
part, never silently weakened to ``Any``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, Union

from pydantic import BaseModel, Field, create_model

from .errors import InvalidArgumentError

__all__ = ["schema_to_model"]

_SCALARS: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "null": type(None),
}


def _fail(path: str, what: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"json_schema at `{path}`: {what}. Give a schema as pydantic writes it "
        "(`Model.model_json_schema()`), or pass `input_model=` instead.",
        argument="json_schema",
    )


def _identifier(name: str) -> str:
    cleaned = re.sub(r"\W", "_", name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"Model_{cleaned}"


class _Builder:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self._defs: Mapping[str, Any] = {
            **(root.get("definitions") or {}),
            **(root.get("$defs") or {}),
        }
        self._models: dict[str, type[BaseModel]] = {}
        self._building: set[str] = set()

    def model(self, schema: Mapping[str, Any], name: str, path: str) -> type[BaseModel]:
        if schema.get("type", "object") != "object":
            raise _fail(path, f"expected an object schema, found type {schema.get('type')!r}")
        properties = schema.get("properties") or {}
        if not isinstance(properties, Mapping):
            raise _fail(path, "`properties` must be an object")
        required = set(schema.get("required") or ())
        fields: dict[str, Any] = {}
        for field_name, field_schema in properties.items():
            where = f"{path}.properties.{field_name}"
            if not isinstance(field_schema, Mapping):
                raise _fail(where, "a property schema must be an object")
            annotation = self.type_of(field_schema, f"{name}_{field_name}", where)
            info: dict[str, Any] = {}
            if "description" in field_schema:
                info["description"] = field_schema["description"]
            if field_name in required:
                fields[field_name] = (annotation, Field(**info))
            else:
                default = field_schema.get("default")
                if "default" not in field_schema:
                    annotation = annotation | None
                fields[field_name] = (annotation, Field(default=default, **info))
        model: type[BaseModel] = create_model(
            _identifier(name), __doc__=schema.get("description"), **fields
        )
        return model

    def type_of(self, schema: Mapping[str, Any], name: str, path: str) -> Any:
        if "$ref" in schema:
            return self._ref(str(schema["$ref"]), path)
        if "const" in schema:
            return Literal[schema["const"]]
        if "enum" in schema:
            values = tuple(schema["enum"])
            if not values:
                raise _fail(path, "`enum` is empty")
            return Literal[values]
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [
                    self.type_of(option, f"{name}_{i}", f"{path}.{key}[{i}]")
                    for i, option in enumerate(schema[key])
                ]
                return Union[tuple(options)]  # noqa: UP007 - built at run time
        kind = schema.get("type")
        if isinstance(kind, list):
            options = [self.type_of({**schema, "type": k}, name, path) for k in kind]
            return Union[tuple(options)]  # noqa: UP007
        if kind in _SCALARS:
            return _SCALARS[kind]
        if kind == "array":
            items = schema.get("items")
            if items is None:
                raise _fail(path, "an array needs `items`")
            return list[self.type_of(items, f"{name}_item", f"{path}.items")]  # type: ignore[misc]
        if kind == "object" or (kind is None and "properties" in schema):
            if "properties" not in schema:
                return dict[str, Any]
            return self.model(schema, str(schema.get("title") or name), path)
        raise _fail(path, f"unsupported schema {dict(schema)!r}")

    def _ref(self, ref: str, path: str) -> type[BaseModel]:
        match = re.fullmatch(r"#/(?:\$defs|definitions)/(.+)", ref)
        if match is None or match.group(1) not in self._defs:
            raise _fail(path, f"`$ref` {ref!r} does not point into `$defs`")
        key = match.group(1)
        if key in self._building:
            raise _fail(
                path, f"`$ref` {ref!r} refers to itself (recursive models are not supported)"
            )
        if key not in self._models:
            self._building.add(key)
            self._models[key] = self.model(self._defs[key], key, f"$defs.{key}")
            self._building.discard(key)
        return self._models[key]


def schema_to_model(schema: Mapping[str, Any], name: str) -> type[BaseModel]:
    """Return a pydantic model class named ``name`` for the object ``schema``.

    Raises:
        InvalidArgumentError: If the schema is not an object schema or uses something
            outside the supported subset (the message gives the path).
    """
    if not isinstance(schema, Mapping):
        raise _fail("$", f"a schema must be an object, not {type(schema).__name__}")
    return _Builder(schema).model(schema, name, "$")
