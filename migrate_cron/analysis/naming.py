"""Job names from what a line does, read from its shell tree.

A name is what a team types (``migrate-cron migrate invoices-export``) and what the queue stores
as the job's kind, so it says what the job does: wrappers are stepped over
(:mod:`migrate_cron.analysis.wrappers`), then the name is the framework's sub-command
(``php artisan invoices:export`` → ``invoices-export``), else the script's basename
(``/srv/bin/rotate_logs.sh`` → ``rotate-logs``), with its first argument when that reads as a
sub-command (``rsnapshot hourly`` → ``rsnapshot-hourly``), else what a known tool acts on
(``find /var/log/app -delete`` → ``clean-app``, ``systemctl restart nginx`` →
``restart-nginx``, ``curl https://h/api/ping`` → ``ping``) — never from the crontab's file
name, never from a word that looks like a secret. Each name comes with the tokens that could
tell it from another line's (``unique_names`` uses them: ``rsync`` … ``hourly.0`` →
``copy-hourly0``); the words about programs and paths are in ``naming_words``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from migrate_cron.analysis.job import CronJob
from migrate_cron.analysis.naming_words import (
    DIR_NOISE,
    FRAMEWORK_RUNNERS,
    GENERIC_SCRIPTS,
    GENERIC_SUBCOMMANDS,
    RUNNER_PREFIX,
    VALUED_OPTIONS,
)
from migrate_cron.analysis.tree import Redirect, Script, Word, parse
from migrate_cron.analysis.work_calls import main_call
from migrate_cron.analysis.wrappers import INTERPRETERS, Unwrapped, basename

_STRIP_EXT = re.compile(
    r"\.(?:sh|bash|php|py|pl|rb|js|mjs|ts|lua|tcl|r|service|timer|jar|exe|cgi|csh|ksh|zsh)$",
    re.I,
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_SUBCOMMAND = re.compile(r"^[A-Za-z][A-Za-z0-9_:.-]{0,39}$")
_SECRET_KEYS = re.compile(r"(?:pass|secret|token|key|auth|cred|sig|hash|cookie)", re.I)
_HEXISH = re.compile(r"^[0-9a-fA-F-]{8,}$|^[A-Za-z0-9+/_=-]{24,}$")
MAX_LENGTH = 60


@dataclass(frozen=True, slots=True)
class Naming:
    """A line's name before collisions (``base``) and what could tell it from a line of the
    same base, most telling first (``tokens``)."""

    base: str
    tokens: tuple[str, ...]
    #: The verb part of a ``namespace:action`` sub-command (``invoices:upload-sftp`` →
    #: ``upload-sftp``), where what the job does is said.
    action: str = ""


def slug(text: str) -> str:
    """``HandleBackupRequestsJob`` → ``handle-backup-requests-job``; ``app:sync`` →
    ``app-sync``. A trailing number is kept on its word (``weekly.0`` → ``weekly0``), so a
    name never ends like a counter."""
    text = _CAMEL.sub("-", text)
    out = _NOT_SLUG.sub("-", text.lower()).strip("-")
    out = re.sub(r"-(\d+)$", r"\1", out)
    return out[:MAX_LENGTH].strip("-")


def _stem(word: str) -> str:
    name = basename(word)
    if _is_domain(name):
        return name.split(".", 1)[0]
    return _STRIP_EXT.sub("", name)


def _is_domain(word: str) -> bool:
    return bool(re.fullmatch(r"[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,6}", word.lower())) and not (
        _STRIP_EXT.search(word)
    )


def _resolve(word: Word, env: Mapping[str, str]) -> str:
    """A word with ``$NAME``/``${NAME}`` from the file's env lines put in (cron passes them to
    the shell as its environment); what stays unknown is left as written."""
    if word.literal or "$" not in word.raw:
        return word.value

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return env.get(name, match.group(0))

    text = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", value, word.raw)
    return text.strip("\"'")


@lru_cache(maxsize=65536)
def _naming(text: str, env_items: tuple[tuple[str, str], ...]) -> Naming | None:
    script = parse(text)
    found = _from_script(script, dict(env_items))
    if found is None and script.comment_only:
        # A command that is only a comment runs nothing; it is still named after its words.
        found = _from_script(parse(text.replace("#", "/")), dict(env_items))
    return found


def naming(text: str, env: Mapping[str, str]) -> Naming | None:
    """The base name and telling tokens of a command, or None when nothing in it says."""
    used = tuple(sorted((k, v) for k, v in env.items() if "$" + k in text or "${" + k in text))
    return _naming(text, used)


def call_name(argv: Sequence[str]) -> str:
    """The name one call of a line would give (for evidence about a later command)."""
    found = _from_argv(list(argv), Unwrapped((), tuple(argv), ())) if argv else None
    return (found.action or found.base) if found is not None else ""


def _from_script(script: Script, env: Mapping[str, str]) -> Naming | None:
    found = main_call(script)
    if found is None:
        return _output_name(script)
    call, inner = found
    words = [(_resolve(w, env), w) for w in inner.words]
    argv = [v for v, _ in words]
    naming = _from_argv(argv, inner)
    if naming is None:
        return None
    if basename(argv[0]) == "touch":
        operand = next((a for a in argv[1:] if not a.startswith("-")), None)
        if operand:
            return Naming(_heartbeat(operand), _dir_tokens(operand))
    if basename(argv[0]) in ("date", "echo", "printf", "touch", "true", "cat", ":"):
        target = _output_target(call.chain)
        if target:
            stamps = basename(argv[0]) == "date" or any("date" in w.raw for w in call.words)
            if stamps:
                return Naming(_heartbeat(target), naming.tokens + _dir_tokens(target))
            stem = slug(_stem(target).lstrip(".").split(".")[0]) or "file"
            empty = all(not a.strip() for a in argv[1:])
            verb = "empty" if empty and _truncates(call.chain) else "write"
            return Naming(f"{verb}-{stem}", naming.tokens + _dir_tokens(target))
    return naming


def _truncates(chain: Sequence[object]) -> bool:
    return any(isinstance(r, Redirect) and r.op in (">", ">|") for r in chain)


def _heartbeat(target: str) -> str:
    """A job that only stamps a file is that file's heartbeat."""
    stem = slug(_stem(target).lstrip(".").split(".")[0]) or "file"
    return stem if any(w in stem for w in ("heartbeat", "alive")) else f"{stem}-heartbeat"


