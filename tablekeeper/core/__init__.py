"""The engine: Paimon's formats and storage, and every decision tablekeeper makes about a table.

Grouped by what they maintain, from the ground up: ``values`` and ``errors``; ``storage`` (one
FileIO per store); ``paimon`` (the formats) and ``policy`` (what users declare); ``safety``
(concurrency and the trash); ``plans`` (plan types and their execution); ``reclaim`` (reach,
expiration, orphans, partitions); ``refs`` (tags, branches, consumers); ``recovery`` (rollback,
check, repair, what pins history) and ``catalogs``. Nothing in here knows about Kubernetes,
Spark or the CLI (enforced by import-linter).
"""
