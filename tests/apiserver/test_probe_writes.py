import logging
from pathlib import Path
from tests.apiserver.harness import RealHarness
from tests.operator.conftest import basic_objects, obj
from tests.support.apiserver import metric_counts
from collections import Counter
import asyncio

class Cap(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG); self.lines=[]
    def emit(self, r):
        m = r.getMessage()
        if "atching" in m or "Posting" in m or "event" in m.lower()[:30]:
            self.lines.append(f"{r.name}: {m[:400]}")

def counts(h):
    out = Counter()
    for labels, v in metric_counts(h.testenv.metrics()):
        res = labels.get("resource","") + ("/"+labels["subresource"] if labels.get("subresource") else "")
        if labels.get("verb") in ("POST","PATCH","PUT","DELETE"):
            out[(res, labels["verb"], labels.get("code"))] += int(v)
    return out

async def test_probe(real_harness: RealHarness, warehouse: Path) -> None:
    h = real_harness
    cap = Cap(); lg = logging.getLogger("kopf"); lg.addHandler(cap); lg.setLevel(logging.DEBUG); l2=logging.getLogger("tablekeeper"); l2.addHandler(cap); l2.setLevel(logging.DEBUG)
    await h.start()
    for body in basic_objects(warehouse):
        await h.apply(body)
    await h.wait_condition("PaimonTable", "orders", reason="Reconciled")
    await asyncio.sleep(3)
    before = counts(h); cap.lines.clear()
    await h.apply(obj("PaimonTag", "nightly", {"tableRef": {"name": "orders"}, "snapshotId": 3, "deletionPolicy": "Delete"}))
    await h.wait_condition("PaimonTag", "nightly", reason="Created")
    await asyncio.sleep(4)
    d = counts(h) - before
    print("DELTA", dict(d))
    for l in cap.lines: print("LOG", l)
    print("OBJ", h.get("PaimonTag", "nightly")["metadata"])
