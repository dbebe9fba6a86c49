"""The rule about cron's ``%``: where it cuts a command that meant it literally, and where a
program that reads its input is fed on purpose.
"""

from __future__ import annotations

from migrate_cron.analysis.finding import Context, Hit
from migrate_cron.analysis.job import CronJob
from migrate_cron.analysis.work_calls import main_call
from migrate_cron.analysis.wrappers import basename
from migrate_cron.crontab.entry import Severity


def check_percent(job: CronJob, ctx: Context) -> Hit | None:
    """An unescaped ``%`` ends the command for cron: the rest becomes its standard input
    (crontab(5)). Often meant as part of the command (``date +%F``, ``$((RANDOM % 60))``),
    where the cut leaves a quote or an expansion open and the line has never worked."""
    stdin = job.line.stdin
    if stdin is None:
        return None
    command = job.line.shell_command or ""
    runs = f"it runs `{_shorten(command)}`"
    cut = _left_open(command)
    if cut:
        return Hit(
            f"cron cuts the command at its first unescaped %: {runs}, cut inside {cut} — "
            "the line has never worked as written"
        )
    main = main_call(job.script)
    if main is not None and basename(main[1].argv[0]) in _READS_STDIN:
        return Hit(
            f"`{basename(main[1].argv[0])}` gets `{_shorten(stdin)}` as its input (cron feeds it "
            "the text after the first unescaped %), a program that reads its input: on purpose",
            fix="nothing to fix: `generate registry` keeps the stdin with the job",
            severity=Severity.INFO,
        )
    return Hit(
        f"cron cuts the command at its first unescaped %: {runs} with `{_shorten(stdin)}` as "
        "its input: the command never ran as written"
    )


#: Programs that read their standard input: a ``%`` body for them is meant.
_READS_STDIN = frozenset(
    (
        "mail",
        "mailx",
        "sendmail",
        "mutt",
        "s-nail",
        "msmtp",
        "cat",
        "tee",
        "psql",
        "mysql",
        "sqlite3",
        "sh",
        "bash",
        "logger",
        "wall",
        "write",
        "at",
        "batch",
        "ssh",
        "nc",
        "curl",
    )
)


def _left_open(command: str) -> str | None:
    """What a cut left open: a quoted string, a backquoted command, an arithmetic or command
    substitution (the shell then fails on the unterminated construct)."""
    single = double = backquote = False
    depth = 0
    arithmetic = False
    i = 0
    while i < len(command):
        ch = command[i]
        if ch == "\\" and not single:
            i += 2
            continue
        if ch == "'" and not double and not backquote:
            single = not single
        elif ch == '"' and not single:
            double = not double
        elif ch == "`" and not single:
            backquote = not backquote
        elif not single and command.startswith("$((", i):
            arithmetic, depth = True, depth + 2
            i += 3
            continue
        elif not single and command.startswith("$(", i):
            depth += 1
            i += 2
            continue
        elif not single and ch == ")" and depth:
            depth -= 1
        i += 1
    if backquote:
        return "a backquoted command `…`"
    if single or double:
        return "a quoted string"
    if depth:
        return "an arithmetic expansion $((…))" if arithmetic else "a command substitution $(…)"
    return None


def _shorten(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
