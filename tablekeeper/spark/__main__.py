"""``python -m tablekeeper.spark`` (or ``spark-submit .../tablekeeper/spark/__main__.py``): run one
maintenance operation on Spark and write the JSON result artifact.

Exit codes: 0 the run succeeded (deletion failures, if any, are counted in the artifact);
1 the run failed (see ``errors`` in the artifact: nothing was deleted after the failure);
2 bad arguments.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

if __package__ in (None, ""):  # run as a file by spark-submit: don't let this directory shadow modules
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]


def main(argv: Sequence[str] | None = None) -> int:
    from tablekeeper.core import errors
    from tablekeeper.spark import dispatch, job_request, result_artifact


    try:
        request, settings = job_request.parse_args(sys.argv[1:] if argv is None else argv)
    except errors.TablekeeperError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 2
    from tablekeeper.spark import job, session

    result = job.run_started(request, lambda: session.start(settings["master"], settings["remote"], settings["conf"],
                                                            app_name=request.run_name or "tablekeeper"))
    if request.result:
        result_artifact.write_result(request.result, result, request.storage_options())
    print(json.dumps(dispatch.describe(result), indent=2, default=str))
    return 0 if result.status == "Succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