def _output_name(script: Script) -> Naming | None:
    for call in script.top:
        target = _output_target(call.chain)
        if target:
            return Naming(_heartbeat(target), _dir_tokens(target))
    return None


def _output_target(chain: Sequence[object]) -> str | None:
    for redirect in chain:
        if (
            isinstance(redirect, Redirect)
            and redirect.op in (">", ">>", ">|")
            and redirect.fd in (None, 1)
            and not redirect.target.startswith("/dev/")
        ):
            return redirect.target
    return None


def _from_argv(argv: list[str], inner: Unwrapped) -> Naming | None:
    if not argv:
        return None
    prog = _stem(argv[0])
    rest = argv[1:]
    lowered = prog.lower()
    if lowered in INTERPRETERS or re.fullmatch(r"(python|php|ruby|perl|node)[0-9.]*", lowered):
        script, rest = _interpreted(rest)
        if script is None:
            return Naming(slug(prog), _tokens(rest))
        if script.startswith("-m:"):
            return _named(script[3:].replace(".", "-"), rest)
        return _from_argv([script, *rest], inner)
    if lowered == "bundle" and rest[:1] == ["exec"]:
        return _from_argv(rest[1:], inner)
    if lowered in FRAMEWORK_RUNNERS or lowered.endswith("-console"):
        positional = subcommands(rest)
        if positional:
            sub = positional[0]
            where = _dir_tokens(argv[0])
            if sub.lower() in GENERIC_SUBCOMMANDS and len(positional) > 1:
                return Naming(slug(f"{sub}-{positional[1]}"), _tokens(rest, skip=sub) + where)
            if sub.lower() in ("cron", "event", "run"):  # vocabulary: subcommands, not modes
                return Naming(slug(f"{prog}-{sub}"), _tokens(rest, skip=sub) + where)
            action = slug(sub.rsplit(":", 1)[-1]) if ":" in sub else ""
            return Naming(slug(sub), _tokens(rest, skip=sub) + where, action)
    special = _tool(lowered, argv)
    if special is not None:
        return special
    if lowered in GENERIC_SCRIPTS or RUNNER_PREFIX.match(lowered):
        positional = [w for w in rest if not w.startswith("-") and _SUBCOMMAND.match(w)]
        if positional:
            return Naming(
                slug(positional[0]), _tokens(rest, skip=positional[0]) + _dir_tokens(argv[0])
            )
        parent = _parent(argv[0])
        if parent:
            return Naming(slug(parent), _tokens(rest))
    return _named(prog, rest, argv[0])


