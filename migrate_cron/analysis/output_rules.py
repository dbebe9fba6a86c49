"""Per-line rules about what becomes of a job's output and exit status: thrown away, discarded by
``MAILTO=""``, redirected for the last command only, or a failure turned into success.
"""

from __future__ import annotations

from migrate_cron.analysis.finding import Context, Hit
from migrate_cron.analysis.job import CronJob
from migrate_cron.analysis.streams import CRON, NULL, Fate, fates
from migrate_cron.analysis.tree import Call, Script


def _quoted(fate: Fate) -> str:
    return " ".join(fate.redirects)


def check_output(job: CronJob, ctx: Context) -> Hit | None:
    """Output thrown away: every command's stdout and stderr to /dev/null, or some command's
    errors; quoted as the file writes it."""
    if "/dev/null" not in job.command.text:
        return None
    found = fates(job.script)
    if not found:
        return None
    if all(f.stdout == NULL and f.stderr == NULL for f in found):
        return Hit(
            f'sends all output, errors included, to /dev/null ("{_quoted(found[-1])}"): '
            "failures leave no trace"
        )
    quiet = [f for f in found if f.stderr == NULL]
    if quiet:
        what = quiet[0]
        both = "its output and errors" if what.stdout == NULL else "its errors"
        return Hit(
            f'`{what.program}` sends {both} to /dev/null ("{_quoted(what)}"): its failures '
            "leave no trace"
        )
    return None


def check_unseen(job: CronJob, ctx: Context) -> Hit | None:
    """MAILTO="" and output that reaches cron: cron drops it (crontab(5))."""
    if job.line.env.get("MAILTO", None) != "":
        return None
    # A log sink's own output is nothing to see: what it is fed is the log.
    found = [f for f in fates(job.script) if f.program not in ("logger", "systemd-cat")]
    errors = [f for f in found if f.stderr == CRON]
    if not errors:
        return None
    first = errors[0]
    if first.stdout == CRON and not first.redirects:
        return Hit(
            f'`{first.program}` writes to cron\'s output and MAILTO="" makes cron discard '
            "it: whatever it prints, errors included, is never seen"
        )
    where = (
        "/dev/null"
        if first.stdout == NULL
        else (first.stdout[5:] if first.stdout.startswith("file:") else "its log")
    )
    order = ""
    chain = first.call.chain
    if any(r.target == "1" and r.fd == 2 for r in chain) and first.stdout != CRON:
        order = " (`2>&1` comes before stdout moves, so stderr points at cron's output)"
    return Hit(
        f"stdout of `{first.program}` goes to {where} but its errors go to cron's mail{order}, "
        'which MAILTO="" discards: its error messages are never seen'
    )


def check_partial(job: CronJob, ctx: Context) -> Hit | None:
    """A redirection after ``a && b`` belongs to ``b`` alone (bash's grammar): ``a``'s output
    still goes to cron."""
    if job.line.env.get("MAILTO", None) == "" or ">" not in job.command.text:
        return None  # the MAILTO finding says it; no redirection, nothing partial
    found = fates(job.script)
    if len(found) < 2 or not found[-1].redirects or found[-1].stdout == CRON:
        return None
    loose = [f for f in found[:-1] if f.stdout == CRON and f.stderr == CRON and not f.call.piped]
    if not loose:
        return None
    names = ", ".join(f"`{f.program}`" for f in loose[:3])
    return Hit(
        f'the redirection "{_quoted(found[-1])}" applies only to the last command, '
        f"`{found[-1].program}`: the output and errors of {names} still go to cron's mail"
    )


#: Commands that end a line with success whatever came before them.
_FORCED_SUCCESS = {("true",), (":",), ("exit", "0"), ("exit",), ("/bin/true",), ("/usr/bin/true",)}


def swallowing_tail(script: Script) -> Call | None:
    """The last command of the line when it only forces success after the real work
    (``|| true``, ``; exit 0``, ``|| :``): cron then never sees a failure, nor would the queue."""
    text = script.text
    if "true" not in text and ":" not in text and "exit" not in text:
        return None
    top = [c for c in script.top if c.words or c.assignments]
    if len(top) < 2:
        return None
    last = top[-1]
    if last.argv not in _FORCED_SUCCESS or last.joined not in ("||", ";"):
        return None
    return last


def check_swallow(job: CronJob, ctx: Context) -> Hit | None:
    last = swallowing_tail(job.script)
    if last is None:
        return None
    return Hit(f'reports success even when it fails ("{last.joined} {last.text}")')
