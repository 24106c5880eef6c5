"""``StructuredMessageFactory``: ``StructuredMessage`` classes from a pydantic model or a
JSON schema, dumped as a component."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from ..component.internal import ComponentBase, register_builtin
from ._chat import StructuredMessage


class StructuredMessageFactoryConfig(BaseModel):
    """The component config of a
    [`StructuredMessageFactory`][flowlib.messages.StructuredMessageFactory].

    Attributes:
        json_schema: The content model's JSON schema.
        format_string: The ``format_string`` given to messages.
        content_model_name: The content model's class name.
    """

    json_schema: dict[str, Any]
    format_string: str | None = None
    content_model_name: str


class StructuredMessageFactory(ComponentBase):
    """Makes ``StructuredMessage`` classes from a pydantic model or a JSON schema, and dumps
    them as a component (so a structured output type survives ``dump_component``).

    Give ``input_model`` (a pydantic model class) or ``json_schema`` (the schema of one, as
    ``Model.model_json_schema()`` writes it); a schema is turned into a generated model
    class named ``content_model_name``. The factory then offers the content model as
    ``ContentModel`` and the message class ``StructuredMessage[ContentModel]`` as
    ``StructuredMessage``.

    Args:
        json_schema: A JSON schema of an object, to build the content model from.
        input_model: The content model class (instead of ``json_schema``).
        format_string: A ``str.format`` template over the content's fields, for the
            messages' ``to_text()``.
        content_model_name: The name of the model built from ``json_schema``; defaults to
            ``"GeneratedContentModel"``.

    Attributes:
        ContentModel: The content model class.
        StructuredMessage: ``StructuredMessage[ContentModel]``.
        format_string: The template given.

    Raises:
        InvalidArgumentError: Neither or both of ``json_schema`` and ``input_model`` are
            given, or the schema uses something outside the supported subset (objects,
            scalars, arrays, enums, unions, ``$defs``).
        ArgumentTypeError: ``input_model`` is not a pydantic model class.

    Examples:
        >>> class Review(BaseModel):
        ...     verdict: str
        ...     score: int
        >>> factory = StructuredMessageFactory(
        ...     input_model=Review, format_string="{verdict} ({score})"
        ... )
        >>> message = factory.StructuredMessage(
        ...     content=Review(verdict="good", score=8), source="critic",
        ...     format_string=factory.format_string,
        ... )
        >>> message.to_text()
        'good (8)'
        >>> loaded = StructuredMessageFactory.load_component(factory.dump_component())
        >>> loaded.ContentModel(verdict="fine", score=6).model_dump()
        {'verdict': 'fine', 'score': 6}
    """

    component_type: ClassVar[str] = "structured_message"
    component_config_schema: ClassVar[type[BaseModel]] = StructuredMessageFactoryConfig

    def __init__(
        self,
        json_schema: dict[str, Any] | None = None,
        *,
        input_model: type[BaseModel] | None = None,
        format_string: str | None = None,
        content_model_name: str | None = None,
    ) -> None:
        from .._schema_model import schema_to_model
        from ..errors import ArgumentTypeError, InvalidArgumentError

        if (json_schema is None) == (input_model is None):
            raise InvalidArgumentError(
                "StructuredMessageFactory needs exactly one of `json_schema` and `input_model`: "
                "StructuredMessageFactory(input_model=MyContent) or "
                "StructuredMessageFactory(json_schema=MyContent.model_json_schema()).",
                argument="input_model" if json_schema is None else "json_schema",
            )
        if input_model is not None:
            if not (isinstance(input_model, type) and issubclass(input_model, BaseModel)):
                raise ArgumentTypeError(
                    f"StructuredMessageFactory: `input_model` must be a pydantic model class, "
                    f"not {input_model!r}.",
                    argument="input_model",
                )
            content: type[BaseModel] = input_model
        else:
            assert json_schema is not None
            content = schema_to_model(json_schema, content_model_name or "GeneratedContentModel")
        self.ContentModel: type[BaseModel] = content
        self.StructuredMessage: type[StructuredMessage[Any]] = StructuredMessage[content]  # type: ignore[valid-type]
        self.format_string = format_string

    def _to_config(self) -> StructuredMessageFactoryConfig:
        return StructuredMessageFactoryConfig(
            json_schema=self.ContentModel.model_json_schema(),
            format_string=self.format_string,
            content_model_name=self.ContentModel.__name__,
        )

    @classmethod
    def _from_config(cls, config: StructuredMessageFactoryConfig) -> StructuredMessageFactory:
        return cls(**config.model_dump())  # the config's fields are options, by name


register_builtin(StructuredMessageFactory, autogen="autogen_agentchat.messages")
