"""The bad-input matrices of every surface hold at least 25 malformed inputs each (their counts
are in docs/robustness.md): the CLI's command lines, the CRs (samples a cluster and the models
refuse, manifests ``plan``/``apply`` refuse), metadata JSON and Avro files, inventories, a REST catalog server's answers."""

from __future__ import annotations

from tests.catalogs.test_rest_bad_responses import CASES as REST_CASES
from tests.cli.test_bad_arguments import CASES as CLI_CASES
from tests.maintenance.test_damaged_metadata import AVRO_CASES, JSON_CASES, MATRIX
from tests.maintenance.test_inventory_bad_input import CASES as INVENTORY_CASES
from tests.operator.test_samples import INVALID as INVALID_CRS
from tests.reconcile.test_bad_manifests import CASES as BAD_MANIFESTS


def test_every_surface_has_at_least_25_malformed_inputs() -> None:
    counts = {"cli": len(CLI_CASES), "crs": len(INVALID_CRS) + len(BAD_MANIFESTS), "metadata-json": len(JSON_CASES),
              "manifests": len(AVRO_CASES), "inventories": len(INVENTORY_CASES),
              "catalog-responses": len(REST_CASES)}
    assert all(n >= 25 for n in counts.values()), counts
    assert len(MATRIX) >= 40, len(MATRIX)  # destructive commands x the file kinds each reads
