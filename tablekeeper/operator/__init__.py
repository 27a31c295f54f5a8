"""The Kubernetes front end of tablekeeper (group ``tablekeeper.io``, version ``v1alpha1``).

From the top down:

- :mod:`main`: Kopf settings, the one module with ``@kopf.*`` wiring (``register(registry)``),
  and the ``tablekeeper operator`` entry point (needs the ``operator`` extra: kopf, kubernetes,
  prometheus-client); :mod:`handlers`: thin handler functions, one module per kind group;
- :mod:`controllers`: one controller per kind (catalogs and policies, tables, tags, branches);
  :mod:`runs`: maintenance runs (schedule, steps, engines, Spark launches, results);
- :mod:`context`: a table resolved once per pass (catalog, credentials, members, connection);
- :mod:`runtime`: per-process state (locks, caches, the API bridge); :mod:`settings`,
  :mod:`metrics`, :mod:`persistence` (Kopf's state in status), :mod:`kopfcompat` (every use of
  Kopf internals), :mod:`rbac` (every API permission the operator needs);
- :mod:`cluster`: what the operator reads (index snapshots, identities, tenancy, one table as
  ``tablekeeper.reconcile`` sees it); :mod:`status`: what it writes (conditions and reasons,
  outcomes, the one mapping of errors to Kopf retry semantics, annotation and label keys);
- :mod:`crds`: the generated CRDs (``python -m tablekeeper.operator.crds``).

Importing this package imports nothing heavy; :mod:`main` and the controllers import Kopf. The core
and ``tablekeeper.reconcile`` never import this package (import-linter), and nothing here imports
pyspark. See docs/operator.md.
"""

__all__: list[str] = []
