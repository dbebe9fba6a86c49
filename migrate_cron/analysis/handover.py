"""Whether a job hands work to someone off the host (mail, an HTTP body, an upload, a message
queue, or a name that says it sends): the evidence, and the rule that reports it. Cron never
retries such a run, which is why the classifier weighs it.
"""

from __future__ import annotations

import re

from migrate_cron.analysis.finding import Context, Hit
from migrate_cron.analysis.job import CronJob
from migrate_cron.analysis.naming import call_name, job_base_name
from migrate_cron.analysis.work_calls import main_call, work_calls
from migrate_cron.analysis.wrappers import basename

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
    base = job_base_name(job)
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
    names = [base, job_base_name(job, action=True)] + [
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


def check_handover(job: CronJob, ctx: Context) -> Hit | None:
    evidence = handover_evidence(job)
    if evidence is None:
        return None
    return Hit(
        f"hands work over to someone else ({evidence}): a failed run is lost until a later run "
        "happens to pick it up, and cron never retries it"
    )
