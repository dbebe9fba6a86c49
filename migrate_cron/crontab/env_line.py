"""Environment lines: ``NAME=VALUE`` as cron's ``load_env`` reads it, and what such a line does
that its writer did not mean (an unusable name, a second assignment, an expansion cron never
makes, a zone that does not reach the schedules)."""

from __future__ import annotations

import re

from migrate_cron.crontab.entry import Problem, Severity
from migrate_cron.crontab.flavour import Flavour
from migrate_cron.crontab.line_words import BLANKS

_ENV = re.compile(r"""[ \t]*(?:"([^"]*)"|'([^']*)'|([^ \t='"][^ \t=]*))[ \t]*=[ \t]*(.*)\Z""", re.S)


def parse_env(text: str) -> tuple[str, str] | None:
    """``NAME=VALUE`` as cron's ``load_env`` accepts it, or None when the line is not one:
    optional blanks around ``=``; name and value each optionally quoted (quotes only strip);
    only blanks may follow a quoted value; an unquoted value loses its trailing blanks."""
    if "=" not in text:
        return None
    match = _ENV.match(text)
    if match is None:
        return None
    name = match.group(1) if match.group(1) is not None else match.group(2)
    if name is None:
        name = match.group(3)
    if not name:
        return None
    value = match.group(4)
    if value[:1] in ("'", '"'):
        close = value.find(value[0], 1)
        if close < 0 or value[close + 1 :].strip(BLANKS):
            return None
        return name, value[1:close]
    return name, value.rstrip(BLANKS)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXPANSION_IN_VALUE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_SECOND_ASSIGNMENT = re.compile(r"\s([A-Za-z_][A-Za-z0-9_]*)=")


def env_problems(name: str, value: str, column: int) -> list[Problem]:
    """What an env line does that its writer did not mean. crontab(5): cron takes everything
    before the ``=`` as the name and the rest of the line as the value, and "the value string
    is not parsed for environmental substitutions or replacement of variables"."""
    problems: list[Problem] = []
    if not _IDENTIFIER.fullmatch(name):
        core = name.strip(";:&|`'\" \t")
        hint = f"; `${core}` in the lines below stays unset" if _IDENTIFIER.fullmatch(core) else ""
        problems.append(
            Problem(
                "env-name",
                f"sets a variable named `{name}`: cron passes it on, but no shell can expand a "
                f"name like that{hint}",
                Severity.WARNING,
                column=column,
                field="env",
            )
        )
    second = _SECOND_ASSIGNMENT.search(value)
    if second and not value.startswith(("'", '"')):
        problems.append(
            Problem(
                "env-one-per-line",
                f"one assignment per line: cron sets {name} to `{value}`, and "
                f"{second.group(1)} is not set at all",
                Severity.WARNING,
                column=column,
                field="env",
            )
        )
    found = _EXPANSION_IN_VALUE.search(value)
    if found and not value.startswith("'"):
        problems.append(
            Problem(
                "env-not-expanded",
                f"cron does not expand `${found.group(1)}` in an env line: {name} is the "
                f"literal text `{value}` (a shell expands it only where a command says "
                f"${name}, and then not again)",
                Severity.WARNING,
                column=column,
                field="env",
            )
        )
    return problems


def zone_not_schedule(name: str, value: str, cron: Flavour, column: int) -> Problem:
    """TZ (every cron) and CRON_TZ (where the daemon ignores it) reach the commands'
    environment only: the schedules keep running in the daemon's zone."""
    if name == "TZ":
        message = (
            f'TZ="{value}" only sets the commands\' environment: {cron.label} schedules the '
            "jobs below in the daemon's zone, not in this one"
        )
    else:
        message = (
            f'{cron.label} ignores CRON_TZ="{value}" for scheduling (it handles every job '
            "in the daemon's single zone; CRON_TZ is a cronie feature): the jobs below run at "
            "these hours in the daemon's zone"
        )
    return Problem("zone-not-schedule", message, Severity.WARNING, column=column, field="timezone")
