"""What to do with each job: move it to the queue, let a scheduler enqueue it, or keep it.

* ``queue`` — work that appears *between* runs (pollers): enqueue it where it appears.
* ``schedule+enqueue`` — business runs at fixed times (invoices, exports, hand-overs): the
  scheduler enqueues one job per slot, workers run it with retries.
* ``keep`` — maintenance, reports, @reboot, the framework's own scheduler: cron is fine.

Plus the missed-run policy the scheduler should use for it, and the four sentences from
"From cron jobs to queues": two or more true means the line should move.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from migrate_cron.analysis.finding import Finding, RuleId
from migrate_cron.analysis.handover import handover_words
from migrate_cron.analysis.job import CronJob
from migrate_cron.analysis.schedule_rules import every_minutes
from migrate_cron.crontab.entry import Severity
from migrate_cron.vocabulary import Policy


class Recommendation(StrEnum):
    QUEUE = "queue"
    SCHEDULE_ENQUEUE = "schedule+enqueue"
    KEEP = "keep"


#: Which ``migrate --to`` each recommendation means (the words are the same in ``analyze``,
#: ``plan`` and ``migrate``): the modes, the first one the one ``plan`` writes, and one sentence.
MIGRATE_TO: dict[Recommendation, tuple[tuple[str, ...], str]] = {
    Recommendation.QUEUE: (
        ("enqueue",),
        "`migrate NAME --to enqueue` now (workers run it, with retries), then enqueue from the "
        "code where the work appears and drop the line",
    ),
    Recommendation.SCHEDULE_ENQUEUE: (
        ("enqueue", "scheduler"),
        "`migrate NAME --to enqueue` (cron keeps the schedule and only enqueues) or `--to "
        "scheduler` (migrate-cron's scheduler owns it, with the missed-run policy)",
    ),
    Recommendation.KEEP: ((), "nothing to migrate: cron is right for it"),
}


@dataclass(frozen=True, slots=True)
class Sentence:
    id: str
    text: str
    true: bool
    why: str


@dataclass(frozen=True, slots=True)
class Classification:
    recommendation: Recommendation
    reason: str
    policy: Policy
    policy_reason: str
    sentences: tuple[Sentence, ...]
    handover: tuple[str, ...]

    @property
    def true_sentences(self) -> int:
        return sum(1 for s in self.sentences if s.true)

    @property
    def should_move(self) -> bool:
        return self.true_sentences >= 2


SENTENCES = (
    ("polls-idle", "It runs every few minutes and usually does nothing."),
    ("overlaps", "It overlaps when it runs long."),
    ("user-waits", "The user waits for the next run."),
    ("lost-on-failure", "If it fails once, the work is lost."),
)
FEW_MINUTES = 15

# Only whether they match matters (never where or what), so the words are grouped by their
# first letter, and a word boundary is checked after that letter (``g(?<!\wg)c`` is ``\bgc``):
# a pattern that starts with a literal lets the regex engine skip to the positions that can
# match instead of trying every alternative everywhere (twice as fast on real commands).
_MAINTENANCE = re.compile(
    r"a(?:pt)|b(?:ackup|org)|c(?:ache|ertbot|lean)|d(?:ump|uplicity)|f(?:strim)|"
    r"g(?<!\wg)c\b|h(?:ousekeep)|l(?:ogwatch)|n(?:tpdate)|o(?:ptimi[sz]e)|p(?:rune|urge)|"
    r"r(?:otate|eindex|enew|eport|snapshot|estic)|s(?:itemap|tats|crub)|"
    r"t(?:mpwatch|mpreaper)|u(?:pdatedb)|v(?:acuum)|/tmp\b|-delete\b"
)
_BACKUP = re.compile(r"backup|dump|rsnapshot|borg|restic|duplicity|snapshot")
_PER_PERIOD = re.compile(
    r"\$\(date|`date|yesterday|--date\b|--day\b|--month\b|--period\b|--since\b|--for[-=]|"
    r"d(?<!\wd)aily-|m(?<!\wm)onthly-|%y|%m|%d"
)
_USER_FACING = re.compile(
    r"queue|pending|process|orders?\b|notif|mail|send|import|webhook|thumbnail|resize|"
    r"convert|index|search"
)


@dataclass(frozen=True, slots=True)
class Signals:
    """Everything the verdict depends on; few distinct values, so verdicts are cached."""

    is_reboot: bool
    gap: float | None
    rules: frozenset[str]
    handover: tuple[str, ...]
    user_facing: bool
    per_period: bool
    backup: bool
    maintenance: bool


def signals_of(job: CronJob, findings: Sequence[Finding]) -> Signals:
    """The inputs of the verdict. Text tests the decision cannot reach are left False, so
    equal decisions share one cached verdict and cost no regular expression."""
    text = job.command.lower
    gap = job.cadence.typical_gap if job.cadence else None
    # An info says what a line is, never what to do with it: only warnings and errors count.
    rules = frozenset(f.rule for f in findings if f.severity is not Severity.INFO)
    handover = handover_words(job)
    decided = job.is_reboot or RuleId.FRAMEWORK_SCHEDULER in rules
    user_facing = (
        not decided
        and gap is not None
        and gap <= 60
        and not handover
        and bool(_USER_FACING.search(text))
    )
    per_period = not decided and bool(handover or rules) and bool(_PER_PERIOD.search(text))
    keep_branch = not decided and not handover and RuleId.POLL not in rules
    backup = keep_branch and bool(_BACKUP.search(text))
    maintenance = keep_branch and not backup and bool(_MAINTENANCE.search(text))
    return Signals(
        is_reboot=job.is_reboot,
        gap=gap,
        rules=rules,
        handover=handover,
        user_facing=user_facing,
        per_period=per_period,
        backup=backup,
        maintenance=maintenance,
    )


def classify(job: CronJob, findings: Sequence[Finding]) -> Classification:
    return verdict_for(signals_of(job, findings))


@lru_cache(maxsize=65536)
def verdict_for(sig: Signals) -> Classification:
    rules = sig.rules
    handover = sig.handover
    sentences = _sentences(sig)
    true_count = sum(1 for s in sentences if s.true)
    gap = sig.gap
    frequent = gap is not None and gap <= FEW_MINUTES

    def result(rec: Recommendation, why: str, policy: Policy, policy_why: str) -> Classification:
        return Classification(rec, why, policy, policy_why, sentences, handover)

    if sig.is_reboot:
        return result(
            Recommendation.KEEP,
            "@reboot runs when cron starts and has no schedule to move",
            Policy.SKIP,
            "nothing to miss: it runs at boot",
        )
    if RuleId.FRAMEWORK_SCHEDULER in rules:
        return result(
            Recommendation.KEEP,
            "it is the framework's own scheduler: migrate the tasks it runs, then remove it",
            Policy.SKIP,
            "it runs every minute; the next minute catches up",
        )
    if RuleId.POLL in rules or (frequent and (handover or sig.user_facing)):
        every = every_minutes(gap) if gap else "often"
        return result(
            Recommendation.QUEUE,
            f"work appears between runs ({every}): enqueue it where it appears, workers "
            "start at once",
            Policy.SKIP,
            "until it moves, a missed poll is covered by the next one",
        )
    if handover or true_count >= 2:
        why = (
            f"a business run at fixed times that hands work over ({', '.join(handover[:3])})"
            if handover
            else f"{true_count} of the four sentences are true"
        )
        if sig.per_period:
            return result(
                Recommendation.SCHEDULE_ENQUEUE,
                why + ": the scheduler enqueues each slot, workers retry failures",
                Policy.BACKFILL,
                "each run covers its own period (it uses the date), so every missed slot "
                "must still run",
            )
        return result(
            Recommendation.SCHEDULE_ENQUEUE,
            why + ": the scheduler enqueues each slot, workers retry failures",
            Policy.RUN_ONCE,
            "one late run picks up everything the missed runs would have handed over",
        )
    if sig.backup:
        return result(
            Recommendation.KEEP,
            "a backup at fixed times: a schedule is exactly right",
            Policy.RUN_ONCE,
            "a missed backup should still happen once, as soon as possible",
        )
    if sig.maintenance:
        return result(
            Recommendation.KEEP,
            "maintenance or a report at fixed times: a schedule is exactly right",
            Policy.SKIP,
            "the next run does the same work; nothing is lost by skipping",
        )
    return result(
        Recommendation.KEEP,
        "runs at fixed times and nothing in it hands work over: cron is fine",
        Policy.SKIP,
        "nothing suggests a missed run loses work",
    )


def _sentences(sig: Signals) -> tuple[Sentence, ...]:
    gap = sig.gap
    rules = sig.rules
    handover = sig.handover
    frequent = gap is not None and gap <= FEW_MINUTES
    idle = Sentence(
        *SENTENCES[0],
        frequent,
        f"runs {every_minutes(gap)}" if frequent and gap else "runs at most a few times an hour",
    )
    overlap_rules = sorted(rules & {RuleId.OVERLAP_LOCK, RuleId.LONGER_THAN_INTERVAL})
    overlaps = Sentence(
        *SENTENCES[1],
        bool(overlap_rules),
        "findings: " + ", ".join(overlap_rules) if overlap_rules else "no lock, no long runs known",
    )
    waits_true = gap is not None and gap <= 60 and bool(handover or sig.user_facing)
    waits_true = waits_true or (RuleId.BATCH_LIMIT in rules and frequent)
    waits = Sentence(
        *SENTENCES[2],
        waits_true,
        (
            f"work for someone waits up to {gap:g} minutes"
            if waits_true and gap
            else "no sign that anyone waits for it"
        ),
    )
    swallowed = RuleId.ERRORS_SWALLOWED in rules
    lost_true = bool(handover) or swallowed
    parts = []
    if handover:
        parts.append("hands over: " + ", ".join(handover[:4]))
    if swallowed:
        parts.append("errors are swallowed")
    lost = Sentence(
        *SENTENCES[3], lost_true, "; ".join(parts) or "the next run redoes the same work"
    )
    return (idle, overlaps, waits, lost)