def subcommands(rest: list[str]) -> list[str]:
    """A runner's positional words, option values and ``@alias`` left out; a word with ``:``
    (``app:sync``) first, as the sub-command of every such runner is spelt."""
    found: list[str] = []
    skip = False
    for word in rest:
        if skip:
            skip = False
            continue
        if word.startswith("-"):
            skip = word in VALUED_OPTIONS
            continue
        if word.startswith("@") or "/" in word or "=" in word:
            continue
        found.append(word)
    colon = [w for w in found if ":" in w]
    return colon[:1] + [w for w in found if w not in colon[:1]] if colon else found


def _named(prog: str, rest: list[str], path: str = "") -> Naming:
    """A program or script by its own name, with its first argument when that reads as a
    sub-command (``rsnapshot hourly``, ``backup.sh mysql``)."""
    first = None
    for i, word in enumerate(rest):
        if word.startswith("-"):
            continue
        if i > 0 and re.fullmatch(r"-[A-Za-z]", rest[i - 1]):
            continue  # most likely the option's value (pg_dumpall -U postgres)
        first = word
        break
    tokens = _tokens(rest) + _dir_tokens(path)
    if first is not None and _SUBCOMMAND.match(first) and not _secret(first):
        return Naming(slug(f"{prog}-{first}"), _tokens(rest, skip=first) + _dir_tokens(path))
    return Naming(slug(prog), tokens)


def _interpreted(rest: list[str]) -> tuple[str | None, list[str]]:
    """The script an interpreter runs (``-m module`` as ``-m:module``) and its arguments."""
    i = 0
    while i < len(rest):
        word = rest[i]
        if word == "-m" and i + 1 < len(rest):
            return "-m:" + rest[i + 1], rest[i + 2 :]
        if word == "-f" and i + 1 < len(rest):
            return rest[i + 1], rest[i + 2 :]
        if word in ("-c", "-r", "-e"):
            return None, rest[i + 2 :]
        if word.startswith("-"):
            i += 2 if word in ("-d", "-W", "-X", "-I", "-n", "-cp", "-classpath") else 1
            continue
        return word, rest[i + 1 :]
    return None, []


def _tool(prog: str, argv: list[str]) -> Naming | None:
    """Tools whose name says nothing: named after what they act on."""
    rest = argv[1:]
    operands = [w for w in rest if not w.startswith("-")]
    if prog in ("systemctl", "service", "supervisorctl", "sv", "rc-service"):
        if prog == "service" and len(operands) >= 2:
            action, unit = operands[1], operands[0]
        elif len(operands) >= 2:
            action, unit = operands[0], operands[1]
        else:
            return None
        return Naming(slug(f"{action}-{_stem(unit)}"), tuple(slug(_stem(u)) for u in operands[2:]))
    if prog in ("rsync", "scp", "rclone", "cp", "unison", "mv"):
        paths = [w for w in operands if w not in ("copy", "sync", "move")]
        if paths:
            source = paths[0].rstrip("/")
            remote = ":" in source.split("/", 1)[0]
            what = _stem(source.split(":", 1)[-1] if remote else source) or _parent(source)
            return Naming(
                slug(f"copy-{what}"), tuple(slug(_stem(p)) for p in paths[1:] if _stem(p))
            )
        return None
    if prog == "find":
        where = next((w for w in rest if w.startswith("/") or w.startswith(".")), "")
        deletes = "-delete" in rest or ("-exec" in rest and any(basename(w) == "rm" for w in rest))
        verb = "clean" if deletes else "find"
        place = slug(_stem(where)) or slug(_parent(where) or "files")
        extra = "-empty-dirs" if "-empty" in rest and "d" in _option(rest, "-type") else ""
        return Naming(f"{verb}-{place}{extra}", _tokens(rest))
    if prog in ("psql", "mysql", "mariadb", "sqlite3", "clickhouse-client"):
        sql = _option(rest, "-c") or _option(rest, "-e") or _option(rest, "--command")
        database = _option(rest, "-d") or _option(rest, "--dbname") or _option(rest, "-D")
        verb = sql.split()[0] if sql.split() else ""
        if verb or database:
            return Naming(slug("-".join(w for w in (verb, database) if w)), ())
        return None
    if prog in ("mail", "mailx", "s-nail", "mutt"):
        # Who it mails, never the subject (a quoted string may hold anything).
        to = next((w for w in operands if "@" in w), None)
        return Naming(slug(f"mail-{to.split('@', 1)[0]}"), ()) if to else None
    if prog in ("rm", "unlink", "shred"):
        where = next((w for w in operands), "")
        return Naming(slug(f"clean-{_stem(where)}"), ()) if where else None
    if prog in ("tar", "zip", "7z") and operands:
        sources = [w for w in operands[1:] if not w.startswith("-")] or operands
        return Naming(slug(f"archive-{_stem(sources[-1]) or 'files'}"), ())
    if prog in ("du", "df"):
        where = next((w for w in operands), "")
        return Naming(slug(f"{_stem(where) or 'disk'}-disk-usage"), ())
    if prog in ("curl", "wget", "lynx", "links", "get", "http", "xh"):
        url = next((w for w in rest if "://" in w), None) or next(
            (w for w in operands if "." in w or "/" in w), None
        )
        if url is None:
            return None
        host, _, path = url.split("://", 1)[-1].partition("/")
        host = host.rsplit("@", 1)[-1].split(":", 1)[0]
        segments = [_stem(s) for s in path.split("?", 1)[0].split("/") if s and not _secret(s)]
        useful = [s for s in segments if s.lower() not in GENERIC_SCRIPTS | DIR_NOISE]
        label = host.split(".")[0] if host else ""
        if useful:
            return Naming(slug(useful[-1]), tuple(slug(s) for s in [label, *useful[:-1]] if s))
        return Naming(slug(f"{label}-{segments[-1]}" if segments else label or "http"), ())
    if prog == "run-parts":
        directory = (operands[-1] if operands else "").rstrip("/")
        last = basename(directory)
        if "." in last:
            return Naming(slug(last), ())
        parent = basename(directory.rsplit("/", 1)[0]) if "/" in directory else ""
        return Naming(slug(f"{parent}-{last}" if parent else last), ())
    return None


