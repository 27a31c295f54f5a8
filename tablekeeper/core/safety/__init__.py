"""What keeps a run safe beside writers and other maintainers, and reversible afterwards: the
lease, monotonic hints, the format guard and the crash points (``concurrency``), and the trash
a destructive run moves its files into while a window is open (``trash``).

Both are asked by every executor (``plans``, the Spark delete stage); neither decides what an
operation removes.
"""

__all__: list[str] = []
