"""Findings and the rules that produce them.

A rule is a small function plus four facts a reader needs: an id (stable, used in ``--json``
and for suppressions), a severity, a one-line explanation of why the pattern matters when moving
off cron, and a concrete fix. The function only decides *whether* a line matches and says what
it saw on that line; everything else comes from the rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from migrate_cron.crontab.entry import Severity

if TYPE_CHECKING:
    from migrate_cron.analysis.job import CronJob
    from migrate_cron.analysis.shellcheck import Verdicts

__all__ = ["Context", "Finding", "Hit", "Rule", "Severity"]


class RuleId(StrEnum):
    """Every analysis rule, by the id ``analyze --json`` prints (syntax findings are
    ``syntax/CODE``, from the parser's problem codes)."""

    POLL = "poll"
    OVERLAP_LOCK = "overlap-lock"
    SLEEP_OFFSET = "sleep-offset"
    OUTPUT_DISCARDED = "output-discarded"
    ERRORS_SWALLOWED = "errors-swallowed"
    FRAMEWORK_SCHEDULER = "framework-scheduler"
    BATCH_LIMIT = "batch-limit"
    HTTP_NO_TIMEOUT = "http-no-timeout"
    DST_WINDOW = "dst-window"
    REBOOT = "reboot"
    HAND_OVER = "hand-over"
    HIDDEN_ORDERING = "hidden-ordering"
    DUPLICATE_HOST = "duplicate-host"
    LONGER_THAN_INTERVAL = "longer-than-interval"
    PERCENT_SPLIT = "percent-split"
    BASHISM = "bashism"
    PIPE_STATUS = "pipe-status"
    DISTRO_GUARD = "distro-guard"
    PLACEHOLDER = "placeholder"
    UNSET_VARIABLE = "unset-variable"
    OUTPUT_UNSEEN = "output-unseen"
    REDIRECT_PARTIAL = "redirect-partial"
    REDIRECT_ORDER = "redirect-order"
    BACKGROUND = "background"
    COMMENT_COMMAND = "comment-command"
    SLEEP_OPERANDS = "sleep-operands"
    SCRIPT_NAMED_PROGRAM = "script-named-program"
    MINUTE_STAR = "minute-star"
    SHELL_SYNTAX = "shell-syntax"
    SHELLCHECK_MISSING = "shellcheck-missing"


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing to act on, at ``file:line`` (``column``/``field`` for syntax errors); line 0
    means the whole file (cron ignores it)."""

    rule: str
    severity: Severity
    file: str
    line: int
    message: str
    fix: str
    host: str | None = None
    column: int | None = None
    field: str | None = None

    @property
    def location(self) -> str:
        """``host:file:line:column``; a finding about a whole file (line 0) is just its path."""
        prefix = f"{self.host}:" if self.host else ""
        if self.line == 0:
            return f"{prefix}{self.file}"
        column = f":{self.column}" if self.column else ""
        return f"{prefix}{self.file}:{self.line}{column}"


@dataclass(frozen=True, slots=True)
class Hit:
    """What a rule saw on one line; ``fix`` overrides the rule's generic fix when specific."""

    message: str
    fix: str | None = None
    #: Overrides the rule's severity when the line shows how sure the finding is.
    severity: Severity | None = None


@dataclass(frozen=True)
class Context:
    """What rules may know besides the line: the analysis time (DST dates are shown for
    ``now``'s year, so output is reproducible with ``--now``)."""

    now: datetime
    #: ShellCheck's verdicts on the file's commands (None: not run).
    shell: Verdicts | None = None
    #: What /bin/sh is where the file runs (a ShellCheck dialect: dash, bash, busybox).
    bin_sh: str = "dash"


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    explanation: str
    fix: str
    check: Callable[[CronJob, Context], Hit | None] | None = None

    def finding(self, job: CronJob, hit: Hit) -> Finding:
        return Finding(
            rule=self.id,
            severity=hit.severity or self.severity,
            file=job.line.file,
            line=job.line.number,
            message=hit.message,
            fix=hit.fix or self.fix,
            host=job.host,
        )