def _option(words: list[str], flag: str) -> str:
    if flag in words:
        i = words.index(flag)
        return words[i + 1] if i + 1 < len(words) else ""
    return ""


def _parent(path: str) -> str:
    parts = [p for p in path.rstrip("/").split("/")[:-1] if p and p not in (".", "..", "~")]
    for part in reversed(parts):
        if part.lower() not in DIR_NOISE and "$" not in part and "#" not in part:
            return _stem(part)
    return ""


def _secret(word: str) -> bool:
    """A key, a UUID, a token: digits and letters in a long run that reads as no word."""
    return (
        bool(_HEXISH.match(word))
        and any(ch.isdigit() for ch in word)
        and any(ch.isalpha() for ch in word)
    ) or (len(word) >= 20 and sum(ch.isdigit() for ch in word) >= 4)


def _tokens(rest: list[str], skip: str | None = None) -> tuple[str, ...]:
    """What could tell two lines of one base apart: arguments, then options' values (a
    secret's value never), in the order written."""
    positional: list[str] = []
    options: list[str] = []
    skipped = False
    i = 0
    while i < len(rest):
        word = rest[i]
        i += 1
        if word == skip and not skipped:
            skipped = True
            continue
        if word.startswith("-") and len(word) > 1:
            key, _, value = word.lstrip("-").partition("=")
            if _SECRET_KEYS.search(key):
                continue
            if not value or value.lower() in ("yes", "no", "true", "false", "1", "0", "on", "off"):
                options.append(slug(key))
            elif not _secret(value):
                options.append(slug(_stem(value)) if "/" in value else slug(value))
            continue
        if "://" in word:
            path = word.split("://", 1)[1].split("?", 1)[0]
            positional.extend(slug(_stem(s)) for s in path.split("/")[1:] if s)
            continue
        if "=" in word or _secret(word) or "$" in word or "`" in word:
            continue
        positional.append(slug(_stem(word)) if "/" in word else slug(word))
    return tuple(t for t in (*positional, *options) if t)


def _dir_tokens(path: str) -> tuple[str, ...]:
    parts = [p for p in path.split("/")[:-1] if p and p.lower() not in DIR_NOISE]
    return tuple(slug(_stem(p)) for p in parts if "$" not in p and slug(_stem(p)))


def job_base_name(job: CronJob, action: bool = False) -> str:
    """The line's name before collisions are told apart: what its command says it does
    (``action``: the verb part of a ``namespace:action`` sub-command, else the name)."""
    found = naming(job.line.shell_command or "", job.line.env)
    if found is None:
        return ""
    return (found.action or found.base) if action else found.base
