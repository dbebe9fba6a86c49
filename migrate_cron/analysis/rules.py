"""The per-line rules: each a small function over one job (rules over several lines are in
``cross_rules.py``, findings for lines cron rejects in ``syntax.py``).

Rules look at the command *text* only (never run it) and at the schedule's expanded fields.
They are deliberately cheap — substring tests guard every regular expression — because
``analyze`` runs all of them over every line of a 100,000-line crontab in well under a second.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from functools import lru_cache

from migrate_cron.analysis.finding import Context, Hit, Rule, RuleId
from migrate_cron.analysis.job import CronJob, schedule_for
from migrate_cron.analysis.naming import call_name, naming, subcommands
from migrate_cron.analysis.shell import SHELL_RULES
from migrate_cron.analysis.streams import CRON, NULL, Fate, fates
from migrate_cron.analysis.tree import Call, Script
from migrate_cron.analysis.wrappers import (
    INTERPRETERS,
    REPORTING,
    basename,
    main_call,
    unwrap,
    work_calls,
)
from migrate_cron.crontab.entry import Severity
from migrate_cron.crontab.fields import CronFields
from migrate_cron.crontab.timezone import dst_windows, zone_table

POLL_MINUTES = 5
ORDERING_WINDOW_MINUTES = 120

# -- per-line rules ------------------------------------------------------------------------


def every_minutes(gap: float) -> str:
    """ "every minute", "every 5 minutes"."""
    return "every minute" if gap == 1 else f"every {gap:g} minutes"


#: Fewer runs a day than this (a burst once a night, business hours) is not a poll.
POLL_RUNS_PER_DAY = 24
#: Words of a job's name that say each run produces something of its time (a sample, a
#: heartbeat, a graph) rather than looking for work that may not be there.
_SAMPLERS = frozenset(
    (
        "stats",
        "statistics",
        "metrics",
        "metric",
        "monitor",
        "monitoring",
        "collect",
        "collector",
        "snmp",
        "graph",
        "graphs",
        "rrd",
        "heartbeat",
        "keepalive",
        "alive",
        "realtime",
        "sample",
        "sampler",
        "munin",
        "telegraf",
        "uptime",
        "ping",
        "probe",
    )
)


def _poll(job: CronJob, ctx: Context) -> Hit | None:
    cadence = job.cadence
    if cadence is None or cadence.typical_gap is None or cadence.typical_gap > POLL_MINUTES:
        return None
    if cadence.runs_per_day < POLL_RUNS_PER_DAY:
        return None  # a burst (8-13 0 * * *) or a few hours a day: chosen, not polling
    if _minute_star(job, ctx) is not None:
        return None  # `* 1 * * *`: a slip for `0 1 * * *`, said by minute-star
    if _samples(job):
        return None
    return Hit(
        f"polls {every_minutes(cadence.typical_gap)} ({cadence.runs_per_day:g} runs a day), "
        "and most runs likely find nothing to do"
    )


def _samples(job: CronJob) -> bool:
    """Each run does the work of its own time slot: it is handed the time (``$(date …)`` in
    an argument), it only stamps a file (``date > heartbeat``), or its name says it samples."""
    calls = work_calls(job.script)
    if not calls:
        return False
    for call, _ in calls:
        if any(w.raw.startswith("$(date") or w.raw.startswith("`date") for w in call.words):
            return True
    if all(
        basename(inner.argv[0]) in REPORTING or basename(inner.argv[0]) == "touch"
        for _, inner in calls
    ):
        return True
    words = set(re.split(r"[^a-z0-9]+", _base_name(job)))
    return not words.isdisjoint(_SAMPLERS)


def _base_name(job: CronJob, action: bool = False) -> str:
    """The line's name before collisions are told apart: what its command says it does
    (``action``: the verb part of a ``namespace:action`` sub-command, else the name)."""
    found = naming(job.line.shell_command or "", job.line.env)
    if found is None:
        return ""
    return (found.action or found.base) if action else found.base


_LOCK = re.compile(
    r"\b(flock|lockfile|lckdo|setlock|run-one|run-this-one|solo|withlock)\b|"
    # Tried only where a path starts: from inside one it would find the same lock file, later
    # and after rescanning the path from every position.
    r"(?<![\w/.-])[\w/.-]+\.(lock|pid)\b|pidfile|--pid\b"
)


def lock_wrapper(command: str) -> str | None:
    """The lock the command guards itself with (``flock``, a ``.lock``/``.pid`` file…), as
    written, or None."""
    text = command.lower()
    if not ("lock" in text or "pid" in text or "run-one" in text or "solo" in text):
        return None
    match = _LOCK.search(text)
    return match.group() if match else None


def _lock(job: CronJob, ctx: Context) -> Hit | None:
    text = job.command.lower
    if not any(w in text for w in ("lock", "pid", "solo", "run-one", "run-this-one")):
        return None  # a fast path only: what decides is the tree below
    for call in job.script.top:
        if not call.words:
            continue
        inner = unwrap(call)
        if inner.lock is not None:
            wrapper = next(
                (w for w in inner.wrappers if w in ("flock", "setlock", "lckdo", "solo")), "a lock"
            )
            what = f"port {inner.lock}" if wrapper == "solo" else inner.lock
            return Hit(f"guards itself with {wrapper} ({what}): runs have overlapped before")
        head = call.words[0].value.rsplit("/", 1)[-1]
        if head in ("lockfile", "lockrun", "run-one", "run-this-one", "withlock", "lckdo"):
            return Hit(f"guards itself with {head}: runs have overlapped before")
        if any("run-one" in w for w in inner.wrappers):
            return Hit("guards itself with run-one: runs have overlapped before")
        flag = next((a for a in inner.argv[1:] if a.startswith(("--pid", "--lock"))), None)
        if flag is not None:
            return Hit(f'guards itself with "{flag}": runs have overlapped before')
        if head in ("test", "[") and any(
            w.value.endswith((".lock", ".pid")) for w in call.words[1:]
        ):
            return Hit("checks a lock or pid file before it runs: runs have overlapped before")
    return None


def _sleep(job: CronJob, ctx: Context) -> Hit | None:
    if "sleep" not in job.command.text:
        return None
    top = [c for c in job.script.top if c.words]
    if len(top) < 2 or top[0].words[0].value != "sleep" or top[1].joined not in (";", "&&"):
        return None
    operands = top[0].words[1:]
    if len(operands) != 1:
        return None  # two operands: the sleep-operands finding says what happens
    amount = operands[0].raw
    if "RANDOM" in amount or "random" in amount or "shuf" in amount:
        return Hit(
            f"waits a random time ({amount}) before starting, to spread load across hosts",
            fix="drop the sleep: workers take jobs as capacity allows, no stampede to avoid",
        )
    if amount.isdigit():
        amount = f"{amount} s"
    return Hit(
        f"waits {amount} after its slot before it starts: if it waits for another job, that "
        "order is only hoped for; if it spreads load, the queue does that"
    )


def _quoted(fate: Fate) -> str:
    return " ".join(fate.redirects)


def _output(job: CronJob, ctx: Context) -> Hit | None:
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


def _unseen(job: CronJob, ctx: Context) -> Hit | None:
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


def _partial(job: CronJob, ctx: Context) -> Hit | None:
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


def _swallow(job: CronJob, ctx: Context) -> Hit | None:
    last = swallowing_tail(job.script)
    if last is None:
        return None
    return Hit(f'reports success even when it fails ("{last.joined} {last.text}")')


#: A framework's own scheduler, by its runner and the sub-command that runs it: (what it is,
#: where its real schedule lives).
_LARAVEL = (
    "Laravel's scheduler (artisan schedule:run)",
    "app/Console/Kernel.php or routes/console.php",
)
_SYMFONY = ("the Symfony scheduler (bin/console)", "the #[AsSchedule] providers")
_DRUPAL = (
    "Drupal cron (drush cron)",
    "hook_cron implementations and the Ultimate Cron/queue settings",
)
_FRAMEWORKS: dict[tuple[str, str], tuple[str, str]] = {
    ("artisan", "schedule:run"): _LARAVEL,
    ("console", "scheduler:"): _SYMFONY,
    ("console", "messenger:consume"): _SYMFONY,
    ("drush", "cron"): _DRUPAL,
    ("drush", "core:cron"): _DRUPAL,
    ("wp", "cron"): ("WordPress cron (wp cron)", "the plugins' wp_schedule_event calls"),
    ("magento", "cron:run"): ("Magento cron (cron:run)", "the modules' crontab.xml"),
}
_CRON_SCRIPTS = {
    "wp-cron.php": ("WordPress cron (wp cron)", "the plugins' wp_schedule_event calls"),
    "cron.php": ("an application's cron.php", "the application's task list"),
}


def framework_of(job: CronJob) -> tuple[str, str] | None:
    """(what, where) when a work call of the line runs a framework's own scheduler, read from
    the tree: the runner, its sub-command, or the script or URL it calls."""
    for _, inner in work_calls(job.script):
        argv = list(inner.argv)
        if len(argv) > 1 and basename(argv[0]) in INTERPRETERS:
            argv = [a for a in argv[1:] if not a.startswith("-")]
        if not argv:
            continue
        program = basename(argv[0])
        if program in ("curl", "wget", "lynx"):
            url = next((a for a in argv[1:] if "://" in a), "")
            script = basename(url.split("?", 1)[0])
            if script in _CRON_SCRIPTS:
                return _CRON_SCRIPTS[script]
            continue
        if program in _CRON_SCRIPTS:
            return _CRON_SCRIPTS[program]
        subs = subcommands(argv[1:])
        sub = subs[0] if subs else ""
        for (runner, wanted), found in _FRAMEWORKS.items():
            if program.removesuffix(".php") != runner:
                continue
            if sub == wanted or (wanted.endswith(":") and sub.startswith(wanted)):
                if wanted == "messenger:consume" and not any("scheduler" in w for w in subs[1:]):
                    continue
                return found
    return None


def _framework(job: CronJob, ctx: Context) -> Hit | None:
    cadence = job.cadence
    if cadence is None or cadence.typical_gap is None or cadence.typical_gap > POLL_MINUTES:
        return None
    text = job.command.lower
    if not any(w in text for w in ("artisan", "console", "drush", "wp", "magento", "cron.php")):
        return None  # a fast path only: the tree decides
    found = framework_of(job)
    if found is None:
        return None
    label, where = found
    return Hit(
        f"runs {label} {every_minutes(cadence.typical_gap)}: the real schedule is inside the "
        f"application ({where}), not in this file",
        fix=f"list the tasks in {where} and migrate them one by one; keep this line until the "
        "last one has moved",
    )


#: Options that cap how much one run handles.
_BATCH_OPTIONS = frozenset(
    (
        "--limit",
        "--batch-size",
        "--batch",
        "--chunk",
        "--chunk-size",
        "--max",
        "--max-items",
        "--max-jobs",
        "--count",
        "--size",
        "--take",
    )
)


def _batch(job: CronJob, ctx: Context) -> Hit | None:
    if "--" not in job.command.text:
        return None
    for _, inner in work_calls(job.script):
        argv = list(inner.argv)
        for i, word in enumerate(argv):
            key, eq, value = word.partition("=")
            if key.lower() not in _BATCH_OPTIONS:
                continue
            if not eq:
                value = argv[i + 1] if i + 1 < len(argv) else ""
            if not value.isdigit():
                continue
            per_day = job.cadence.runs_per_day if job.cadence else 0
            capacity = f" (at most {int(value) * per_day:,.0f} a day)" if per_day else ""
            shown = word if eq else f"{word} {value}"
            return Hit(
                f'handles at most {value} items per run ("{shown}"){capacity}: a bigger backlog '
                "waits for later runs"
            )
    return None


_CURL_TIMEOUTS = ("--max-time", "-m")
_WGET_TIMEOUTS = ("--timeout", "--read-timeout", "-T")


def _http(job: CronJob, ctx: Context) -> Hit | None:
    if "curl" not in job.command.text and "wget" not in job.command.text:
        return None
    for _, inner in work_calls(job.script):
        argv = list(inner.argv)
        tool = basename(argv[0])
        if tool == "curl":
            if any(_has_option(a, _CURL_TIMEOUTS) for a in argv[1:]):
                continue
            if any(basename(w) == "timeout" for w in inner.wrappers):
                continue
            return Hit(
                "calls curl without --max-time: a server that never answers keeps the job "
                "running forever"
                + (
                    " (--connect-timeout only bounds connecting)"
                    if any(a.startswith("--connect-timeout") for a in argv)
                    else ""
                ),
                fix="add --max-time 60 (or let the worker's per-job timeout kill it)",
            )
        if tool == "wget":
            if any(_has_option(a, _WGET_TIMEOUTS) for a in argv[1:]):
                continue
            if any(basename(w) == "timeout" for w in inner.wrappers):
                continue
            return Hit(
                "calls wget without --timeout: by default it retries 20 times with 15-minute "
                "read timeouts",
                fix="add --timeout=60 --tries=1 and let the queue's retries handle failures",
            )
    return None


def _has_option(word: str, names: tuple[str, ...]) -> bool:
    for name in names:
        if word == name or word.startswith(name + "="):
            return True
        if len(name) == 2 and word.startswith(name) and word[2:].isdigit():
            return True  # -m60
        if (
            len(name) == 2
            and word.startswith("-")
            and not word.startswith("--")
            and (name[1] in word[1:] and word.endswith(name[1]))
        ):
            return True  # -sSm 60 style bundles
    return False


def _minute_star(job: CronJob, ctx: Context) -> Hit | None:
    """``* 1 * * *`` runs 60 times in hour 1; a written hour with a bare ``*`` minute is the
    classic slip for ``0 1 * * *``."""
    expr = job.line.schedule or ""
    fields = expr.split()
    if len(fields) != 5 or fields[0] != "*" or fields[1] == "*":
        return None
    hour = fields[1]
    if not re.fullmatch(r"\d+(,\d+)*|\*/\d+|\d+/\d+", hour):
        return None  # a range (9-17) is a deliberate every-minute window
    meant = " ".join(["0", *fields[1:]])
    runs = job.cadence.runs_per_day if job.cadence else 0
    hours = "of every hour" if hour in ("*/1", "0-23/1") else f"of hour {hour}"
    return Hit(
        f"runs every minute {hours} ({runs:g} runs a day): did you mean `{meant}` (once at "
        "minute 0)?",
        fix=f"write {meant} if it should run once at minute 0 of those hours",
    )


def _dst(job: CronJob, ctx: Context) -> Hit | None:
    schedule = job.schedule
    if schedule is None or not schedule.fixed_time:
        return None
    return _dst_hit(job.line.schedule or "", job.timezone, ctx.now.year)


@lru_cache(maxsize=65536)
def _dst_hit(expr: str, timezone: str, year: int) -> Hit | None:
    if zone_table(timezone).fixed:
        return None
    fields = schedule_for(expr, timezone).fields
    for window in dst_windows(timezone, year):
        start, end = window.low, window.high
        day = start.date()
        if not _day_matches(fields, day):
            continue
        hit = _times_in(fields, start, end)
        if hit is None:
            continue
        when = f"{hit} on {day.isoformat()} in {timezone}"
        if window.forward:
            jump = end.strftime("%H:%M")
            what = f"{when} does not exist (clocks jump to {jump}): cron runs it at {jump}"
        else:
            what = f"{when} happens twice (clocks go back): cron runs it only the first time"
        span = window.span
        return Hit(
            what,
            fix=f"move it outside {span} local time, or schedule it in UTC (CRON_TZ=UTC on "
            "cronie) if it must run at exactly one instant",
        )
    return None


def _reboot(job: CronJob, ctx: Context) -> Hit | None:
    if not job.is_reboot:
        return None
    return Hit("runs once when cron starts (after a reboot), not on a schedule")


#: First or last words of a job's name that say it sends something to people.
_SENDING = frozenset(
    (
        "send",
        "mail",
        "email",
        "notify",
        "deliver",
        "dispatch",
        "remind",
        "newsletter",
        "sendmail",
        "mailer",
        "notifier",
        "sms",
        "push-notifications",
        "webhook",
        "webhooks",
    )
)
#: Words that make a name about mail a local chore (a filter, a cleanup), not a sending.
_LOCAL_WORK = frozenset(
    (
        "firewall",
        "filter",
        "server",
        "queue",
        "log",
        "logs",
        "backup",
        "sync",
        "check",
        "monitor",
        "stats",
        "cleanup",
        "clean",
        "purge",
        "import",
        "config",
        "spam",
        "bounce",
        "bounces",
        "verify",
        "verification",
        "verifications",
        "expire",
        "expired",
        "rotate",
    )
)
_LOCAL_NOTIFIERS = frozenset(("notify-send", "wall", "logger", "write", "zenity", "kdialog"))
_MAILERS = frozenset(("mail", "mailx", "sendmail", "mutt", "s-nail", "msmtp", "swaks"))
_UPLOADERS = frozenset(("scp", "sftp", "ftp", "lftp", "rsync", "curlftpfs", "ncftpput"))
_QUEUES = frozenset(
    (
        "amqp-publish",
        "kafka-console-producer",
        "kcat",
        "kafkacat",
        "nats",
        "mosquitto_pub",
        "aws",
        "gsutil",
        "az",
    )
)
_CURL_SENDS = frozenset(
    (
        "-d",
        "--data",
        "--data-raw",
        "--data-binary",
        "--data-urlencode",
        "-F",
        "--form",
        "-T",
        "--upload-file",
        "--json",
    )
)


def handover_evidence(job: CronJob) -> str | None:
    """Why this job hands work to someone off the host, from its commands: mail to an address
    (not a report piped to oneself), an HTTP request with a body, an upload to ``host:path``, a
    message-queue client; or a name whose first or last word is a sending verb
    (``send_invoices``, ``digest_mailer``). None: no evidence (words in paths never count)."""
    if job.is_reboot:
        return None
    base = _base_name(job)
    key = f"handover:{base}"
    memo = job.script.memo
    if key not in memo:
        memo[key] = _evidence(job, base)
    found: str | None = memo[key]
    return found


def _evidence(job: CronJob, base: str) -> str | None:
    for _, inner in work_calls(job.script):
        argv = list(inner.argv)
        prog = basename(argv[0])
        if prog in _MAILERS and any("@" in a and not a.startswith("-") for a in argv[1:]):
            return f"mails {next(a for a in argv[1:] if '@' in a)}"
        if prog in ("curl", "wget", "http") and (
            any(a.split("=", 1)[0] in _CURL_SENDS for a in argv[1:])
            or any(a in ("POST", "PUT", "PATCH") for a in argv[1:])
            or any(a.startswith("--post-") for a in argv[1:])
        ):
            return f"sends data over HTTP with {prog}"
        if prog in _UPLOADERS:
            remote = [a for a in argv[2:] if re.match(r"^[\w.@-]+:[^/]?", a) and "://" not in a]
            if remote and argv[-1] in remote:
                return f"uploads to {remote[-1].split(':', 1)[0]}"
        if prog in _QUEUES and (
            prog != "aws" or argv[1:3] in (["sqs", "send-message"], ["sns", "publish"])
        ):
            return f"publishes with {prog}"
    main = main_call(job.script)
    if main is not None and basename(main[1].argv[0]) in _LOCAL_NOTIFIERS:
        return None  # a message on this host's desktop or terminals
    names = [base, _base_name(job, action=True)] + [
        call_name(inner.argv) for _, inner in work_calls(job.script)[1:]
    ]
    for name in names:
        if _sends(name):
            return f"its name says it sends ({name})"
    return None


def _sends(name: str) -> bool:
    """A job's own name (never a path or URL) starts or ends with a sending verb."""
    words = [w for w in re.split(r"[^a-z0-9]+", name) if w]
    if not words or not (words[0] in _SENDING or words[-1] in _SENDING or words[0] == "upload"):
        return False
    # mail-firewall, email-cleanup: work on the mail system, not a sending
    return not (words[0] in ("mail", "email") and not _LOCAL_WORK.isdisjoint(words[1:]))


