"""The per-line rules: each a small function over one job (rules over several lines are in
``cross_rules.py``, findings for lines cron rejects in ``syntax.py``).

This module is their table (the order findings are listed in, each rule's summary and fix);
the checks live with others that judge the same thing: ``schedule_rules`` (when it runs),
``work_rules`` (what the work does), ``output_rules``, ``percent_rule``, ``handover`` and
``shell_rules`` (how the shell reads the command).

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
from migrate_cron.analysis.shell_rules import (
    check_background,
    check_bashism,
    check_comment_command,
    check_guard,
    check_pipe_status,
    check_placeholder,
    check_redirect_order,
    check_script_named_program,
    check_sleep_operands,
    check_syntax,
    check_unset,
)
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
    Rule(
        RuleId.BASHISM,
        Severity.ERROR,
        "Bash syntax in a line cron runs with /bin/sh (dash on Debian/Ubuntu): it fails or "
        "does something else.",
        "write it for sh (`. FILE` for `source`, `>>FILE 2>&1` for `&>>`, `[ ]` for `[[ ]]`), or "
        "set SHELL=/bin/bash above the line",
        check_bashism,
    ),
    Rule(
        RuleId.REDIRECT_ORDER,
        Severity.WARNING,
        "Redirections apply left to right: `2>&1 >FILE` leaves stderr where stdout was.",
        "put 2>&1 last (>>FILE 2>&1) so both streams reach the file",
        check_redirect_order,
    ),
    Rule(
        RuleId.SHELL_SYNTAX,
        Severity.ERROR,
        "The shell cannot parse the command: the line has never run.",
        "fix the quoting or the stray operator ShellCheck points at",
        check_syntax,
    ),
    Rule(
        RuleId.BACKGROUND,
        Severity.WARNING,
        "A & sends the job to the background: cron, and a queue's worker, see it succeed at once.",
        "drop the &: a job the queue runs must finish in the foreground for its outcome to count",
        check_background,
    ),
    Rule(
        RuleId.COMMENT_COMMAND,
        Severity.ERROR,
        "The command is a shell comment: the line runs nothing.",
        "replace the template token with the real path, or delete the line",
        check_comment_command,
    ),
    Rule(
        RuleId.SLEEP_OPERANDS,
        Severity.ERROR,
        "`sleep N SCRIPT` gives the script to sleep: the script never runs.",
        "separate them: sleep N; SCRIPT",
        check_sleep_operands,
    ),
    Rule(
        RuleId.SCRIPT_NAMED_PROGRAM,
        Severity.ERROR,
        "An interpreter given a program's name reads a file of that name, not the program.",
        "drop the extra word: `bash php x` → `php x`",
        check_script_named_program,
    ),
    Rule(
        RuleId.PIPE_STATUS,
        Severity.WARNING,
        "A pipeline's exit status is its last command's: a failure before the pipe is hidden.",
        "run it under bash with `set -o pipefail`, or drop the pipe: the worker keeps the "
        "output and mails or stores it",
        check_pipe_status,
    ),
    Rule(
        RuleId.DISTRO_GUARD,
        Severity.INFO,
        "The line only runs where anacron or systemd is absent: a distribution's fallback.",
        "leave it on cron (or drop it where anacron/systemd handles the work); nothing to migrate",
        check_guard,
    ),
    Rule(
        RuleId.PLACEHOLDER,
        Severity.ERROR,
        "An @name@ token left from a package template: the command has never worked.",
        "replace the token with the real path or value (what the package's build would have "
        "put there)",
        check_placeholder,
    ),
    Rule(
        RuleId.UNSET_VARIABLE,
        Severity.WARNING,
        "A variable the crontab never sets: cron's environment is almost empty, so it expands "
        "to nothing.",
        "set it above the line (NAME=value) or inside the script; a job run from the queue gets "
        "the environment its registry entry gives it",
        check_unset,
    ),
)
