"""An image for multimodal model input: raw bytes plus a MIME type.

Pillow is optional. ``Image`` keeps the encoded bytes it was given, so building one from a
file, a data URI or base64 text needs nothing beyond the standard library; only
``Image.from_pil``, ``Image(pil_image)`` and the ``.image`` property import Pillow.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import io
import mimetypes
import os
from typing import Any, Literal

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from ..errors import InvalidTypeError, InvalidValueError

__all__ = ["Image", "ImageDetail"]

ImageDetail = Literal["auto", "high", "low"]
"""The ``detail`` levels the Chat Completions API accepts for an image part."""

# Magic numbers of the formats vision models accept, checked in order.
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


def _sniff_mime_type(data: bytes) -> str | None:
    """Return the MIME type the leading bytes of ``data`` announce, or None."""
    for signature, mime_type in _SIGNATURES:
        if data.startswith(signature):
            return mime_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _import_pil_image() -> Any:
    """Import ``PIL.Image`` or explain how to install it."""
    try:
        return importlib.import_module("PIL.Image")
    except ImportError as exc:
        raise ImportError(
            "Pillow is needed to convert between flowlib `Image` and PIL images: "
            "run `pip install pillow`."
        ) from exc


def _is_pil_image(obj: object) -> bool:
    """Tell whether ``obj`` is a PIL image without importing Pillow when it is not loaded."""
    return any(
        cls.__module__.startswith("PIL.") and cls.__name__ == "Image" for cls in type(obj).__mro__
    )


class Image:
    """An encoded image (PNG, JPEG, GIF, WebP, ...) and its MIME type.

    ``Image`` values compare equal when their bytes and MIME type are equal, can be used
    as pydantic fields (they serialise to ``{"data": <base64>, "mime_type": ...}`` in JSON
    mode and validate back from that form), and render as Chat Completions content parts
    with [`to_openai_format`][flowlib.models.Image.to_openai_format].

    Args:
        image: The encoded image bytes, or a PIL image (which is encoded as PNG; this
            needs Pillow).
        mime_type: The MIME type of ``image`` when it is bytes. Detected from the bytes
            when omitted.

    Raises:
        ValueError: The MIME type was not given and cannot be detected from the bytes.
        TypeError: ``image`` is neither bytes nor a PIL image.

    Examples:
        >>> png = Image(b"\\x89PNG\\r\\n\\x1a\\n" + bytes(16))
        >>> png.mime_type
        'image/png'
        >>> png.to_openai_format(detail="low")["image_url"]["detail"]
        'low'
    """

    __slots__ = ("_data", "_mime_type")

    def __init__(self, image: object, *, mime_type: str | None = None) -> None:
        if isinstance(image, (bytes, bytearray, memoryview)):
            data = bytes(image)
        elif _is_pil_image(image):
            data = self._encode_pil(image)
            mime_type = "image/png"
        else:
            raise InvalidTypeError(
                f"`Image` takes encoded image bytes or a PIL image, not {type(image).__name__}; "
                "use Image.from_file(), Image.from_uri() or Image.from_base64() for other sources."
            )
        if mime_type is None:
            mime_type = _sniff_mime_type(data)
            if mime_type is None:
                raise InvalidValueError(
                    "Cannot detect the image format from its bytes; pass `mime_type=` "
                    "(e.g. mime_type='image/png')."
                )
        self._data = data
        self._mime_type = mime_type

    @staticmethod
    def _encode_pil(pil_image: Any) -> bytes:
        buffer = io.BytesIO()
        pil_image.save(buffer, format="PNG")
        return buffer.getvalue()

    # -- constructors -------------------------------------------------------------------

    @classmethod
    def from_pil(cls, pil_image: Any) -> Image:
        """Build an image from a PIL image, encoded as PNG.

        Args:
            pil_image: A ``PIL.Image.Image``.

        Returns:
            The image, with MIME type ``image/png``.

        Raises:
            ImportError: Pillow is not installed (``pip install pillow``).
            TypeError: ``pil_image`` is not a PIL image.
        """
        pil_module = _import_pil_image()
        if not isinstance(pil_image, pil_module.Image):
            raise InvalidTypeError(
                f"Image.from_pil() takes a PIL image, not {type(pil_image).__name__}."
            )
        return cls(cls._encode_pil(pil_image), mime_type="image/png")

    @classmethod
    def from_file(cls, file_path: str | os.PathLike[str]) -> Image:
        """Read an image file.

        The MIME type comes from the file's bytes, or from its extension when the bytes
        are not a format flowlib recognises.

        Args:
            file_path: Path of the image file.

        Returns:
            The image.

        Raises:
            OSError: The file cannot be read.
            ValueError: The format is recognised neither from the bytes nor the extension.
        """
        with open(file_path, "rb") as file:
            data = file.read()
        mime_type = _sniff_mime_type(data)
        if mime_type is None:
            guessed, _ = mimetypes.guess_type(os.fspath(file_path))
            if guessed is None or not guessed.startswith("image/"):
                raise InvalidValueError(
                    f"Cannot tell the image format of `{os.fspath(file_path)}`; read the bytes "
                    "yourself and pass them as Image(data, mime_type=...)."
                )
            mime_type = guessed
        return cls(data, mime_type=mime_type)

    @classmethod
    def from_uri(cls, uri: str) -> Image:
        """Build an image from a base64 data URI (``data:image/png;base64,...``).

        Args:
            uri: The data URI.

        Returns:
            The image, with the MIME type the URI names.

        Raises:
            ValueError: ``uri`` is not a base64 ``data:`` URI of an image, or its payload
                is not valid base64.
        """
        header, sep, payload = uri.partition(",")
        if not sep or not header.startswith("data:") or not header.endswith(";base64"):
            raise InvalidValueError(
                "Image.from_uri() takes a base64 data URI such as "
                "'data:image/png;base64,iVBORw0...'; download other URLs yourself and use "
                "Image(data) or Image.from_base64()."
            )
        mime_type = header[len("data:") : -len(";base64")].split(";", 1)[0]
        if not mime_type.startswith("image/"):
            raise InvalidValueError(
                f"The data URI holds `{mime_type or 'no MIME type'}`, not an image."
            )
        return cls(_b64decode(payload), mime_type=mime_type)

    @classmethod
    def from_base64(cls, base64_str: str, *, mime_type: str | None = None) -> Image:
        """Build an image from base64 text.

        Args:
            base64_str: The base64-encoded image bytes.
            mime_type: The MIME type; detected from the decoded bytes when omitted.

        Returns:
            The image.

        Raises:
            ValueError: The text is not valid base64, or the format cannot be detected.
        """
        return cls(_b64decode(base64_str), mime_type=mime_type)

    # -- accessors ----------------------------------------------------------------------

    @property
    def data(self) -> bytes:
        """The encoded image bytes."""
        return self._data

    @property
    def mime_type(self) -> str:
        """The MIME type, e.g. ``image/png``."""
        return self._mime_type

    @property
    def data_uri(self) -> str:
        """The image as a base64 data URI, ``data:<mime type>;base64,<data>``."""
        return f"data:{self._mime_type};base64,{self.to_base64()}"

    @property
    def image(self) -> Any:
        """The image decoded as a ``PIL.Image.Image`` (needs Pillow)."""
        pil_module = _import_pil_image()
        return pil_module.open(io.BytesIO(self._data))

    def to_base64(self) -> str:
        """Return the image bytes as base64 text."""
        return base64.b64encode(self._data).decode("ascii")

    def to_openai_format(self, detail: ImageDetail = "auto") -> dict[str, Any]:
        """Return the image as a Chat Completions ``image_url`` content part.

        Args:
            detail: The resolution the model should look at the image with.

        Returns:
            ``{"type": "image_url", "image_url": {"url": <data URI>, "detail": detail}}``.
        """
        return {"type": "image_url", "image_url": {"url": self.data_uri, "detail": detail}}

    # -- value semantics ----------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Image):
            return NotImplemented
        return self._mime_type == other.mime_type and self._data == other.data

    def __hash__(self) -> int:
        return hash((self._mime_type, self._data))

    def __repr__(self) -> str:
        return f"Image(mime_type={self._mime_type!r}, size={len(self._data)})"

    # -- pydantic integration -----------------------------------------------------------

    @classmethod
    def _validate(cls, value: Any) -> Image:
        if isinstance(value, Image):
            return value
        # Only the exact serialised shape is accepted, so that in a union with
        # ``dict[str, Any]`` an ordinary dict is never mistaken for an image.
        if isinstance(value, dict) and value.keys() == {"data", "mime_type"}:
            data, mime_type = value["data"], value["mime_type"]
            if isinstance(data, str) and isinstance(mime_type, str):
                return cls.from_base64(data, mime_type=mime_type)
        raise InvalidValueError(
            'expected an Image or {"data": <base64 str>, "mime_type": <str>}, '
            f"got {type(value).__name__}"
        )

    def _serialize(self) -> dict[str, str]:
        return {"data": self.to_base64(), "mime_type": self._mime_type}

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source_type: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """Validate from an ``Image`` or its serialised dict; dump to that dict in JSON mode."""
        return core_schema.no_info_plain_validator_function(
            cls._validate,
            serialization=core_schema.plain_serializer_function_ser_schema(
                cls._serialize, when_used="json"
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """Describe the serialised form: base64 data and MIME type."""
        return {
            "title": "Image",
            "type": "object",
            "properties": {
                "data": {"type": "string", "contentEncoding": "base64"},
                "mime_type": {"type": "string"},
            },
            "required": ["data", "mime_type"],
        }


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise InvalidValueError(f"Invalid base64 image data: {exc}") from exc
