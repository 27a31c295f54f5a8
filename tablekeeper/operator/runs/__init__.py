"""``PaimonMaintenanceRun``: one auditable maintenance execution, from its schedule to its result.

- :mod:`.schedule`: which jobs a table runs and when (the table controller creates the runs);
- :mod:`.controller`: the run's steps (``start``, ``execute``, the periodic check);
- :mod:`.context`: a run's context resolved once per step (table, catalog, engine, deadline);
- :mod:`.claims`: which run holds a table (one at a time; Spark runs in flight);
- :mod:`.request`: what a run asks an engine for and gets back; :mod:`.engines`: the in-process
  engine and the choice of engine; :mod:`.verbs`: the branch verbs;
- :mod:`.spark`: launching, observing and reading back Spark runs; :mod:`.report`: the one
  ``status.result`` of every engine.

The engines run core's decisions through ``tablekeeper.reconcile``; nothing here imports pyspark
(the Spark job is launched as a Kubernetes object).
"""
