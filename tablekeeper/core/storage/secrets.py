"""Which storage options carry credentials, and how to mask them.

One decision for every front end: the catalog spec refuses secret-looking keys inline, the Spark
launch refuses them in job arguments, and ``show``/errors/status print them masked. Store option
names embed account and container names (``fs.azure.account.key.<account>.dfs.core.windows.net``,
``fs.azure.sas.<container>.<account>.blob.core.windows.net``), so a key is judged by its words, not
by its last segment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["is_secret_option", "redact_options", "redact_text", "MASK"]

MASK = "***"

#: Words that mark an option as a credential, matched against the whole key (case-insensitive).
_SECRET = re.compile(
    r"(secret|password|passwd|credential|access-?key|access\.key|accesskeyid|session-?token|session\.token|"
    r"security-?token|security\.token|securitytoken|(^|[.\-_])token$|account\.key|\.sas\.|^sas|sas-token|"
    r"sas\.token|connection-?string|connection\.string|private\.key|private-key|privatekey|client\.secret|"
    r"delegation)",
    re.IGNORECASE,
)
#: Options whose names contain a secret word but whose values are not secrets (a path, an id).
_NOT_SECRET = re.compile(
    r"(json\.keyfile|keyfile$|private\.key\.id$|private-key-id$|\.provider\.type$|auth\.type$|"
    r"sas\.token\.provider\.type$|account\.auth\.type)",
    re.IGNORECASE,
)


def is_secret_option(key: str) -> bool:
    """Whether the option ``key`` carries a credential (never printed, logged or put in a spec)."""
    return bool(_SECRET.search(key)) and not _NOT_SECRET.search(key)


def redact_options(options: Mapping[str, object]) -> dict[str, object]:
    """A copy of ``options`` with every secret value replaced by :data:`MASK`."""
    return {k: (MASK if is_secret_option(k) else v) for k, v in options.items()}


def redact_text(text: str, options: Mapping[str, object]) -> str:
    """``text`` with every secret option value (and any ``AccountKey=``/``sig=`` fragment of a
    connection string or SAS) masked: for messages built from SDK errors, which may echo them."""
    out = text
    for key, value in options.items():
        if is_secret_option(key) and isinstance(value, str) and len(value) >= 4:
            out = out.replace(value, MASK)
    out = re.sub(r"(AccountKey|SharedAccessSignature|sig)=[^;&\s'\"]+", rf"\1={MASK}", out)
    return out
