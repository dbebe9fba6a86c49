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
from migrate_cron.analysis.shell import SHELL_RULES
from migrate_cron.crontab.entry import Severity
from migrate_cron.crontab.fields import CronFields
from migrate_cron.crontab.timezone import dst_windows, zone_table

POLL_MINUTES = 5
ORDERING_WINDOW_MINUTES = 30

# -- per-line rules ------------------------------------------------------------------------


def every_minutes(gap: float) -> str:
    """ "every minute", "every 5 minutes"."""
    return "every minute" if gap == 1 else f"every {gap:g} minutes"


def _poll(job: CronJob, ctx: Context) -> Hit | None:
    cadence = job.cadence
    if cadence is None or cadence.typical_gap is None or cadence.typical_gap > POLL_MINUTES:
        return None
    return Hit(
        f"polls {every_minutes(cadence.typical_gap)} ({cadence.runs_per_day:g} runs a day), "
        "and most runs likely find nothing to do"
    )


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
    found = lock_wrapper(job.command.text)
    if found is None:
        return None
    return Hit(f'guards itself with "{found}": runs have overlapped before')


_SLEEP = re.compile(r"^\s*sleep\s+(\$\(\(.*?\)\)|\$\{?random\S*|[^\s;&]+)\s*(?:;|&&)")


def _sleep(job: CronJob, ctx: Context) -> Hit | None:
    text = job.command.lower
    if "sleep" not in text:
        return None
    match = _SLEEP.match(text)
    if match is None:
        return None
    amount = match.group(1)
    if "random" in amount:
        return Hit(
            f"waits a random time ({amount}) before starting, to spread load across hosts",
            fix="drop the sleep: workers take jobs as capacity allows, no stampede to avoid",
        )
    if amount.isdigit():
        amount = f"{amount} s"
    return Hit(
        f"waits {amount} after its slot before starting: a hidden dependency on something "
        "that runs at the slot"
    )


_DISCARD = re.compile(r"(?:1?>\s*/dev/null\s*2>&1|&>\s*/dev/null|>&\s*/dev/null|2>\s*/dev/null)")


def _output(job: CronJob, ctx: Context) -> Hit | None:
    text = job.command.lower
    if "/dev/null" not in text:
        return None
    match = _DISCARD.search(text)
    if match is None:
        return None
    what = "errors" if match.group().lstrip().startswith("2>") else "all output, errors included,"
    return Hit(f'sends {what} to /dev/null ("{match.group()}"): failures leave no trace')


_SWALLOW = re.compile(r"\|\|\s*(?:true|:|exit\s+0)\b|\|\|\s*:\s*$|;\s*(?:exit\s+0|true)\s*$")


def _swallow(job: CronJob, ctx: Context) -> Hit | None:
    text = job.command.lower
    if "||" not in text and "exit" not in text and "true" not in text:
        return None
    match = _SWALLOW.search(text)
    if match is None:
        return None
    return Hit(f'reports success even when it fails ("{match.group().strip()}")')


_FRAMEWORKS = (
    (
        re.compile(r"artisan\s+schedule:run"),
        "Laravel's scheduler (artisan schedule:run)",
        "app/Console/Kernel.php or routes/console.php",
    ),
    (
        re.compile(r"bin/console\s+(?:scheduler:|messenger:consume\s+scheduler)"),
        "the Symfony scheduler (bin/console)",
        "the #[AsSchedule] providers",
    ),
    (
        re.compile(r"\bdrush\b.*\bcron\b"),
        "Drupal cron (drush cron)",
        "hook_cron implementations and the Ultimate Cron/queue settings",
    ),
    (
        re.compile(r"\bwp\b.*\bcron\b|wp-cron\.php"),
        "WordPress cron (wp cron)",
        "the plugins' wp_schedule_event calls",
    ),
    (re.compile(r"magento\s+cron:run"), "Magento cron (cron:run)", "the modules' crontab.xml"),
    (re.compile(r"\bcron\.php\b"), "an application's cron.php", "the application's task list"),
)


def _framework(job: CronJob, ctx: Context) -> Hit | None:
    cadence = job.cadence
    if cadence is None or cadence.typical_gap is None or cadence.typical_gap > POLL_MINUTES:
        return None
    text = job.command.lower
    if not any(w in text for w in ("artisan", "console", "drush", "wp", "magento", "cron.php")):
        return None
    for pattern, label, where in _FRAMEWORKS:
        if pattern.search(text):
            return Hit(
                f"runs {label} {every_minutes(cadence.typical_gap)}: the real schedule is "
                f"inside the application ({where}), not in this file",
                fix=f"list the tasks in {where} and migrate them one by one; keep this line "
                "until the last one has moved",
            )
    return None


_BATCH = re.compile(
    r"--(?:limit|batch-size|batch|chunk|chunk-size|max|max-items|max-jobs|count|size|take)"
    r"[= ](\d+)|\blimit\s+(\d+)\b"
)


