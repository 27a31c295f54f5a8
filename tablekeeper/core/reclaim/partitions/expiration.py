"""Partition expiration (paimon-semantics.md §6): strategies values-time and update-time,
``partition.timestamp-formatter`` / ``partition.timestamp-pattern``, ``expiration-max-num``.

Planning is pure (live partitions of the latest snapshot, decided against ``now``); the commit
is a Paimon OVERWRITE that marks the partitions' files DELETE (through pypaimon, with a bounded
retry on commit conflicts). Files are reclaimed later by snapshot expiration, so tags keep
protecting them. Values that do not parse — and null / default partitions — never expire."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from tablekeeper.core import errors, values
from tablekeeper.core.paimon import Table, manifests, pypaimon
from tablekeeper.core.reclaim.reach import Reachability
from tablekeeper.core.values import parse_duration

__all__ = ["PartitionConfig", "PartitionInfo", "PartitionPlan", "config_from_options", "extract_time",
           "list_partitions", "plan_partition_expiry", "apply_partition_expiry"]

DEFAULT_PARTITION = "__DEFAULT_PARTITION__"


@dataclass(frozen=True)
class PartitionConfig:
    expiration_time: timedelta
    strategy: str = "values-time"
    timestamp_formatter: str | None = None
    timestamp_pattern: str | None = None
    max_expires: int = 100
    #: Writers' time zone known? If not, act only when expired under every UTC offset.
    zone_known: bool = False

    def validate(self) -> None:
        if self.strategy not in ("values-time", "update-time"):
            raise errors.InvalidInputError(f"unknown partition.expiration-strategy {self.strategy!r}",
                                           fix="use values-time or update-time")
        if self.max_expires < 1:
            raise errors.InvalidInputError("partition.expiration-max-num must be >= 1", fix="e.g. 100")
        if self.timestamp_formatter:
            _strptime_format(self.timestamp_formatter)


def config_from_options(options: Mapping[str, str], **overrides: Any) -> PartitionConfig | None:
    """From table options; None when ``partition.expiration-time`` is unset (feature off)."""
    raw = overrides.pop("expiration_time", None) or options.get("partition.expiration-time")
    if raw is None:
        return None
    values: dict[str, Any] = {
        "expiration_time": raw if isinstance(raw, timedelta) else parse_duration(
            str(raw), field="partition.expiration-time"),
        "strategy": options.get("partition.expiration-strategy", "values-time"),
        "timestamp_formatter": options.get("partition.timestamp-formatter"),
        "timestamp_pattern": options.get("partition.timestamp-pattern"),
        "max_expires": int(options.get("partition.expiration-max-num", "100")),
    }
    values.update({k: v for k, v in overrides.items() if v is not None})
    config = PartitionConfig(**values)
    config.validate()
    return config


_JAVA_TO_STRPTIME = [("yyyy", "%Y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"), ("ss", "%S"),
                     ("SSS", "%f"), ("yy", "%y")]


def _strptime_format(java: str) -> str:
    """A Java DateTimeFormatter pattern (the common letters) as a strptime format."""
    out, i = "", 0
    while i < len(java):
        for token, fmt in _JAVA_TO_STRPTIME:
            if java.startswith(token, i):
                out += fmt
                i += len(token)
                break
        else:
            char = java[i]
            if char.isalpha():
                raise errors.InvalidInputError(
                    f"partition.timestamp-formatter {java!r}: letter {char!r} is not supported",
                    fix="use yyyy, MM, dd, HH, mm, ss, SSS and literal separators")
            out += "%%" if char == "%" else char
            i += 1
    return out


_DEFAULT_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d")


def _substitute(pattern: str, values: Mapping[str, str]) -> str:
    """``$field`` substitution, longest key first (Paimon #9136: ``$dt`` inside ``$dt1``)."""
    out = pattern
    for key in sorted(values, key=len, reverse=True):
        out = out.replace(f"${key}", values[key])
    return out


def extract_time(keys: tuple[str, ...], values: tuple[Any, ...], config: PartitionConfig) -> datetime | None:
    """The partition's time (writer wall clock), or None when it does not parse."""
    if not keys:
        return None
    if any(v is None for v in values):
        return None
    if config.timestamp_pattern is None and isinstance(values[0], datetime):
        return values[0].replace(tzinfo=None)
    if config.timestamp_pattern is None and isinstance(values[0], date):
        return datetime(values[0].year, values[0].month, values[0].day)
    texts = {k: (v.isoformat() if isinstance(v, date) else str(v)) for k, v in zip(keys, values, strict=True)}
    text = _substitute(config.timestamp_pattern, texts) if config.timestamp_pattern else texts[keys[0]]
    if not text or text == DEFAULT_PARTITION:
        return None
    formats = (_strptime_format(config.timestamp_formatter),) if config.timestamp_formatter else _DEFAULT_FORMATS
    for fmt in formats:
        try:
            parsed = datetime.strptime(text, fmt)
        except ValueError:
            continue
        if config.timestamp_formatter and parsed.strftime(fmt) != text:
            return None  # Java's formatter is strict: '2026011' is not 'yyyyMMdd'
        return parsed
    if not config.timestamp_formatter:  # lenient yyyy-M-d
        match = re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})", text)
        if match:
            try:
                return datetime(int(match[1]), int(match[2]), int(match[3]))
            except ValueError:
                return None
    return None


@dataclass(frozen=True)
class PartitionInfo:
    values: tuple[Any, ...]
    spec: tuple[tuple[str, str], ...]
    file_count: int
    last_file_creation_ms: int | None

    @property
    def name(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.spec)


