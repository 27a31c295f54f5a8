"""Consumers of a table: which consumer ids exist and what they hold back (``listing``), and
which are removed or moved (``planning``: Paimon's ``consumer.expiration-time``,
``clear_consumers`` and ``reset_consumer``, as plans the executor carries out)."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"list_consumers": "listing", "without_consumers": "listing", "holding_more_than": "listing", "ConsumerRow": "listing", "expiration_of": "planning", "EXPIRATION_OPTION": "planning",
    "plan_clear": "planning", "plan_expire": "planning", "plan_reset": "planning"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .listing import (list_consumers as list_consumers, without_consumers as without_consumers,
        holding_more_than as holding_more_than, ConsumerRow as ConsumerRow)
    from .planning import (expiration_of as expiration_of, EXPIRATION_OPTION as EXPIRATION_OPTION,
        plan_clear as plan_clear, plan_expire as plan_expire, plan_reset as plan_reset)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
