"""expire_commit.promote_to_oldest_generation: the tail of an in-process expiration."""

from __future__ import annotations

from typing import Any


def test_promoting_after_a_paused_collector_keeps_garbage_collectable() -> None:
    """expire_commit.run_expire's tail: what the paused collector let pile up is moved to the
    oldest generation (no young collection walks it afterwards), and cycles among it are still
    collected by a full collection."""
    import gc
    import weakref

    from tablekeeper.core.reclaim.expire.commit import promote_to_oldest_generation

    class Node:
        other: Any = None

    was = gc.isenabled()
    gc.disable()
    try:
        kept = [[i] for i in range(5000)]
        a, b = Node(), Node()
        a.other, b.other = b, a
        dead = weakref.ref(a)
        del a, b
        promote_to_oldest_generation()
        assert gc.get_count()[0] < 100 and gc.get_freeze_count() == 0
        gc.collect()
        assert dead() is None and len(kept) == 5000
    finally:
        if was:
            gc.enable()
