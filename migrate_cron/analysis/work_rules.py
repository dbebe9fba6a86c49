"""Per-line rules about what the work itself does that a queue does differently: a lock against
overlapping runs, a framework's own scheduler run every minute, a batch limit per run, an HTTP
call that can hang.
"""

from __future__ import annotations

import re

from migrate_cron.analysis.finding import Context, Hit
from migrate_cron.analysis.job import CronJob
from migrate_cron.analysis.naming import subcommands
from migrate_cron.analysis.schedule_rules import POLL_MINUTES, every_minutes
from migrate_cron.analysis.work_calls import work_calls
from migrate_cron.analysis.wrappers import INTERPRETERS, basename, unwrap


def lock_wrapper(command: str) -> str | None:
    """The lock the command guards itself with (``flock``, a ``.lock``/``.pid`` file…), as
    written, or None."""
    text = command.lower()
    if not ("lock" in text or "pid" in text or "run-one" in text or "solo" in text):
        return None
    match = _LOCK.search(text)
    return match.group() if match else None


_LOCK = re.compile(
    r"\b(flock|lockfile|lckdo|setlock|run-one|run-this-one|solo|withlock)\b|"
    # Tried only where a path starts: from inside one it would find the same lock file, later
    # and after rescanning the path from every position.
    r"(?<![\w/.-])[\w/.-]+\.(lock|pid)\b|pidfile|--pid\b"
)


def check_lock(job: CronJob, ctx: Context) -> Hit | None:
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
                if (
                    wanted == "messenger:consume"
                    and not any(
                        "scheduler" in w  # vocabulary: a word of the command line, not a mode
                        for w in subs[1:]
                    )
                ):
                    continue
                return found
    return None


def check_framework(job: CronJob, ctx: Context) -> Hit | None:
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


def check_batch(job: CronJob, ctx: Context) -> Hit | None:
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


def check_http(job: CronJob, ctx: Context) -> Hit | None:
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
