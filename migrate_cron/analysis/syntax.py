"""Findings for lines cron rejects (or reads differently than the author meant): the parser's
problems with ``file:line`` and a fix, e.g. a pasted Quartz expression rewritten for cron.
"""

from __future__ import annotations

import re

from migrate_cron.analysis.finding import Finding
from migrate_cron.crontab.entry import CrontabFile, CrontabLine, Problem
from migrate_cron.crontab.fields import SPECS, FieldSpec

_PARSE_FIXES = {
    "bad-schedule": "correct the field; `crontab` refuses to install a file with this line",
    "quartz": "rewrite it with 5 fields (minute hour day-of-month month day-of-week): drop the "
    "seconds field and the year, and write * for ?",
    "too-few-fields": "complete the schedule (5 fields) and the command, or comment the line out",
    "no-command": "add the command after the schedule, or delete the line",
    "no-user": "add the user name after the 5 time fields (system crontab format)",
    "bad-macro": "use one of @reboot @yearly @annually @monthly @weekly @daily @midnight @hourly",
    "missing-newline": "add a newline at the end of the file",
    "carriage-return": "convert the file to Unix line endings (dos2unix FILE)",
    "bad-timezone": "use an IANA zone name (see timedatectl list-timezones)",
    "zone-not-schedule": "write the times in the daemon's zone (or run the daemon in this "
    "zone); on cronie, CRON_TZ=Zone sets a crontab's schedule zone",
    "random-range": "write the minute you want, or keep it random on purpose (the queue's "
    "scheduler needs one fixed schedule)",
    "step-ignored": "write the range out: N-MAX/STEP (e.g. 5-59/15), which every cron reads",
    "file-ignored": "fix or comment out the rejected line (and end the file with a newline), "
    'then check the daemon\'s log for "RELOAD" without "ERROR"',
    "not-a-crontab": "leave it out of the crontab directory, or pass it alone to analyze it "
    "as a crontab",
    "not-utf8": "keep the line on cron, or write it in UTF-8 (iconv converts a file) if the "
    "command means the same in UTF-8",
    "env-not-utf8": "keep the jobs below it on cron, or write that env line in UTF-8",
    "command-too-long": "put the command in a script and run the script from the line",
    "nul-byte": "remove the NUL byte (an editor shows it as ^@; `tr -d '\\000'` drops it)",
    "env-nul-byte": "remove the NUL byte from that env line",
}


def parse_finding(line: CrontabLine, problem: Problem, host: str | None) -> Finding:
    fix = _PARSE_FIXES.get(problem.code, "correct the line")
    if problem.code == "quartz":
        fix = _quartz_fix(line) or fix
    elif problem.code == "bad-schedule" and "never occurs" in problem.message:
        fix = (
            "pick a day that exists in that month; for the last day of a month use "
            "'28-31' with a test such as [ \"$(date -d tomorrow +\\%d)\" = 01 ] &&"
        )
    elif problem.code == "bad-schedule" and problem.field:
        fix = (
            f"correct the {problem.field} field (check it with migrate-cron explain); "
            "`crontab` refuses to install a file with this line"
        )
    return Finding(
        rule=f"syntax/{problem.code}",
        severity=problem.severity,
        file=line.file,
        line=line.number,
        message=problem.message,
        fix=fix,
        host=host,
        column=problem.column,
        field=problem.field,
    )


def file_finding(crontab: CrontabFile, problem: Problem) -> Finding:
    """A finding about a whole file (line 0): cron ignores all of it."""
    return Finding(
        rule=f"syntax/{problem.code}",
        severity=problem.severity,
        file=crontab.path,
        line=0,
        message=problem.message,
        fix=_PARSE_FIXES.get(problem.code, "correct the file"),
        host=crontab.host,
    )


def _quartz_fix(line: CrontabLine) -> str | None:
    tokens = line.text.split()
    if len(tokens) < 7:
        return None
    fields = [_cron_field(f, SPECS[i]) for i, f in enumerate(tokens[1:6])]
    rest = tokens[6:]
    if rest and re.fullmatch(r"\*|[0-9]{4}(-[0-9]{4})?", rest[0]):
        rest = rest[1:]
    suggestion = " ".join(fields + rest)
    note = ""
    if re.search(r"[0-9]", tokens[5]):
        note = "; Quartz numbers weekdays 1=Sunday…7=Saturday, cron 0=Sunday: check that field"
    return f'drop the seconds field: "{suggestion}"{note} (check it with migrate-cron explain)'


def _cron_field(text: str, spec: FieldSpec) -> str:
    """Quartz to cron for one field: ? → *, N/S → N-max/S (0/S → */S)."""
    if text == "?":
        return "*"
    parts = []
    for part in text.split(","):
        base, slash, step = part.partition("/")
        if slash and base.isdigit():
            base = "*" if int(base) == spec.low else f"{base}-{spec.high}"
        parts.append(base + slash + step)
    return ",".join(parts)
