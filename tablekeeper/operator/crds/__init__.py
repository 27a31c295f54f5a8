"""The CustomResourceDefinitions of the tablekeeper kinds, generated from the policy models in
:mod:`tablekeeper.core.policy` (the single source of every schema).

- :mod:`.kinds`: the kinds (names, scope, printer columns, status fields) and their CRD documents;
- :mod:`.schema`: the pydantic JSON schema of a spec model -> a Kubernetes structural schema;
- :mod:`.validations`: what the CRDs check beyond the JSON schema (CEL rules, refinements);
- :mod:`.reference`: the CRD reference page;
- :mod:`.generate`: writes and checks the files (``python -m tablekeeper.operator.crds``).

Nothing here runs in the operator process: it builds files the chart and ``kubectl`` install.
"""
