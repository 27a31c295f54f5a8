"""``python -m tablekeeper.operator.crds``: see :mod:`tablekeeper.operator.crds.generate`."""

import sys

from tablekeeper.operator.crds.generate import main

sys.exit(main())
