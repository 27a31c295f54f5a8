"""String paths: joining and splitting ``scheme://authority/key`` and local paths alike."""

from __future__ import annotations

__all__ = ["join", "parent", "basename"]


def join(base: str, *parts: str) -> str:
    out = base.rstrip("/")
    for part in parts:
        if part:
            out = f"{out}/{part.strip('/')}"
    return out


def parent(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0]


def basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]