def _batch(job: CronJob, ctx: Context) -> Hit | None:
    text = job.command.lower
    if "limit" not in text and "batch" not in text and "chunk" not in text and "--" not in text:
        return None
    match = _BATCH.search(text)
    if match is None:
        return None
    size = match.group(1) or match.group(2)
    per_day = job.cadence.runs_per_day if job.cadence else 0
    capacity = f" (at most {int(size) * per_day:,.0f} a day)" if per_day else ""
    return Hit(
        f'handles at most {size} items per run ("{match.group()}"){capacity}: a bigger backlog '
        "waits for later runs"
    )


_CURL = re.compile(r"(?<![\w-])(curl|wget)(?![\w-])")
_CURL_TIMEOUT = re.compile(r"--max-time\b|(?<![\w-])-m\s*\d|(?<![\w-])-\w*m\s+\d")
_WGET_TIMEOUT = re.compile(r"--timeout\b|--read-timeout\b|(?<![\w-])-t\s*\d|(?<![\w-])-T\s*\d")


def _http(job: CronJob, ctx: Context) -> Hit | None:
    text = job.command.lower
    if "curl" not in text and "wget" not in text:
        return None
    match = _CURL.search(text)
    if match is None:
        return None
    tool = match.group(1)
    if tool == "curl":
        if _CURL_TIMEOUT.search(text):
            return None
        return Hit(
            "calls curl without --max-time: a server that never answers keeps the job running "
            "forever"
            + (" (--connect-timeout only bounds connecting)" if "connect-timeout" in text else ""),
            fix="add --max-time 60 (or let the worker's per-job timeout kill it)",
        )
    if _WGET_TIMEOUT.search(job.command.text):
        return None
    return Hit(
        "calls wget without --timeout: by default it retries 20 times with 15-minute read timeouts",
        fix="add --timeout=60 --tries=1 and let the queue's retries handle failures",
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


_HANDOVER_WORDS = (
    "export",
    "invoice",
    "invoices",
    "payment",
    "payments",
    "pay",
    "payout",
    "billing",
    "charge",
    "mail",
    "email",
    "newsletter",
    "notify",
    "notification",
    "notifications",
    "sms",
    "webhook",
    "webhooks",
    "sync",
    "upload",
    "push",
    "send",
    "submit",
    "dispatch",
    "ftp",
    "sftp",
    "scp",
    "erp",
    "datev",
    "edi",
    "feed",
    "shipment",
    "shipping",
    "orders",
    "transfer",
    "api",
)
_HANDOVER = frozenset(_HANDOVER_WORDS)
_LETTERS = re.compile(r"[a-z]+")
_REPORTING_MAIL = re.compile(r"\|\s*(mail|mailx|sendmail)\b")


_WEAK_HANDOVER = frozenset(
    ("mail", "email", "send", "notify", "notification", "notifications", "api", "orders", "sms")
)
_MAILERS = frozenset(("mail", "mailx", "sendmail", "mutt"))


def handover_words(job: CronJob) -> tuple[str, ...]:
    """The words that say this job hands work to someone else (a third party, a customer).

    Mailing a report to yourself is not a hand-over: output piped to ``mail`` and a job whose
    program is a mailer with only weak words (mail, send, notify…) and the word "report" count
    as reports.
    """
    return _handover_words(job.command.lower, job.command.program)


@lru_cache(maxsize=131072)
def _handover_words(lower: str, program: str) -> tuple[str, ...]:
    text = _REPORTING_MAIL.sub(" ", lower) if "mail" in lower else lower
    words = _LETTERS.findall(text)
    if _HANDOVER.isdisjoint(words):  # most lines: no word to keep in order
        return ()
    seen = list(dict.fromkeys(w for w in words if w in _HANDOVER))
    if (
        seen
        and all(w in _WEAK_HANDOVER for w in seen)
        and ("report" in text or program in _MAILERS)
    ):
        return ()
    return tuple(seen)


def _handover(job: CronJob, ctx: Context) -> Hit | None:
    words = handover_words(job)
    if not words or job.is_reboot:
        return None
    quoted = ", ".join(f'"{w}"' for w in words[:4])
    return Hit(
        f"hands work over to someone else ({quoted}): a failed run is lost until a later run "
        "happens to pick it up"
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
    return Hit(
        f"cron cuts the command at its first unescaped %: {runs} with `{_shorten(stdin)}` as "
        "its input"
    )


def _left_open(command: str) -> str | None:
    """What a cut left open: a quoted string, an arithmetic or command substitution."""
    single = double = False
    depth = 0
    arithmetic = False
    i = 0
    while i < len(command):
        ch = command[i]
        if ch == "\\" and not single:
            i += 2
            continue
        if ch == "'" and not double:
            single = not single
        elif ch == '"' and not single:
            double = not double
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
        RuleId.ERRORS_SWALLOWED,
        Severity.WARNING,
        "The exit status is forced to success, so nobody (and no retry) ever sees a failure.",
        "remove '|| true' / 'exit 0': a non-zero exit is how the queue knows to retry",
        _swallow,
    ),
    Rule(
        RuleId.FRAMEWORK_SCHEDULER,
        Severity.INFO,
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
        Severity.INFO,
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
