"""What the operator writes on its objects, and the words it uses there.

- :mod:`.conditions`: ``metav1.Condition`` building and the stable reason vocabulary
  (:class:`~.conditions.Reason`), kstatus-compatible;
- :mod:`.errors`: every error as a :class:`~.errors.Failure` (reason, message, temporary or not)
  and the one mapping of failures to Kopf's retry semantics;
- :mod:`.outcome`: what one reconcile concluded (:class:`~.outcome.Outcome`) and the minimal
  status patch that records it;
- :mod:`.markers`: the reserved annotation and label keys under ``tablekeeper.io/``.

Pure data and rules: nothing here reads the cluster or talks to the API.
"""
