"""The catalog options, spelled as Paimon spells them (``CatalogOptions``, ``JdbcCatalogOptions``,
``RESTCatalogOptions``), parsed and checked once: a wrong value is refused naming the option."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tablekeeper.core import errors
from tablekeeper.core.values import parse_duration

__all__ = ["CatalogOptions", "METASTORES", "parse_catalog_options", "LOCK_ACQUIRE_TIMEOUT_S", "LOCK_CHECK_MAX_SLEEP_S", "IGNORED_OPTIONS"]

#: The metastores tablekeeper reads (Paimon's ``metastore`` values it implements).
METASTORES = ("filesystem", "hive", "jdbc", "rest")
#: Paimon's defaults: ``lock-acquire-timeout`` 8 min, ``lock-check-max-sleep`` 8 s.
LOCK_ACQUIRE_TIMEOUT_S = 480.0
LOCK_CHECK_MAX_SLEEP_S = 8.0
#: Paimon metastores tablekeeper does not read (yet): refused, never treated as a filesystem.
_KNOWN_UNSUPPORTED = ("dlf", "glue", "hadoop")
#: Options Paimon users set that tablekeeper accepts but that change nothing for it.
#: (Listed in docs/catalogs.md as accepted: they tune clients tablekeeper does not keep.)
IGNORED_OPTIONS = ("client-pool-size", "cache-enabled", "cache.expire-after-access", "cache.expire-after-write",
                 "table.type", "sync-all-properties")
_NOT_IMPLEMENTED = ("hive-conf-dir", "hadoop-conf-dir", "lock.type", "lock-ttl")


@dataclass(frozen=True)
class CatalogOptions:
    """One catalog's options: the metastore, where it is, and the commit lock's settings.
    ``raw`` keeps every option as given (``jdbc.*``, ``token``, ``dlf.*`` ... are read by the
    metastore's own module)."""

    metastore: str = "filesystem"
    uri: str | None = None
    warehouse: str | None = None
    lock_enabled: bool = False
    lock_acquire_timeout_s: float = LOCK_ACQUIRE_TIMEOUT_S
    lock_check_max_sleep_s: float = LOCK_CHECK_MAX_SLEEP_S
    raw: Mapping[str, str] = field(default_factory=dict)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.raw.get(key, default)

    def require(self, key: str, what: str) -> str:
        value = self.raw.get(key)
        if not value:
            raise errors.CatalogError(f"metastore={self.metastore} needs {key!r} ({what})", option=key,
                                      fix=f"pass --catalog-option {key}=...")
        return value


def _bool(options: Mapping[str, str], key: str) -> bool:
    text = options.get(key, "false").strip().lower()
    if text not in ("true", "false"):
        raise errors.CatalogError(f"catalog option {key}={options[key]!r} is not true or false", option=key,
                                  fix=f"set {key}=true or {key}=false")
    return text == "true"


def _seconds(options: Mapping[str, str], key: str, default: float) -> float:
    if key not in options:
        return default
    try:
        return parse_duration(options[key], field=key).total_seconds()
    except errors.InvalidInputError as e:
        raise errors.CatalogError(f"catalog option {key}={options[key]!r} is not a duration", option=key,
                                  fix=f"write it as Paimon does, e.g. {key}='8 min'") from e


def parse_catalog_options(options: Mapping[str, str], *, warehouse: str | None = None) -> CatalogOptions:
    """Check ``options`` (``metastore`` defaults to ``filesystem``; ``warehouse`` may come from
    ``--warehouse``). Raises CatalogError naming the option for anything unknown or unimplemented."""
    raw = {k.strip(): str(v).strip() for k, v in options.items()}
    if warehouse and "warehouse" not in raw:
        raw["warehouse"] = warehouse
    metastore = raw.get("metastore", "filesystem").lower()
    if metastore not in METASTORES:
        known = "; Paimon's " + metastore + " catalog is not supported by tablekeeper" if metastore in _KNOWN_UNSUPPORTED \
            else ""
        raise errors.CatalogError(f"unknown metastore {raw.get('metastore')!r}{known}", option="metastore",
                                  fix=f"set metastore to one of {', '.join(METASTORES)}")
    for key in _NOT_IMPLEMENTED:
        if key in raw:
            raise errors.CatalogError(f"catalog option {key!r} is not implemented by tablekeeper", option=key,
                                      fix=f"remove {key}; give the metastore's uri (and its options) directly")
    lock_enabled = _bool(raw, "lock.enabled")
    if lock_enabled and metastore in ("filesystem", "rest"):
        raise errors.CatalogError(f"lock.enabled=true has no lock with metastore={metastore}", option="lock.enabled",
                                  fix="use metastore=hive or metastore=jdbc for a catalog lock, or drop lock.enabled")
    return CatalogOptions(metastore=metastore, uri=raw.get("uri") or None, warehouse=raw.get("warehouse") or None,
                          lock_enabled=lock_enabled,
                          lock_acquire_timeout_s=_seconds(raw, "lock-acquire-timeout", LOCK_ACQUIRE_TIMEOUT_S),
                          lock_check_max_sleep_s=_seconds(raw, "lock-check-max-sleep", LOCK_CHECK_MAX_SLEEP_S),
                          raw=raw)
