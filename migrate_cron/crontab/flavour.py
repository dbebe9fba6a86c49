"""Which cron reads the file: Debian's (Vixie 3.0 + Debian patches), cronie, or busybox crond.

They agree on the five fields and the command, and differ in a handful of places that change
what runs and when. Each difference is one field of :class:`Flavour`, set from the flavour's own
source or manual (docs/cron-flavours.md cites each one and names its test), so the parser and
the analysis branch on a fact (``flavour.cron_tz``), never on a name (``== "cronie"``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum


class Cron(StrEnum):
    """The ``--cron`` choices."""

    DEBIAN = "debian"
    CRONIE = "cronie"
    BUSYBOX = "busybox"


@dataclass(frozen=True)
class Flavour:
    name: Cron
    #: ``CRON_TZ=Zone`` sets the zone the schedules below it run in (cronie's crontab(5)).
    #: Where False, CRON_TZ is only an environment variable and the daemon's zone applies.
    cron_tz: bool
    #: ``a~b``: "any" — cronie picks a random value in a..b when it loads the file, either end
    #: may be omitted (crontab(5), entry.c); "both" — Debian's cron accepts ``a~b`` with both
    #: ends (``crontab -n`` of 3.0pl1-162) but rejects a bare ``~``; "none" — rejected.
    random_ranges: str
    #: A command starting with ``*`` is rejected ("bad command"): both entry.c's "catch a
    #: common typo" check (cronie; Debian's binary does the same), which is what a pasted
    #: 6-field line ``0 */5 * * * * cmd`` runs into. False: busybox runs it.
    star_command_rejected: bool
    #: In a system crontab the user name is read before that check, so a pasted seconds
    #: field becomes the user "*" and the line fails with "bad username" (Debian: daemon logs
    #: "Error: bad username; while reading /etc/cron.d/…" for ``0 0 * * 0 * root …``).
    user_before_star_check: bool
    #: ``N/S`` (a step after a single number): True when it is read as ``N`` alone, the step
    #: ignored (busybox's ParseField); False when the line is rejected (Debian, cronie).
    single_value_step: bool
    #: A line the daemon rejects makes it ignore the whole file (Debian: "Syntax error, this
    #: crontab file will be ignored"); False: only that line is dropped (cronie).
    rejects_whole_file: bool
    #: A missing final newline makes it ignore the whole file (Debian: "Missing newline
    #: before EOF, this crontab file will be ignored"); False: only the last line is dropped.
    newline_rejects_file: bool
    #: Where the facts above come from (shown by the docs and in findings).
    source: str
    #: What ``/bin/sh`` is on the flavour's usual hosts, as a ShellCheck dialect: dash on
    #: Debian and Ubuntu, bash on the Red Hat family where cronie runs, busybox ash on Alpine.
    bin_sh: str = "dash"
    #: How findings name it ("Debian's cron").
    label: str = ""
    #: A ``HOME=dir`` line above a job is where the command runs: the daemon chdirs to the
    #: job's HOME, the crontab's value if it sets one, else the passwd home (Vixie/Debian
    #: ``do_command.c`` ``chdir(env_get("HOME", e->envp))`` after ``load_entry`` kept the
    #: crontab's HOME; cronie ``cron_change_user_permanently(pw, env_get("HOME", jobenv))``,
    #: where a failed chdir stops the job). False: the passwd home always (busybox
    #: ``change_user``: ``chdir(pas->pw_dir)``).
    home_from_crontab: bool = True
    #: Where the command runs when that chdir fails (the home does not exist): the daemon's
    #: own directory. Debian's ``child_process`` ignores what ``chdir(HOME)`` returns, so the
    #: command runs where ``set_cron_cwd`` put the daemon, CRONDIR (``/var/spool/cron``);
    #: busybox ``change_user`` falls back to ``xchdir(CRON_DIR)`` (``/var/spool/cron``).
    #: None: the command does not run (cronie: ``cron_change_user_permanently`` logs "ERROR
    #: chdir failed" and the job's process exits before the shell starts).
    home_missing_dir: str | None = "/var/spool/cron"


FLAVOURS: dict[Cron, Flavour] = {
    Cron.DEBIAN: Flavour(
        Cron.DEBIAN,
        cron_tz=False,
        random_ranges="both",
        star_command_rejected=True,
        user_before_star_check=True,
        single_value_step=False,
        rejects_whole_file=True,
        newline_rejects_file=True,
        source="Debian cron 3.0pl1 (cron(8), /usr/share/doc/cron/FEATURES, the daemon's messages)",
        label="Debian's cron",
    ),
    Cron.CRONIE: Flavour(
        Cron.CRONIE,
        cron_tz=True,
        random_ranges="any",
        star_command_rejected=True,
        user_before_star_check=False,
        single_value_step=False,
        rejects_whole_file=False,
        newline_rejects_file=False,
        source="cronie (crontab(5), src/entry.c, src/user.c)",
        label="cronie",
        bin_sh="bash",
        home_missing_dir=None,
    ),
    Cron.BUSYBOX: Flavour(
        Cron.BUSYBOX,
        cron_tz=False,
        random_ranges="none",
        star_command_rejected=False,
        user_before_star_check=False,
        single_value_step=True,
        rejects_whole_file=False,
        newline_rejects_file=False,
        source="busybox miscutils/crond.c",
        label="busybox crond",
        bin_sh="busybox",
        home_from_crontab=False,
    ),
}


def flavour(name: str | Cron) -> Flavour:
    """The flavour called ``name`` (a :class:`Cron` value); ValueError for others."""
    return FLAVOURS[Cron(name)]


_RANDOM = re.compile(r"(\d*)~(\d*)")
_RANDOM_BOTH = re.compile(r"(\d+)~(\d+)")
_SINGLE_STEP = re.compile(r"(?<![-\d*])(\d+)/\d+")


def random_parts(expr: str, both_ends: bool = False) -> list[str]:
    """The ``a~b`` parts of a schedule (random ranges), as written; ``both_ends``: only those
    with both numbers (the only form Debian's cron accepts)."""
    return [m.group() for m in (_RANDOM_BOTH if both_ends else _RANDOM).finditer(expr)]


def without_random(expr: str, lows: tuple[int, ...], both_ends: bool = False) -> str:
    """``expr`` with each field's ``a~b`` replaced by one value, ``a`` (or the field's low end
    from ``lows`` when ``a`` is omitted): cronie's pick is random, so next runs are shown for
    one possible value and the finding says so."""
    out = []
    for i, text in enumerate(expr.split(" ")):
        low = str(lows[i]) if i < len(lows) else "0"
        out.append((_RANDOM_BOTH if both_ends else _RANDOM).sub(_first_or(low), text))
    return " ".join(out)


def _first_or(low: str) -> Callable[[re.Match[str]], str]:
    def pick(match: re.Match[str]) -> str:
        return match.group(1) or low

    return pick


def single_steps(expr: str) -> list[str]:
    """The ``N/S`` parts of a schedule (a step after a single number)."""
    return [m.group() for m in _SINGLE_STEP.finditer(expr)]


def without_single_steps(expr: str) -> str:
    """``expr`` as busybox reads it: ``N/S`` becomes ``N``."""
    return _SINGLE_STEP.sub(lambda m: m.group(1), expr)
