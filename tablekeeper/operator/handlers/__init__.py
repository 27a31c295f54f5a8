"""Thin Kopf handler functions, one module per kind (``handle_<kinds>.py``).

Each function turns Kopf's keyword arguments into an :class:`~tablekeeper.operator.cluster.view.Obj`
and a :class:`~tablekeeper.operator.cluster.view.View`, calls the kind's controller
(:mod:`tablekeeper.operator.controllers`, :mod:`tablekeeper.operator.runs.controller`), and records
the outcome with :func:`~tablekeeper.operator.handlers.common.finish`: a minimal status patch,
mirrored labels, Events, then the Kopf error that carries the retry decision. Handlers return
None (Kopf would store return values in ``status``). The decorators live in
:mod:`tablekeeper.operator.main` only.
"""

__all__: list[str] = []
