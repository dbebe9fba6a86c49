"""The job registry: ``migrate-cron.toml``, one ``[jobs.NAME]`` table per job.

The registry is code under review: it is the only source of commands the worker runs. A
database row names a job (its ``kind``) and carries data; it never carries a command.

Format (every key but the command/handler is optional)::

    [defaults]                 # applies to every job unless the job sets the key
    timezone = "Europe/Berlin"
    max_attempts = 5

    [jobs.invoices-export]
    schedule = "30 2 * * *"    # Vixie cron syntax or @macro; omit for queue-only kinds
    timezone = "Europe/Berlin" # IANA zone the schedule is read in (CRON_TZ)
    command = "php artisan invoices:export"   # run as SHELL -c command, like cron
    shell = "/bin/sh"
    env = { MAILTO = "ops@example.com" }      # crontab env lines that applied
    cwd = "/var/www/shop"
    cwd_fallback = "/var/spool/cron"  # where it runs if cwd (else HOME) is missing at run time
    stdin = ""                 # text after the first unescaped % in the crontab line
    timeout = 3600             # seconds; the whole process group is killed
    max_attempts = 5
    backoff = { base = 10.0, cap = 3600.0 }
    policy = "run-once"        # missed slots: skip | run-once | backfill
    max_backfill = 10
    misfire_grace = 60         # seconds a slot may be late and still be on time
    mode = "cron"              # cron | enqueue | scheduler (who fires it now)
    concurrency = 1            # at most this many running at once, over every worker and host
    overlap = "skip"           # one run at a time; a slot due meanwhile: skip (flock -n) | wait
    notify = ["mail:ops@example.com", "webhook:https://…", "command:/usr/local/bin/page"]
    notify_on = ["failed"]     # failed (default) | retrying | output | recovered
    on_success = ["send-invoices"]   # enqueued with this job's success (same transaction)
    on_failure = ["alert-finance"]   # enqueued when no retry is left
    # without `notify`: cron's rule — MAILTO's addresses, none for MAILTO="", else the user

    [notify]                   # how mail leaves: smtp://HOST:PORT or smtps://… (auth from
    smtp = "smtp://mail:25"    # MIGRATE_CRON_SMTP_USER/_PASSWORD); default /usr/sbin/sendmail -t
    # handler = "myapp.jobs:export"   # instead of command: a Python callable
    # [jobs.invoices-export.source]   # where the line came from (for migrate/rollback)
    # file = "/etc/cron.d/shop"; line = 12; text = "30 2 * * * www-data php …"; host = "web1"
    # [jobs.invoices-export.migration]  # written by `migrate`, removed by `rollback`
    # previous_mode = "cron"; crontab = "/etc/cron.d/shop"; line = "30 2 * * * www-data /…"
    # switched_at = 2025-03-01T09:12:00Z; installed = false

A business table the worker claims rows from directly (``worker --table NAME``; the columns
claiming needs come from ``generate migration --claim-table NAME``)::

    [tables.notifications]
    table = "notifications"    # the SQL table (default: the section name)
    key = "id"                 # its primary key: the row's identity in MIGRATE_CRON_ROW_KEY
    status = "status"          # the status column and the values that mean …
    ready = "pending"          # … waiting to be processed,
    processing = "sending"     # … claimed by a worker (set by the claim),
    done = "sent"              # … processed,
    failed = "failed"          # … out of attempts (last_error says why)
    order_by = "created_at"    # oldest first (default: the key)
    batch = 20                 # rows claimed per query
    lease = 60                 # seconds a claim holds without a heartbeat
    command = "php bin/send-notification.php"   # or handler = "app.notify:send" (key as argument)
    # shell, env, cwd, timeout, max_attempts, backoff, user: as for a job

A line that ran on several hosts (or in several files) is one job with several origins: an
array ``[[jobs.NAME.sources]]`` instead of the one ``[jobs.NAME.source]`` table, and one
``[[jobs.NAME.migrations]]`` entry per origin ``migrate`` switched, each naming its origin
(``origin = "web1:/etc/cron.d/shop"``, the origin's ``label``). Both spellings load.

The package: ``spec`` (the values), ``loader`` (file → ``Registry``; ``job_entry``, ``tables``,
``origins`` and ``keys`` check each part), ``text`` (one job's tables found in the bytes, for
``enqueue``), ``notify_targets`` (where notifications go; ``notify/`` sends them) and
``writer`` (``generate`` and ``migrate`` editing the TOML document). Only the spec and the
loader are imported here: the cron line's ``enqueue`` imports this package, and the writer
(tomlkit) is for the commands that write.
"""

from migrate_cron.registry.job_entry import NUL_REASON, env_problem, run_as_problem
from migrate_cron.registry.keys import KEY_EXAMPLES, key_example
from migrate_cron.registry.loader import (
    find_entry,
    job_entry,
    load_job,
    load_registry,
    parse_registry,
)
from migrate_cron.registry.spec import (
    MODES,
    OVERLAPS,
    POLICIES,
    Backoff,
    EntryError,
    JobSpec,
    Migration,
    Registry,
    Source,
    StatusValue,
    TableSpec,
    unknown_job_message,
    unknown_table_message,
)

__all__ = [
    "KEY_EXAMPLES",
    "MODES",
    "NUL_REASON",
    "OVERLAPS",
    "POLICIES",
    "Backoff",
    "EntryError",
    "JobSpec",
    "Migration",
    "Registry",
    "Source",
    "StatusValue",
    "TableSpec",
    "env_problem",
    "find_entry",
    "job_entry",
    "key_example",
    "load_job",
    "load_registry",
    "parse_registry",
    "run_as_problem",
    "unknown_job_message",
    "unknown_table_message",
]
