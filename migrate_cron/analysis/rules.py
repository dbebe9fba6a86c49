"""The per-line rules: each a small function over one job (rules over several lines are in
``cross_rules.py``, findings for lines cron rejects in ``syntax.py``).

This module is their table (the order findings are listed in, each rule's summary and fix);
the checks live with others that judge the same thing: ``schedule_rules`` (when it runs),
``work_rules`` (what the work does), ``output_rules``, ``percent_rule``, ``handover`` and
``shell`` (how the shell reads the command).

Rules look at the command *text* only (never run it) and at the schedule's expanded fields.
They are deliberately cheap — substring tests guard every regular expression — because
``analyze`` runs all of them over every line of a 100,000-line crontab in well under a second.
"""

from __future__ import annotations

from migrate_cron.analysis.finding import Rule, RuleId
from migrate_cron.analysis.handover import check_handover
from migrate_cron.analysis.output_rules import (
    check_output,
    check_partial,
    check_swallow,
    check_unseen,
)
from migrate_cron.analysis.percent_rule import check_percent
from migrate_cron.analysis.schedule_rules import (
    POLL_MINUTES,
    check_dst,
    check_minute_star,
    check_poll,
    check_reboot,
    check_sleep,
)
from migrate_cron.analysis.shell import SHELL_RULES
from migrate_cron.analysis.work_rules import check_batch, check_framework, check_http, check_lock
from migrate_cron.crontab.entry import Severity

PER_LINE: tuple[Rule, ...] = (
    Rule(
        RuleId.PERCENT_SPLIT,
        Severity.ERROR,
        "An unescaped % ends the command: cron passes the rest to it as standard input.",
        "write each % that belongs to the command as \\% (date +\\%F, $((RANDOM \\% 60))); "
        "keep a bare % only to give the command input",
        check_percent,
    ),
    Rule(
        RuleId.POLL,
        Severity.WARNING,
        f"Runs every {POLL_MINUTES} minutes or more often: a queue polled while mostly empty.",
        "enqueue a job when the work appears (in the code that creates it) and let workers "
        "pick it up at once",
        check_poll,
    ),
    Rule(
        RuleId.OVERLAP_LOCK,
        Severity.WARNING,
        "A lock file, flock, pidfile or run-one shows runs have overlapped before.",
        "drop the lock: in the queue each record is claimed by one worker under a lease; give "
        "this job concurrency 1 if it must never run twice at once",
        check_lock,
    ),
    Rule(
        RuleId.SLEEP_OFFSET,
        Severity.INFO,
        "A sleep before the command moves it off its slot: ordering or load spreading in disguise.",
        "if it waits for another job, enqueue it when that job succeeds; otherwise put the "
        "real time in the schedule",
        check_sleep,
    ),
    Rule(
        RuleId.OUTPUT_DISCARDED,
        Severity.WARNING,
        "Output is thrown away, so a failing run leaves no trace.",
        "remove the redirection: the worker keeps stdout/stderr and stores the tail with each "
        "failed attempt",
        check_output,
    ),
    Rule(
        RuleId.OUTPUT_UNSEEN,
        Severity.WARNING,
        'MAILTO="" makes cron discard what the command prints: output that is not redirected '
        "is never seen.",
        "redirect it to a log (>>FILE 2>&1) or set MAILTO; in the queue the worker keeps the "
        "output of every failed attempt",
        check_unseen,
    ),
    Rule(
        RuleId.REDIRECT_PARTIAL,
        Severity.INFO,
        "A redirection after `a && b` belongs to the last command only.",
        "wrap the list in braces to redirect all of it: { a && b; } >FILE 2>&1",
        check_partial,
    ),
    Rule(
        RuleId.ERRORS_SWALLOWED,
        Severity.WARNING,
        "The exit status is forced to success, so nobody (and no retry) ever sees a failure.",
        "remove '|| true' / 'exit 0': a non-zero exit is how the queue knows to retry",
        check_swallow,
    ),
    Rule(
        RuleId.FRAMEWORK_SCHEDULER,
        Severity.WARNING,
        "A framework scheduler runs every minute; the actual jobs are defined in the application.",
        "list the framework's scheduled tasks and migrate them one by one",
        check_framework,
    ),
    Rule(
        RuleId.BATCH_LIMIT,
        Severity.INFO,
        "A batch-size limit in the arguments caps throughput at limit × runs.",
        "enqueue one job per record (or per chunk) so workers drain any backlog at their pace",
        check_batch,
    ),
    Rule(
        RuleId.HTTP_NO_TIMEOUT,
        Severity.WARNING,
        "An HTTP call without a timeout can hang the job forever.",
        "add a timeout to the call (curl --max-time, wget --timeout)",
        check_http,
    ),
    Rule(
        RuleId.MINUTE_STAR,
        Severity.WARNING,
        "A bare * in the minute field runs the job every minute of the hours written.",
        "put the minute it should run at (0 for the top of the hour)",
        check_minute_star,
    ),
    Rule(
        RuleId.DST_WINDOW,
        Severity.WARNING,
        "A fixed-time job inside its timezone's DST change: skipped or repeated wall-clock time.",
        "move it outside the DST window or schedule it in UTC",
        check_dst,
    ),
    Rule(
        RuleId.REBOOT,
        Severity.INFO,
        "@reboot has no schedule: it cannot become a scheduled job.",
        "keep it on cron (or turn it into a systemd unit); nothing to migrate",
        check_reboot,
    ),
    Rule(
        RuleId.HAND_OVER,
        Severity.WARNING,
        "The job hands work to a third party or a customer; cron gives it no retry.",
        "schedule + enqueue: the scheduler enqueues one job per slot and workers retry it with "
        "backoff until it succeeds",
        check_handover,
    ),
    *SHELL_RULES,
)
