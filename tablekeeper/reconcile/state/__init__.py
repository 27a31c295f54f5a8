"""What reconciliation starts from: the YAML documents and CRs validated into objects
(:mod:`.documents`), those objects joined into per-table targets (:mod:`.desired`), what storage
says a table is now (:mod:`.observe`), and the ownership and run records that say which tags and
branches tablekeeper made and when each job last ran (:mod:`.records`).

Nothing here decides what to change; that is :mod:`tablekeeper.reconcile.planner`'s.
"""
