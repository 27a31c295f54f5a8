"""The planner's topics, one module each: what every topic shares (:mod:`.context`: the config,
the plan's clock and sizes), declared tags (:mod:`.tags`), branches (:mod:`.branches`), auto tags
(:mod:`.auto_tags`), tags and branches no longer declared (:mod:`.objects`), maintenance jobs
(:mod:`.maintenance`, with which jobs a table gets, :mod:`.enabled_jobs`, and when they are due,
:mod:`.schedules`) and managed table options (:mod:`.table_options`).

:mod:`tablekeeper.reconcile.planner` is the entry that calls them in order; the rules they apply
are core's, never restated here.
"""
