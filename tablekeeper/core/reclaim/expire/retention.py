"""One retention value: how much snapshot and changelog history a table keeps, resolved once.

Every front end used to assemble expiration settings itself (the reconcile planner and applier,
the operator's Spark launch, the in-process Spark engine, the CLI), each with its own copy of the
"decoupled changelog" rule, and plan and apply disagreed on the changelog's expire limit
(issue #11). Now a :class:`Retention` is built in exactly one of two ways and validated once:

- :func:`from_options`: Paimon table options (``snapshot.*``, ``changelog.*``, Paimon's defaults
  where unset) with :class:`RetentionFlags` on top (CLI flags), as ``ExpireSnapshotsImpl`` reads
  them;
- :func:`from_policy`: an effective policy's values (``snapshots.*``, ``changelog.*``), which
  already rank the table's own options below every policy level.

It travels *inside* what is run: the reconcile actions ``ExpireSnapshots`` / ``ExpireChangelog``
and the Spark ``JobRequest`` (``to_dict`` / ``from_dict``, the JSON of ``--retention``), so the
planner, the applier, the operator, the CLI and both Spark evaluators expire with the very values
the plan was made with. ``core.reclaim.expire.expire_config`` / ``changelog_config`` turn it into the
planners' configs, adding the table facts (changelog producer, consumer mode) read at plan time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import timedelta
from typing import Any

from tablekeeper.core import errors, values

__all__ = ["INT_MAX", "Retention", "RetentionFlags", "from_options", "from_policy"]

#: Paimon's "unlimited" for ``*.num-retained.max``.
INT_MAX = 2**31 - 1

_DEFAULT_MIN = 10
_DEFAULT_TIME = timedelta(hours=1)
_DEFAULT_LIMIT = 50


@dataclass(frozen=True)
class Retention:
    """Resolved, validated retention of one table (construction validates; it raises
    ``UnsafePolicyError`` / ``InvalidInputError`` with a fix, and nothing is planned then).

    ``changelog_*``: the long-lived changelog's retention (``changelog.*``; equal to the snapshot
    values when the table does not decouple it). ``expire_limit`` bounds one batch of snapshot
    *and* of changelog expiration, as Paimon's ``snapshot.expire.limit`` does."""

    retain_min: int = _DEFAULT_MIN
    retain_max: int = INT_MAX
    time_retained: timedelta = _DEFAULT_TIME
    expire_limit: int = _DEFAULT_LIMIT
    clean_empty_directories: bool = False
    changelog_retain_min: int = _DEFAULT_MIN
    changelog_retain_max: int = INT_MAX
    changelog_time_retained: timedelta = _DEFAULT_TIME

    def __post_init__(self) -> None:
        for value, key in ((self.retain_min, "snapshot.num-retained.min"),
                           (self.changelog_retain_min, "changelog.num-retained.min")):
            if value < values.MIN_RETAIN_MIN:
                raise errors.UnsafePolicyError(f"{key} must be >= {values.MIN_RETAIN_MIN}, got {value}",
                                               fix="keep at least one snapshot (Paimon issue #10088)")
        for low, high, what in ((self.retain_min, self.retain_max, "snapshot.num-retained"),
                                (self.changelog_retain_min, self.changelog_retain_max, "changelog.num-retained")):
            if high < low:
                raise errors.UnsafePolicyError(f"{what}.max ({high}) < {what}.min ({low})",
                                               fix="raise the max or lower the min")
        if self.expire_limit < 1:
            raise errors.InvalidInputError(f"snapshot.expire.limit must be >= 1, got {self.expire_limit}",
                                           fix="e.g. 50")
        for age, key in ((self.time_retained, "snapshot.time-retained"),
                         (self.changelog_time_retained, "changelog.time-retained")):
            if age < timedelta(0):
                raise errors.InvalidInputError(f"{key} must not be negative", fix="e.g. '1 h'")

    @property
    def changelog_decoupled(self) -> bool:
        """Whether the changelog outlives its snapshots (Paimon's ``changelogDecoupled``): it
        retains more than the snapshots — more at minimum or maximum, or for longer. Then expiring
        snapshots live on as ``changelog-N`` files. The only copy of this rule."""
        return (self.changelog_retain_max > self.retain_max or self.changelog_retain_min > self.retain_min
                or self.changelog_time_retained > self.time_retained)

    def to_dict(self) -> dict[str, Any]:
        """JSON form with the policy's field names and Paimon duration text (``maxRetained``
        omitted = unlimited); :func:`Retention.from_dict` reads it back unchanged."""
        def section(low: int, high: int, age: timedelta) -> dict[str, Any]:
            out: dict[str, Any] = {"minRetained": low, "maxAge": values.format_duration(age)}
            if high != INT_MAX:
                out["maxRetained"] = high
            return out
        return {"snapshots": {**section(self.retain_min, self.retain_max, self.time_retained),
                              "expireLimit": self.expire_limit,
                              "cleanEmptyDirectories": self.clean_empty_directories},
                "changelog": section(self.changelog_retain_min, self.changelog_retain_max,
                                     self.changelog_time_retained)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Retention:
        """Inverse of :meth:`to_dict`.

        Raises:
            InvalidInputError: not the shape ``to_dict`` writes, or invalid values.
        """
        try:
            snap, log = data["snapshots"], data["changelog"]
            return cls(retain_min=int(snap["minRetained"]), retain_max=int(snap.get("maxRetained", INT_MAX)),
                       time_retained=values.parse_duration(snap["maxAge"], field="snapshots.maxAge"),
                       expire_limit=int(snap["expireLimit"]),
                       clean_empty_directories=bool(snap.get("cleanEmptyDirectories", False)),
                       changelog_retain_min=int(log["minRetained"]),
                       changelog_retain_max=int(log.get("maxRetained", INT_MAX)),
                       changelog_time_retained=values.parse_duration(log["maxAge"], field="changelog.maxAge"))
        except (KeyError, TypeError, AttributeError) as e:
            raise errors.InvalidInputError(f"not a retention value: {dict(data)!r} ({e})",
                                           fix="write it with Retention.to_dict()") from e
        except ValueError as e:
            if isinstance(e, errors.TablekeeperError):
                raise
            raise errors.InvalidInputError(f"not a retention value: {dict(data)!r} ({e})",
                                           fix="write it with Retention.to_dict()") from e


@dataclass(frozen=True)
class RetentionFlags:
    """What a caller asks for on top of the table's options (CLI flags, a request); None = not
    asked, the table's option (else Paimon's default) decides. Unset ``changelog_*`` values
    follow the resolved snapshot values, as Paimon's ``changelog.*`` options do."""

    retain_min: int | None = None
    retain_max: int | None = None
    time_retained: timedelta | None = None
    expire_limit: int | None = None
    clean_empty_directories: bool | None = None
    changelog_retain_min: int | None = None
    changelog_retain_max: int | None = None
    changelog_time_retained: timedelta | None = None

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))


