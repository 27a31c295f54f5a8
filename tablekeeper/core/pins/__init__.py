"""What pins a table's history: for each branch, which rule or reference holds the oldest
retained snapshot, and how many snapshots each one alone keeps (``explain``). Computed by
running expiration's own range rule (``expire.compute_range``) with that one pin taken away:
no second rule set."""
