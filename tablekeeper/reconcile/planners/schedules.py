"""When scheduled maintenance is due: cron / ``@every`` schedules and daily windows, evaluated
against an injected clock and the time of the last run (operator-design.md §7.6).

Rules: never run before = due now; ``@every D`` = due once ``D`` has passed since the last run;
cron = due once the first fire time after the last run has passed (evaluated as a wall clock in
the window's zone, UTC by default; standard cron: when both day-of-month and day-of-week are
restricted, either may match). A window, when given, must contain ``now``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

from tablekeeper.core.policy import Schedule
from tablekeeper.core.policy.specs import MaintenanceWindow

__all__ = ["Due", "is_due", "next_fire", "in_window"]

_MONTHS = {m: i for i, m in enumerate(
    ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"), start=1)}
_DAYS = {d: i for i, d in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))}


@dataclass(frozen=True)
class Due:
    due: bool
    reason: str
    next_time: datetime | None = None


def _value(text: str, names: dict[str, int]) -> int:
    return int(text) if text.isdigit() else names[text.upper()]


def _field(text: str, low: int, high: int, names: dict[str, int]) -> tuple[set[int], bool]:
    """(allowed values, restricted?) of one cron field (already validated by ``Schedule``)."""
    out: set[int] = set()
    for item in text.split(","):
        span, _, step_text = item.partition("/")
        step = int(step_text) if step_text else 1
        if span == "*":
            start, end = low, high
        else:
            first, _, last = span.partition("-")
            start = _value(first, names)
            end = _value(last, names) if last else (high if step_text else start)
        out.update(range(start, end + 1, step))
    return out, text != "*"


def next_fire(cron: str, after: datetime) -> datetime:
    """The first fire time strictly after ``after`` (a naive wall clock) of a 5-field cron."""
    minute, hour, dom, month, dow = cron.split()
    minutes, _ = _field(minute, 0, 59, {})
    hours, _ = _field(hour, 0, 23, {})
    days, dom_restricted = _field(dom, 1, 31, {})
    months, _ = _field(month, 1, 12, _MONTHS)
    weekdays, dow_restricted = _field(dow, 0, 7, _DAYS)
    if 7 in weekdays:
        weekdays.add(0)

    def day_ok(t: datetime) -> bool:
        cron_dow = (t.weekday() + 1) % 7  # Python Monday=0 -> cron Sunday=0
        if dom_restricted and dow_restricted:
            return t.day in days or cron_dow in weekdays
        return t.day in days and cron_dow in weekdays

    t = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    for _ in range(200_000):
        if t.month not in months:
            t = (t.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
            continue
        if not day_ok(t):
            t = t.replace(hour=0, minute=0) + timedelta(days=1)
            continue
        if t.hour not in hours:
            t = t.replace(minute=0) + timedelta(hours=1)
            continue
        if t.minute not in minutes:
            t += timedelta(minutes=1)
            continue
        return t
    raise ValueError(f"cron {cron!r} never fires")  # e.g. 30 FEB


def in_window(window: MaintenanceWindow, now: datetime) -> bool:
    """Whether ``now`` (aware) lies in the daily window (end before start spans midnight)."""
    wall = now.astimezone(ZoneInfo(window.time_zone)).time()
    start = time.fromisoformat(window.start)
    end = time.fromisoformat(window.end)
    if start < end:
        return start <= wall < end
    return wall >= start or wall < end


def is_due(schedule: Schedule | None, last_run_ms: int | None, now: datetime, *,
           window: MaintenanceWindow | None = None) -> Due:
    """Whether a scheduled job is due at ``now`` (aware), given its last run (epoch ms)."""
    if window is not None and not in_window(window, now):
        return Due(False, f"outside the maintenance window {window.start}-{window.end} {window.time_zone}")
    if schedule is None:
        return Due(True, "no schedule: runs on every apply")
    if last_run_ms is None:
        return Due(True, f"never ran (schedule {schedule})")
    last = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=last_run_ms)
    interval = schedule.interval
    if interval is not None:
        nxt = last + interval
    else:
        zone = ZoneInfo(window.time_zone) if window is not None else timezone.utc
        cron = schedule.cron
        assert cron is not None
        wall = next_fire(cron, last.astimezone(zone).replace(tzinfo=None))
        nxt = wall.replace(tzinfo=zone).astimezone(timezone.utc)
    if now >= nxt:
        return Due(True, f"due since {nxt:%Y-%m-%d %H:%M} UTC (schedule {schedule})", nxt)
    return Due(False, f"not due until {nxt:%Y-%m-%d %H:%M} UTC (schedule {schedule}, last run "
                      f"{last:%Y-%m-%d %H:%M} UTC)", nxt)
