"""Reclaiming space: what a retained root reaches (``reach``), and the operations that remove what
none reaches any longer: snapshot and changelog expiration (``expire``), orphan cleanup
(``orphans``) and partition expiration (``partitions``).

The three operations each decide on their own and never import each other; all of them ask
``reach`` what a root reads. What pins history (tags, branches, consumers) is ``refs``'; how a
plan is executed is ``plans``'.
"""

__all__: list[str] = []
