"""The engine: Paimon metadata I/O, tags, branches and maintenance planners/executors.

Nothing in here knows about Kubernetes, Spark or the CLI (enforced by import-linter).
"""
