"""EARLIEST/LATEST hint files: decimal text without a trailing newline. Readers trust a hint
only as Java's HintFileUtils does (LATEST only if LATEST+1 is absent, EARLIEST only if that
snapshot exists); otherwise the directory listing decides."""

from __future__ import annotations

__all__ = ["EARLIEST", "LATEST", "encode_hint", "decode_hint"]

EARLIEST = "EARLIEST"
LATEST = "LATEST"


def encode_hint(value: int) -> str:
    return str(int(value))


def decode_hint(text: str | bytes) -> int | None:
    """The snapshot id a hint names, or None for anything that is not one (damage, a hint
    being written): a hint is never trusted blindly (see the module), so an unusable one only
    means the directory listing decides, as when it is absent."""
    try:
        raw = text.decode("utf-8") if isinstance(text, bytes) else text
        value = int(raw.strip()) if raw.strip().lstrip("-").isdigit() and len(raw) < 64 else None
    except (ValueError, UnicodeDecodeError):
        return None
    return value