@dataclass(frozen=True)
class PartitionPlan:
    table: str
    branch: str
    expired: tuple[PartitionInfo, ...]
    unparseable: tuple[str, ...]
    live: int
    notes: tuple[str, ...] = ()
    #: Expired partitions beyond ``max_expires``, for the next run (a count front ends show as
    #: data; the matching note is for people).
    left_for_next_run: int = 0
    #: The partition keys the plan's values are for (the schema it was planned on): the commit
    #: pairs them with the values without listing the schema directory again.
    partition_keys: tuple[str, ...] = ()

    def summary(self) -> dict[str, Any]:
        return {"operation": "expire-partitions", "table": self.table, "branch": self.branch,
                "expired": [p.name for p in self.expired], "files": sum(p.file_count for p in self.expired),
                "unparseable": list(self.unparseable), "live_partitions": self.live, "notes": list(self.notes),
                "left_for_next_run": self.left_for_next_run}


def list_partitions(table: Table) -> list[PartitionInfo]:
    """Live partitions of the branch's latest snapshot, with file counts and newest creation."""
    latest = table.latest_snapshot()
    if latest is None:
        return []
    schema = table.schema()
    keys = tuple(schema.partition_keys)
    if not keys:
        return []
    reach = Reachability(table)
    resolver = pypaimon.PartitionPathResolver(table.on_branch("main"))
    live = reach.live_files(latest)
    wanted = {(k[0], k[1], k[2]) for k in live}
    creation: dict[bytes, int | None] = {}
    counts: dict[bytes, int] = {}
    for list_name in (latest.base_manifest_list, latest.delta_manifest_list):
        if not list_name:
            continue
        for meta in reach.manifest_list(list_name):
            for entry in manifests.read_manifest(table.file_io, f"{reach.manifest_dir}/{meta.file_name}"):
                key = (entry.partition, entry.bucket, entry.file.file_name)
                if entry.kind != manifests.ADD or key not in wanted:
                    continue
                counts[entry.partition] = counts.get(entry.partition, 0) + 1
                ct = entry.file.creation_time
                prev = creation.get(entry.partition)
                creation[entry.partition] = ct if prev is None else (prev if ct is None else max(prev, ct))
    out = []
    for partition, count in counts.items():
        values = resolver.partition_values(partition)
        spec = tuple((k, DEFAULT_PARTITION if v is None else (v.isoformat() if isinstance(v, date) else str(v)))
                     for k, v in zip(keys, values, strict=True))
        out.append(PartitionInfo(values, spec, count, creation.get(partition)))
    return sorted(out, key=lambda p: p.spec)


def plan_partition_expiry(table: Table, config: PartitionConfig, now: datetime) -> PartitionPlan:
    """Expired partitions (sorted by their values, at most ``max_expires``). ``now`` is the
    writers' wall clock when the zone is known; otherwise a 12 h margin applies."""
    config.validate()
    keys = tuple(table.schema().partition_keys)
    if not keys:
        return PartitionPlan(table.identifier, table.branch, (), (), 0, ("table is not partitioned",))
    margin = timedelta(0) if config.zone_known else values.UNKNOWN_ZONE_MARGIN
    deadline = now.replace(tzinfo=None) - config.expiration_time - margin
    partitions = list_partitions(table)
    expired: list[PartitionInfo] = []
    unparseable: list[str] = []
    for p in partitions:
        if config.strategy == "values-time":
            when = extract_time(keys, p.values, config)
            if when is None:
                unparseable.append(p.name)
                continue
        else:
            if p.last_file_creation_ms is None or any(
                    v is None or v == "" or v == DEFAULT_PARTITION for v in p.values):
                unparseable.append(p.name)  # null/default partitions never expire (pitfall 29)
                continue
            when = datetime(1970, 1, 1) + timedelta(milliseconds=p.last_file_creation_ms)
        if when < deadline:
            expired.append(p)
    expired.sort(key=lambda p: p.spec)
    notes = [] if config.zone_known else ["writer time zone unknown: 12 h safety margin applied"]
    if not expired:  # said by the plan, so the CLI and the operator's runs give the same reason
        basis = "values" if config.strategy == "values-time" else "last update"
        notes.append(f"nothing expires: no partition's {basis} is before {deadline:%Y-%m-%d %H:%M:%S} "
                     "(partition.expiration-time)")
    left = max(0, len(expired) - config.max_expires)
    if left:
        notes.append(f"{left} more expired partition(s) left for the next run")
    return PartitionPlan(table.identifier, table.branch, tuple(expired[:config.max_expires]), tuple(unparseable),
                         len(partitions), tuple(notes), left, keys)


def apply_partition_expiry(table: Table, plan: PartitionPlan, *, options: Mapping[str, str] | None = None,
                           retries: int = 3,
                           drop: Callable[..., None] | None = None) -> int:
    """Commit the drop as one OVERWRITE snapshot; retry a conflicting commit up to ``retries``
    times. Returns the number of partitions dropped. ``drop`` defaults to pypaimon's commit
    (imported only here: it costs a second of start-up to every other command)."""
    if not plan.expired:
        return 0
    if drop is None:

        drop = functools.partial(pypaimon.drop_partitions, file_io=table.file_io)
    keys = plan.partition_keys or tuple(table.schema().partition_keys)
    specs = [dict(zip(keys, p.values, strict=True)) for p in plan.expired]
    last: Exception | None = None
    for _attempt in range(max(1, retries)):
        try:
            drop(table.root, table.branch, specs, options)
            return len(specs)
        except errors.TablekeeperError:
            raise
        except Exception as e:  # commit conflict: pypaimon re-plans against the new latest
            last = e
    raise errors.ConcurrentModificationError(f"partition drop did not commit after {retries} attempts: {last}",
                                             fix="retry when writers are quiet")
