"""Small helpers that keep flowlib's messages grammatical: "an int", "1 edge", and no
".." where a quoted message already ends its sentence."""

from __future__ import annotations

__all__ = ["a", "clause", "counted"]

_VOWEL_SOUND = ("a", "e", "i", "o", "u")
_CONSONANT_SOUND = ("uni", "use", "uri", "url", "one")  # "a UserMessage", "a URL"


def a(word: str) -> str:
    """``word`` with its indefinite article: ``a(int)`` -> ``"an int"``."""
    lower = word.lower()
    vowel = lower.startswith(_VOWEL_SOUND) and not lower.startswith(_CONSONANT_SOUND)
    return f"{'an' if vowel else 'a'} {word}"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun`` in the right number: ``counted(1, "edge")`` -> ``"1 edge"``,
    ``counted(2, "reply", "replies")`` -> ``"2 replies"``."""
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"


def clause(text: object) -> str:
    """``text`` (an error's message) without the full stop it may end with, to be put
    before a full stop of the caller's own: no ``"boom.."``."""
    words = str(text).rstrip()
    if words.endswith(".") and not words.endswith("..."):
        return words[:-1]
    return words
