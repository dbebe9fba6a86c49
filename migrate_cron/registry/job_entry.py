"""One ``[jobs.NAME]`` table (``[defaults]`` merged under it) as a validated ``JobSpec``: every
value is checked where it is written, so no run is started that could never run (a NUL in a
command, a user other than the crontab line's, an unknown zone)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from migrate_cron.crontab.line_limits import command_too_long
from migrate_cron.registry.keys import check_keys, key_example
from migrate_cron.registry.notify_targets import parse_events, parse_targets
from migrate_cron.registry.origins import USER_NAME, migrations_of, sources_of
from migrate_cron.registry.spec import (
    MAX_ATTEMPTS_LIMIT,
    MAX_BACKFILL_LIMIT,
    MAX_CONCURRENCY,
    MAX_SECONDS,
    MODES,
    OVERLAPS,
    POLICIES,
    Backoff,
    EntryError,
    JobSpec,
    Source,
)
from migrate_cron.vocabulary import Mode, Overlap, Policy

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:")


def parse_job(path: str, name: str, t: dict[str, Any], section: str = "job") -> JobSpec:
    where = f"{section} {name!r}"
    if not name or not set(name) <= _NAME_CHARS or len(name) > 200:
        raise EntryError(
            path, where, None, "names use letters, digits and - _ . : (at most 200 characters)"
        )
    check_keys(path, where, t)

    def bad(key: str, reason: str) -> EntryError:
        return EntryError(path, where, key, reason + key_example(key))

    if bool(t.get("command")) == bool(t.get("handler")):
        raise bad("command", "set exactly one of 'command' or 'handler'")
    command = t.get("command")
    if isinstance(command, str) and command_too_long(command):
        raise bad("command", command_too_long(command) or "")
    for key in ("command", "handler", "shell", "cwd"):
        if "\0" in t.get(key, ""):
            raise bad(key, f"holds a NUL byte: {NUL_REASON}")
    if t.get("shell") == "":
        raise bad("shell", "empty: name the shell cron ran the line with (default /bin/sh)")
    handler = t.get("handler")
    if handler is not None and (":" not in handler or handler.startswith(":")):
        raise bad("handler", f"{handler!r} must look like 'package.module:function'")
    tz = t.get("timezone", "UTC")
    _check_timezone(tz, bad)
    schedule = t.get("schedule")
    if schedule is not None:
        _check_schedule(schedule, tz, bad)
    env = t.get("env", {})
    for k, v in env.items():
        if not isinstance(v, str):
            raise bad("env", f"value of {k!r} must be a string")
        problem = env_problem(k, v)
        if problem:
            raise bad("env", problem)
    policy = t.get("policy", Policy.SKIP)
    if policy not in POLICIES:
        raise bad("policy", f"{policy!r} is not one of {', '.join(POLICIES)}")
    mode = t.get("mode", Mode.CRON)
    if mode not in MODES:
        raise bad("mode", f"{mode!r} is not one of {', '.join(MODES)}")
    max_attempts = t.get("max_attempts", 5)
    if not 1 <= max_attempts <= MAX_ATTEMPTS_LIMIT:
        raise bad("max_attempts", f"must be between 1 and {MAX_ATTEMPTS_LIMIT}")
    timeout = t.get("timeout")
    if timeout is not None and not (math.isfinite(timeout) and 0 < timeout <= MAX_SECONDS):
        raise bad("timeout", f"must be a positive number of seconds up to {MAX_SECONDS:.0f}")
    backoff = _backoff(t.get("backoff", {}), bad)
    if not 0 <= t.get("max_backfill", 10) <= MAX_BACKFILL_LIMIT:
        raise bad("max_backfill", f"must be between 0 and {MAX_BACKFILL_LIMIT}")
    concurrency = t.get("concurrency")
    if concurrency is not None and not 1 <= concurrency <= MAX_CONCURRENCY:
        raise bad("concurrency", f"must be between 1 and {MAX_CONCURRENCY}")
    overlap = t.get("overlap")
    if overlap is not None and overlap not in OVERLAPS:
        raise bad("overlap", f"{overlap!r} is not one of {', '.join(OVERLAPS)}")
    if overlap is not None and concurrency is not None and concurrency > 1:
        raise bad(
            "overlap",
            f"overlap promises one run at a time, concurrency = {concurrency} allows more: "
            "keep one of them",
        )
    try:
        targets = parse_targets(t.get("notify"), env)
    except ValueError as exc:
        raise bad("notify", str(exc)) from None
    try:
        notify_on = parse_events(t.get("notify_on"))
    except ValueError as exc:
        raise bad("notify_on", str(exc)) from None
    grace = t.get("misfire_grace", 60)
    if not (math.isfinite(grace) and 0 <= grace <= MAX_SECONDS):
        raise bad("misfire_grace", f"must be between 0 and {MAX_SECONDS:.0f} seconds")
    return JobSpec(
        name=name,
        command=t.get("command"),
        handler=handler,
        schedule=schedule,
        timezone=tz,
        shell=t.get("shell", "/bin/sh"),
        env=dict(env),
        cwd=t.get("cwd"),
        cwd_fallback=_fallback(t.get("cwd_fallback"), bad),
        stdin=t.get("stdin"),
        timeout=float(timeout) if timeout is not None else None,
        max_attempts=max_attempts,
        backoff=backoff,
        policy=Policy(policy),
        max_backfill=t.get("max_backfill", 10),
        misfire_grace=float(t.get("misfire_grace", 60)),
        mode=Mode(mode),
        concurrency=concurrency,
        overlap=None if overlap is None else Overlap(overlap),
        notify_targets=targets,
        notify_on=notify_on,
        on_success=_names(t.get("on_success"), "on_success", bad),
        on_failure=_names(t.get("on_failure"), "on_failure", bad),
        user=(user := _user(t.get("user"), t.get("handler"), bad)),
        sources=(sources := _run_as(user, command, sources_of(t, bad), bad)),
        migrations=migrations_of(t, sources, bad),
    )


#: Why a value with a NUL byte is refused: no program can be started with one.
NUL_REASON = (
    "a program's arguments, environment and directory are C strings, so no run could start "
    "(every attempt would fail at once)"
)


def env_problem(name: str, value: str) -> str | None:
    """Why ``name=value`` cannot be put in a process's environment, or None."""
    if not name or "=" in name or "\0" in name:
        return (
            f"variable name {name!r} cannot be set: a name is not empty and holds no '=' or "
            "NUL byte"
        )
    if "\0" in value:
        return f"value of {name!r} holds a NUL byte: {NUL_REASON}"
    return None