def _int(options: Mapping[str, str], key: str) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError as e:
        raise errors.InvalidInputError(f"{key} = {raw!r} is not an integer", fix=f"set {key} to a number") from e


def _duration(options: Mapping[str, str], key: str) -> timedelta | None:
    raw = options.get(key)
    return values.parse_duration(raw, field=key) if raw is not None else None


def _first(*values: Any) -> Any:
    return next(v for v in values if v is not None)


def from_options(options: Mapping[str, str], flags: RetentionFlags | None = None) -> Retention:
    """The retention Paimon derives from table ``options`` (``snapshot.num-retained.*``,
    ``snapshot.time-retained``, ``snapshot.expire.limit``, ``snapshot.clean-empty-directories``,
    ``changelog.*``), with ``flags`` winning over the options.

    Raises:
        InvalidInputError / UnsafePolicyError / InvalidDurationError: an option or flag is not a
            number or duration, or the result breaks a rail (min >= 1, max >= min, limit >= 1).
    """
    f = flags or RetentionFlags()
    clean_opt = options.get("snapshot.clean-empty-directories") or options.get(
        "snapshot.expire.clean-empty-directories")
    retain_min = _first(f.retain_min, _int(options, "snapshot.num-retained.min"), _DEFAULT_MIN)
    retain_max = _first(f.retain_max, _int(options, "snapshot.num-retained.max"), INT_MAX)
    time_retained = _first(f.time_retained, _duration(options, "snapshot.time-retained"), _DEFAULT_TIME)
    return Retention(
        retain_min=retain_min, retain_max=retain_max, time_retained=time_retained,
        expire_limit=_first(f.expire_limit, _int(options, "snapshot.expire.limit"), _DEFAULT_LIMIT),
        clean_empty_directories=_first(f.clean_empty_directories,
                                       None if clean_opt is None else clean_opt.lower() == "true", False),
        changelog_retain_min=_first(f.changelog_retain_min, _int(options, "changelog.num-retained.min"), retain_min),
        changelog_retain_max=_first(f.changelog_retain_max, _int(options, "changelog.num-retained.max"), retain_max),
        changelog_time_retained=_first(f.changelog_time_retained, _duration(options, "changelog.time-retained"),
                                       time_retained))


def _timedelta(value: Any) -> timedelta:
    """A policy ``Duration`` (or a timedelta) as a timedelta."""
    return value if isinstance(value, timedelta) else values.parse_duration(str(value))


def from_policy(values: Mapping[str, Any]) -> Retention:
    """The retention of an effective policy's values (``snapshots.minRetained``...; a missing or
    None ``maxRetained`` is unlimited; missing ``changelog.*`` follow ``snapshots.*``).

    Raises:
        UnsafePolicyError / InvalidInputError: the values break a rail.
    """
    retain_min = int(_first(values.get("snapshots.minRetained"), _DEFAULT_MIN))
    retain_max = int(values.get("snapshots.maxRetained") or INT_MAX)
    age = values.get("snapshots.maxAge")
    time_retained = _timedelta(age) if age is not None else _DEFAULT_TIME
    log_min, log_max, log_age = (values.get("changelog.minRetained"), values.get("changelog.maxRetained"),
                                 values.get("changelog.maxAge"))
    return Retention(
        retain_min=retain_min, retain_max=retain_max, time_retained=time_retained,
        expire_limit=int(_first(values.get("snapshots.expireLimit"), _DEFAULT_LIMIT)),
        clean_empty_directories=bool(values.get("snapshots.cleanEmptyDirectories") or False),
        changelog_retain_min=int(log_min) if log_min is not None else retain_min,
        changelog_retain_max=int(log_max) if log_max is not None else retain_max,
        changelog_time_retained=_timedelta(log_age) if log_age is not None else time_retained)

