"""Where the crons differ in reading one line's fields or a whole file: cronie's random ranges,
busybox's ignored steps, and Debian's all-or-nothing reading of system crontabs. The facts come
from :class:`~migrate_cron.crontab.flavour.Flavour`; the messages say what each cron does."""

from __future__ import annotations

from migrate_cron.crontab.entry import CrontabLine, Kind, Problem, Severity
from migrate_cron.crontab.fields import SPECS
from migrate_cron.crontab.flavour import (
    Flavour,
    random_parts,
    single_steps,
    without_random,
    without_single_steps,
)


def whole_file_problems(lines: list[CrontabLine], cron: Flavour) -> tuple[Problem, ...]:
    """Debian's cron reads a system crontab (/etc/crontab, cron.d) all or nothing: on the
    first line it rejects it logs "Syntax error, this crontab file will be ignored", and
    without a final newline "Missing newline before EOF, this crontab file will be ignored"
    (both messages are in the daemon, cron 3.0pl1); not one line of the file runs."""
    bad = next((line for line in lines if line.kind is Kind.INVALID), None)
    unterminated = bool(lines) and not lines[-1].raw.endswith("\n")
    if bad is not None and cron.rejects_whole_file:
        why = f"line {bad.number} is rejected ({bad.problems[0].message})"
    elif unterminated and cron.newline_rejects_file:
        why = "its last line has no newline"
    else:
        return ()
    return (
        Problem(
            "file-ignored",
            f"{cron.label} ignores this whole file, so none of its lines runs: {why}; "
            'the daemon logs "this crontab file will be ignored" and runs nothing from it',
            Severity.ERROR,
        ),
    )


def as_flavour_reads(expr: str, cron: Flavour, column: int) -> tuple[str, tuple[Problem, ...]]:
    """The five fields as this cron reads them, and what it changed: cronie picks one value
    for each ``a~b`` when it loads the file (shown here as the range's start); busybox reads
    ``N/S`` as ``N``, the step ignored. Other crons reject both, as the field parser does."""
    if expr.startswith("@") or ("~" not in expr and "/" not in expr):
        return expr, ()  # the common case, checked first: 100,000 lines go through here
    problems: list[Problem] = []
    both = cron.random_ranges == "both"
    if cron.random_ranges != "none" and (parts := random_parts(expr, both)):
        expr = without_random(expr, tuple(spec.low for spec in SPECS), both)
        if both:
            message = (
                f"{cron.label} accepts {', '.join(parts)} (its crontab -n passes it) but does "
                "not document what it means (cronie picks a random value in the range): next "
                "runs are shown for the range's start; write the value you mean"
            )
        else:
            message = (
                f"{cron.label} picks one random value in {', '.join(parts)} each time it loads "
                "the file (next runs are shown for the range's start): the time is not fixed"
            )
        problems.append(
            Problem(
                "random-range",
                message,
                Severity.WARNING if both else Severity.INFO,
                column=column,
            )
        )
    if cron.single_value_step and (parts := single_steps(expr)):
        expr = without_single_steps(expr)
        problems.append(
            Problem(
                "step-ignored",
                f"busybox crond reads {', '.join(parts)} as the single value before the slash: "
                "the step is ignored, so it runs once where a repeat was meant",
                Severity.ERROR,
                column=column,
            )
        )
    return expr, tuple(problems)
