"""One controller per kind: what a pass over one object decides and does.

- :mod:`.catalogs`: ``PaimonCatalog`` / ``ClusterPaimonCatalog`` (probed) and the retention
  policies (validated, counted);
- :mod:`.tables`: ``PaimonTable`` (effective policy, table options, policy tags, maintenance
  runs created from :mod:`tablekeeper.operator.runs.schedule`);
- :mod:`.tags`, :mod:`.branches`: ``PaimonTag``, ``PaimonBranch``; what they share (one pass
  resolved once, the write-ahead protocol, their status shapes) is :mod:`.children`, their
  deletion :mod:`.deletion`;
- :mod:`.modes`: the paused and unmanaged reports every kind shares.

Each pass starts from its table resolved once (:mod:`tablekeeper.operator.context`) and returns
an :class:`~tablekeeper.operator.status.outcome.Outcome`; the handlers record it. The controllers
consume the decisions of ``tablekeeper.reconcile`` and core, never restate them. Maintenance runs
are :mod:`tablekeeper.operator.runs`.
"""
