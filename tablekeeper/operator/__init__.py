"""The Kubernetes front end of tablekeeper (group ``tablekeeper.io``, version ``v1alpha1``).

Modules, one concept each:

- :mod:`crds`: CustomResourceDefinitions generated from the policy models in
  ``tablekeeper.core.policy`` (the single source of the schemas) and the CRD reference page;
  ``python -m tablekeeper.operator.crds --out crds/``.
- :mod:`validations`: the CEL rules and schema refinements the CRDs add to the models' JSON
  schema, and the model checks a CRD cannot state.
- :mod:`rbac`: every Kubernetes API permission the operator needs, in one place (the Helm chart's
  RBAC is tested against it).
- :mod:`main`: Kopf settings and the ``tablekeeper operator`` entry point (needs the ``operator``
  extra: kopf, kubernetes, prometheus-client).

Importing this package imports nothing heavy; only :mod:`main` imports Kopf. The core never imports
this package (import-linter), and nothing here imports pyspark.
"""

__all__: list[str] = []
