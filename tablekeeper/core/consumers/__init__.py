"""Consumers of a table: which consumer ids exist and what they hold back (``listing``), and
which are removed or moved (``planning``: Paimon's ``consumer.expiration-time``,
``clear_consumers`` and ``reset_consumer``, as plans the executor carries out)."""
