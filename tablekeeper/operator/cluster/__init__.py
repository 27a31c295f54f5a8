"""What the operator reads: the cluster as Kopf's indexes hold it.

- :mod:`.view`: object snapshots (:class:`~.view.Obj`), the :class:`~.view.View` over the indexes,
  parsed specs, and what is decided purely over them: which catalog serves a table (tenancy),
  which CR speaks for a table, tag or branch (the oldest wins its identity);
- :mod:`.scopes`: one table as ``tablekeeper.reconcile`` sees it (desired state, observation,
  plan, ownership records in CR status).

Everything here is pure over the view (namespace labels and credentials are fetched by the
runtime beforehand); nothing writes to the API. Resolving a table for one pass, with credentials
and a warehouse connection, is :mod:`tablekeeper.operator.context`.
"""