def run_as_problem(user: str | None, sources: Iterable[Source], command: str | None) -> str | None:
    """Why a command may not run as ``user`` given the lines it came from, or None.

    cron ran a system crontab's line as its user field (``source.user``): a job whose line
    ran as ``nobody`` must never run as the worker's root because a ``user`` key went
    missing in an edit. A Python handler (no ``command``) is the application's code, not the
    line's: it runs in the worker, as the worker's user, and is not held to this."""
    if command is None:
        return None
    for src in sources:
        if src.user is not None and src.user != user:
            if user is None:
                return (
                    f"missing: cron ran the line ({src.label}:{src.line}) as {src.user!r}, and "
                    f"a job never runs as another user than its line did: add user = "
                    f'"{src.user}"'
                )
            return (
                f"{user!r}, but cron ran the line ({src.label}:{src.line}) as {src.user!r}: a "
                "job never runs as another user than its line did (to move it to another "
                "user, change the crontab line and generate again)"
            )
    return None


def _run_as(
    user: str | None, command: str | None, sources: tuple[Source, ...], bad: Any
) -> tuple[Source, ...]:
    problem = run_as_problem(user, sources, command)
    if problem:
        raise bad("user", problem)
    return sources


#: Keys of a ``[tables.NAME]`` section that describe the table; the others (``_TABLE_RUN``)


def _names(raw: list[Any] | None, key: str, bad: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not all(isinstance(n, str) and n for n in raw):
        raise bad(key, "a list of job names")
    return tuple(raw)


def _user(user: str | None, handler: str | None, bad: Any) -> str | None:
    if user is None:
        return None
    if not USER_NAME.fullmatch(user):
        raise bad("user", f"{user!r} is not a user name")
    if handler is not None:
        raise bad(
            "user",
            "a Python handler runs inside the worker's process, as the worker's user: run "
            "the worker as that user instead",
        )
    return user


def _fallback(path: str | None, bad: Any) -> str | None:
    """``cwd_fallback``: an absolute directory (it stands for cron's own, whatever the
    registry's directory is)."""
    if path is not None and not path.startswith("/"):
        raise bad(
            "cwd_fallback",
            f'{path!r} is not an absolute directory; e.g. cwd_fallback = "/var/spool/cron"',
        )
    return path


def _backoff(raw: dict[str, Any], bad: Any) -> Backoff:
    extra = set(raw) - {"base", "cap"}
    if extra:
        raise bad("backoff", f"unknown key(s) {sorted(extra)}; use base and cap")
    base = raw.get("base", 10.0)
    cap = raw.get("cap", 3600.0)
    for key, value in (("base", base), ("cap", cap)):
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (math.isfinite(value) and 0 <= value <= MAX_SECONDS)
        ):
            raise bad("backoff", f"{key} must be a number of seconds from 0 to {MAX_SECONDS:.0f}")
    if cap < base:
        raise bad("backoff", "cap must be >= base")
    return Backoff(float(base), float(cap))


def _check_timezone(tz: str, bad: Any) -> None:
    from migrate_cron.crontab.timezone import unknown_zone_message, zone_exists

    if not zone_exists(tz):
        raise bad("timezone", unknown_zone_message(tz))


def _check_schedule(expr: str, tz: str, bad: Any) -> None:
    try:
        from migrate_cron.crontab.schedule import Schedule, ScheduleError
    except ImportError:  # parser not importable: fall back to croniter's own check
        from croniter import croniter

        if not expr.startswith("@") and not croniter.is_valid(expr):
            raise bad("schedule", f"{expr!r} is not a valid cron expression") from None
        return
    try:
        Schedule.parse(expr, tz)
    except ScheduleError as exc:
        raise bad("schedule", str(exc)) from None
