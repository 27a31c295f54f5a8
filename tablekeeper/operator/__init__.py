"""The Kubernetes front end of tablekeeper (group ``tablekeeper.io``, version ``v1alpha1``).

Modules, one concept each:

- :mod:`main`: Kopf settings, the one module with ``@kopf.*`` wiring (``register(registry)``),
  and the ``tablekeeper operator`` entry point (needs the ``operator`` extra: kopf, kubernetes,
  prometheus-client);
- :mod:`handlers`: thin handler functions, one module per kind group, recording outcomes;
- controllers: :mod:`objects` (PaimonTag, PaimonBranch), :mod:`tables` (PaimonTable),
  :mod:`maintenance` (scheduling runs), :mod:`runs` (PaimonMaintenanceRun), :mod:`engines`
  (where a run executes), :mod:`catalogs` (catalogs and retention policies);
- :mod:`scopes`: one table as ``tablekeeper.reconcile`` sees it (the shared planner and applier;
  ownership records in CR status); :mod:`cluster`: index snapshots, identities, conflicts,
  tenancy; :mod:`runtime`: per-process state (locks, caches, the API bridge);
- :mod:`conditions`, :mod:`status`, :mod:`errors` (the one mapping of errors to Kopf retry
  semantics), :mod:`markers` (annotation and label keys), :mod:`metrics`, :mod:`settings`;
- :mod:`kopfcompat`: every use of Kopf internals; :mod:`crds`, :mod:`validations`: the generated
  CRDs; :mod:`rbac`: every API permission the operator needs.

Importing this package imports nothing heavy; :mod:`main` and the controllers import Kopf. The core
and ``tablekeeper.reconcile`` never import this package (import-linter), and nothing here imports
pyspark. See docs/operator.md.
"""

__all__: list[str] = []
