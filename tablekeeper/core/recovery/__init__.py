"""Getting a table back on its feet: what a rollback writes (``rollback``: the target, the new
latest snapshot, the tags that keep it readable) and the catalog-owned writes it makes
(``catalog_writes``: one function per operation, so a catalog service can carry them)."""
