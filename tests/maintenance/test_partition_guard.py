"""expire-partitions runs the format guard inside its decision's view, after the lease (so the
guard's reads are the decision's; docs/storage-internals.md): a snapshot or schema of an unknown format
version still stops it with exit code 2 naming the file, nothing changed, the lease released."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tablekeeper.cli.main import main
from tests.maintenance.helpers import table_root
from tests.support.paimon import append_table, rows, write


def _files(wh: str) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(Path(wh).rglob("*")) if p.is_file()}


@pytest.mark.parametrize("newer", ["snapshot/snapshot-3", "schema/schema-0"])
def test_unknown_format_stops_expire_partitions(tmp_path: Path, newer: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path / "wh")
    t = append_table(wh, options={"partition.expiration-time": "7 d", "partition.timestamp-formatter": "yyyyMMdd"})
    for i, dt in enumerate(["20260101", "20260102", "20260119"]):
        write(t, rows(dt, 10 * i))
    path = Path(table_root(wh)) / newer
    data = json.loads(path.read_text())
    data["version"] = 99
    path.write_text(json.dumps(data, indent=2))
    before = _files(wh)
    code = main(["expire-partitions", "db.orders", "--warehouse", wh, "--now", "2026-01-20T12:00:00",
                 "--zone-known"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert newer.split("/")[1] in err and "version 99" in err
    assert _files(wh) == before  # nothing dropped, no lease left behind