def handover_words(job: CronJob) -> tuple[str, ...]:
    """Kept for callers that list the evidence as words: empty without evidence."""
    evidence = handover_evidence(job)
    return (evidence,) if evidence else ()


def _handover(job: CronJob, ctx: Context) -> Hit | None:
    evidence = handover_evidence(job)
    if evidence is None:
        return None
    return Hit(
        f"hands work over to someone else ({evidence}): a failed run is lost until a later run "
        "happens to pick it up, and cron never retries it"
    )


def _percent(job: CronJob, ctx: Context) -> Hit | None:
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


PER_LINE: tuple[Rule, ...] = (
    Rule(
        RuleId.PERCENT_SPLIT,
        Severity.ERROR,
        "An unescaped % ends the command: cron passes the rest to it as standard input.",
        "write each % that belongs to the command as \\% (date +\\%F, $((RANDOM \\% 60))); "
        "keep a bare % only to give the command input",
        _percent,
    ),
    Rule(
        RuleId.POLL,
        Severity.WARNING,
        f"Runs every {POLL_MINUTES} minutes or more often: a queue polled while mostly empty.",
        "enqueue a job when the work appears (in the code that creates it) and let workers "
        "pick it up at once",
        _poll,
    ),
    Rule(
        RuleId.OVERLAP_LOCK,
        Severity.WARNING,
        "A lock file, flock, pidfile or run-one shows runs have overlapped before.",
        "drop the lock: in the queue each record is claimed by one worker under a lease; give "
        "this job concurrency 1 if it must never run twice at once",
        _lock,
    ),
    Rule(
        RuleId.SLEEP_OFFSET,
        Severity.INFO,
        "A sleep before the command moves it off its slot: ordering or load spreading in disguise.",
        "if it waits for another job, enqueue it when that job succeeds; otherwise put the "
        "real time in the schedule",
        _sleep,
    ),
    Rule(
        RuleId.OUTPUT_DISCARDED,
        Severity.WARNING,
        "Output is thrown away, so a failing run leaves no trace.",
        "remove the redirection: the worker keeps stdout/stderr and stores the tail with each "
        "failed attempt",
        _output,
    ),
    Rule(
        RuleId.OUTPUT_UNSEEN,
        Severity.WARNING,
        'MAILTO="" makes cron discard what the command prints: output that is not redirected '
        "is never seen.",
        "redirect it to a log (>>FILE 2>&1) or set MAILTO; in the queue the worker keeps the "
        "output of every failed attempt",
        _unseen,
    ),
    Rule(
        RuleId.REDIRECT_PARTIAL,
        Severity.INFO,
        "A redirection after `a && b` belongs to the last command only.",
        "wrap the list in braces to redirect all of it: { a && b; } >FILE 2>&1",
        _partial,
    ),
    Rule(
        RuleId.ERRORS_SWALLOWED,
        Severity.WARNING,
        "The exit status is forced to success, so nobody (and no retry) ever sees a failure.",
        "remove '|| true' / 'exit 0': a non-zero exit is how the queue knows to retry",
        _swallow,
    ),
    Rule(
        RuleId.FRAMEWORK_SCHEDULER,
        Severity.WARNING,
        "A framework scheduler runs every minute; the actual jobs are defined in the application.",
        "list the framework's scheduled tasks and migrate them one by one",
        _framework,
    ),
    Rule(
        RuleId.BATCH_LIMIT,
        Severity.INFO,
        "A batch-size limit in the arguments caps throughput at limit × runs.",
        "enqueue one job per record (or per chunk) so workers drain any backlog at their pace",
        _batch,
    ),
    Rule(
        RuleId.HTTP_NO_TIMEOUT,
        Severity.WARNING,
        "An HTTP call without a timeout can hang the job forever.",
        "add a timeout to the call (curl --max-time, wget --timeout)",
        _http,
    ),
    Rule(
        RuleId.MINUTE_STAR,
        Severity.WARNING,
        "A bare * in the minute field runs the job every minute of the hours written.",
        "put the minute it should run at (0 for the top of the hour)",
        _minute_star,
    ),
    Rule(
        RuleId.DST_WINDOW,
        Severity.WARNING,
        "A fixed-time job inside its timezone's DST change: skipped or repeated wall-clock time.",
        "move it outside the DST window or schedule it in UTC",
        _dst,
    ),
    Rule(
        RuleId.REBOOT,
        Severity.INFO,
        "@reboot has no schedule: it cannot become a scheduled job.",
        "keep it on cron (or turn it into a systemd unit); nothing to migrate",
        _reboot,
    ),
    Rule(
        RuleId.HAND_OVER,
        Severity.WARNING,
        "The job hands work to a third party or a customer; cron gives it no retry.",
        "schedule + enqueue: the scheduler enqueues one job per slot and workers retry it with "
        "backoff until it succeeds",
        _handover,
    ),
    *SHELL_RULES,
)

# -- helpers -------------------------------------------------------------------------------


def _day_matches(fields: CronFields, day: date) -> bool:
    if day.month not in fields.months:
        return False
    dom = day.day in fields.days
    dow = (day.isoweekday() % 7) in fields.weekdays
    return (dom or dow) if fields.day_or else (dom and dow)


def _times_in(fields: CronFields, start: datetime, end: datetime) -> str | None:
    """The first hh:mm of the job inside the wall-clock window [start, end) on one day."""
    low = start.hour * 60 + start.minute
    high = low + int((end - start).total_seconds() // 60)
    for h in fields.hours:
        for m in fields.minutes:
            if low <= h * 60 + m < high:
                return f"{h:02d}:{m:02d}"
    return None
