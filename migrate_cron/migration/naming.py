"""Readable, stable job names derived from crontab commands.

A name is what a team types (``migrate-cron migrate invoices-export``) and what the queue stores
as the job's kind, so it must read like the job and never change by itself. Derivation is a pure
function of the command text: wrappers (``cd X &&``, ``flock``, ``timeout``, ``nice``, env
assignments), interpreters (``php``, ``python3``…) and framework runners (``artisan``,
``manage.py``, ``bin/console``…) are skipped, and the first few meaningful words are kept, e.g.
``cd /srv/shop && php artisan invoices:export >> /var/log/x 2>&1`` → ``invoices-export``.

Names only use ``[a-z0-9-]``, so they are safe in a shell, a crontab line, TOML keys and SQL
values without quoting (they are quoted anyway). Uniqueness is by suffix (``-2``, ``-3``) in
file order; stability across re-runs comes from the registry writer, which keeps the name of a
job it recognises and never renames.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

MAX_WORDS = 3
MAX_LENGTH = 48

_SKIP_SEGMENT = frozenset(
    {"cd", "sleep", "test", "[", "[[", "true", ":", "export", "source", ".", "umask", "set"}
)
# Wrappers and how many non-option arguments they take before the real command.
_WRAPPERS = {
    "flock": 1,
    "timeout": 1,
    "nice": 0,
    "ionice": 0,
    "nohup": 0,
    "exec": 0,
    "env": 0,
    "chronic": 0,
    "run-one": 0,
    "setlock": 1,
    "lockrun": 0,
    "sudo": 0,
    "time": 0,
    "xargs": 0,
    "cronic": 0,
}
_OPTIONS_WITH_VALUE = {
    "flock": {"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"},
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "--class", "-n", "--classdata", "-p", "-t"},
    "sudo": {"-u", "--user", "-g", "--group"},
}
_INTERPRETERS = re.compile(
    r"^(php[0-9.]*|python[0-9.]*|pypy[0-9.]*|ruby[0-9.]*|node|nodejs|perl[0-9.]*|bash|sh|dash|"
    r"zsh|ksh|java|bundle|npm|yarn|pnpm|npx|bun|deno|uv|poetry|pipenv|dotnet|go|"
    r"docker|docker-compose|podman|kubectl)$"
)
_INTERPRETER_VERBS = frozenset({"exec", "run", "-m", "-jar", "compose", "-f"})
_RUNNERS = re.compile(
    r"^(artisan|manage\.py|console|rake|rails|wp|wp-cli\.phar|drush|yii|cake|craft|"
    r"magento|n98-magerun2?(\.phar)?|symfony|flask|django-admin)$"
)
_EXTENSIONS = re.compile(r"\.(sh|bash|php|py|rb|pl|js|mjs|ts|phar|jar|cgi)$")
_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9_:.\-]*$")
_REDIRECT = re.compile(r"^[0-9]*(>>?|<<?|>&|&>>?)")
_OPERATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "|&", "(", ")"})


def derive_name(command: str) -> str:
    """The readable base name for a command (not yet made unique); ``job`` when none."""
    words = _words(command)
    slug = "-".join(_slug(w) for w in words if _slug(w))
    slug = slug[:MAX_LENGTH].rstrip("-")
    return slug or "job"


def unique_name(base: str, taken: Iterable[str]) -> str:
    """``base``, or ``base-2``, ``base-3``… — the first one not in ``taken``."""
    used = set(taken)
    if base not in used:
        return base
    n = 2
    while f"{base}-{n}" in used:
        n += 1
    return f"{base}-{n}"


def _slug(word: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", word.lower()).strip("-")


def _words(command: str) -> list[str]:
    for segment in _segments(command):
        words = _segment_words(segment)
        if words:
            return words
    return []


def _segments(command: str) -> list[list[str]]:
    """The simple commands of a shell line, split on ``&& || ; |`` outside quotes."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: cron would fail too; name it from plain words
        tokens = command.split()
    segments: list[list[str]] = [[]]
    for tok in tokens:
        if tok in _OPERATORS:
            segments.append([])
        else:
            segments[-1].append(tok)
    return [s for s in segments if s]


def _segment_words(tokens: list[str]) -> list[str]:
    tokens = _strip_redirections(tokens)
    i = 0
    while i < len(tokens) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[i]):
        i += 1  # VAR=value prefixes
    if i >= len(tokens) or _base(tokens[i]) in _SKIP_SEGMENT:
        return []
    i = _skip_wrappers(tokens, i)
    if i >= len(tokens):
        return []
    program = _base(tokens[i])
    i += 1
    words: list[str] = []
    if _INTERPRETERS.match(program):
        while i < len(tokens) and (tokens[i].startswith("-") or tokens[i] in _INTERPRETER_VERBS):
            i += 1 + (tokens[i] in ("-f", "-c") and i + 1 < len(tokens))
        if i < len(tokens):
            program = _base(tokens[i])
            i += 1
        else:
            return [program]
    if _RUNNERS.match(program):
        program = ""
    else:
        words.append(_EXTENSIONS.sub("", program))
    words.extend(_arguments(tokens[i:], MAX_WORDS - len(words)))
    return [w for w in words if w]


def _skip_wrappers(tokens: list[str], i: int) -> int:
    while i < len(tokens):
        name = _base(tokens[i])
        if name not in _WRAPPERS:
            return i
        takes = _WRAPPERS[name]
        with_value = _OPTIONS_WITH_VALUE.get(name, set())
        i += 1
        while i < len(tokens) and (tokens[i].startswith("-") or "=" in tokens[i]):
            i += 1 + (tokens[i] in with_value)
        i += takes
    return i


def _arguments(tokens: list[str], room: int) -> list[str]:
    out: list[str] = []
    for tok in tokens:
        if len(out) >= room:
            break
        if tok.startswith("--") and "=" not in tok and _WORD.match(tok[2:]):
            out.append(tok[2:])
        elif tok.startswith("-"):
            continue
        elif "://" in tok:
            out.extend(_url_words(tok)[: room - len(out)])
        elif _WORD.match(tok) and not re.fullmatch(r"[0-9.:\-]+", tok):
            out.append(_EXTENSIONS.sub("", tok))
    return out


def _url_words(url: str) -> list[str]:
    path = url.split("://", 1)[1].split("?", 1)[0]
    parts = [p for p in path.split("/")[1:] if _WORD.match(p)]
    return parts[-2:]


def _strip_redirections(tokens: list[str]) -> list[str]:
    out: list[str] = []
    skip_next = False
    for tok in tokens:
        if skip_next:
            skip_next = False
            continue
        m = _REDIRECT.match(tok)
        if m:
            skip_next = m.end() == len(tok)  # `> file` with the target in the next token
            continue
        out.append(tok)
    return out


def _base(token: str) -> str:
    return token.rsplit("/", 1)[-1]
