"""Paimon on-disk formats: metadata JSON models and codecs, hints, layout, manifests, and the
table handle. The pypaimon adapter (``pypaimon_adapter``) is the only module that imports
pypaimon."""
