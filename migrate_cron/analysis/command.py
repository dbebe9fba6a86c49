"""What a crontab command does, as far as its words tell: the program behind the wrappers,
a readable job name, and the lower-cased text the rules search.

Only a heuristic reading of the shell text — nothing is executed or expanded. Wrappers that
do not change what runs (``cd … &&``, ``flock``, ``nice``, ``timeout``, ``sleep N;``, env
assignments) are stepped over so that ``cd /srv && flock -n /tmp/x.lock php artisan
invoices:export`` is named ``invoices-export``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_SEPARATORS = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")
_WORD = re.compile(r"""'[^']*'|"[^"]*"|[^\s'"]+""")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = {
    "nice": 0,
    "ionice": 0,
    "nohup": 0,
    "timeout": 1,
    "flock": 1,
    "setlock": 1,
    "lckdo": 1,
    "chronic": 0,
    "run-one": 0,
    "run-this-one": 0,
    "sudo": 0,
    "exec": 0,
    "env": 0,
    "time": 0,
    "cronic": 0,
    "solo": 0,
    "cronitor": 2,  # cronitor exec MONITOR-KEY command…
    "/usr/bin/flock": 1,
    "/usr/bin/timeout": 1,
    "/usr/bin/nice": 0,
}
_INTERPRETERS = {"php", "python", "python3", "node", "ruby", "perl", "bash", "sh", "bundle", "npx"}
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_FRAMEWORK_TOOLS = {"artisan", "console", "drush", "wp", "magento", "manage.py", "rake", "occ"}


#: What ``read_command`` names a line whose words say nothing; the analysis then names it by
#: its schedule and file instead.
UNNAMED = "job"


@dataclass(frozen=True, slots=True)
class Command:
    text: str
    lower: str
    program: str  # basename of the program actually run, e.g. "php", "backup.sh"
    name: str  # a job name, e.g. "invoices-export"


@lru_cache(maxsize=131072)
def read_command(text: str) -> Command:
    lower = text.lower()
    words = _main_words(text)
    program = _basename(words[0]) if words else ""
    return Command(text=text, lower=lower, program=program, name=_name(words) or UNNAMED)


_SKIPPED = frozenset(("cd", "sleep", "test", "[", "true", ":", "export", "source", ".", "umask"))
#: Shell keywords and builtins: never what a line does, so never its name. A segment that
#: starts with ``then``/``do``/``else`` is read from the next word.
_KEYWORDS = frozenset(
    [
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "for",
        "while",
        "until",
        "do",
        "done",
        "case",
        "esac",
        "[[",
        "!",
        "{",
        "}",
        "echo",
        "printf",
        "command",
        "eval",
        "set",
        "unset",
        "read",
        "wait",
        "builtin",
        "false",
        "exit",
        "return",
        "shift",
        "trap",
        "ulimit",
        "local",
        "declare",
    ]
)
_OPENERS = frozenset(("then", "do", "else", "{", "!", "command", "builtin"))


def _main_words(text: str) -> list[str]:
    """The words of the first segment that is not ``cd``/``sleep``/``test``, wrappers removed."""
    segments = _SEPARATORS.split(text) if ("|" in text or "&&" in text or ";" in text) else [text]
    for segment in segments:
        words = _split(segment.strip("() "))
        while words and words[0] in _OPENERS:
            words = words[1:]
        if words and words[0].startswith("-"):
            continue  # `command -v x`, `! -e f`: a test, not the work
        while words and "=" in words[0] and _ASSIGNMENT.match(words[0]):
            words = words[1:]
        if words and (words[0] in _WRAPPERS or _basename(words[0]) in _WRAPPERS):
            words = _strip_wrappers(words)
            if len(words) == 1 and " " in words[0]:  # the command quoted as one word
                words = _split(words[0])
        if not words:
            continue
        if _basename(words[0]) in _SKIPPED or words[0] in _KEYWORDS:
            continue
        return words
    return []


def _split(segment: str) -> list[str]:
    """Shell words, quotes removed; an assignment keeps its quoted value in one word (so
    ``PW='secret' php x`` is an assignment and ``php x``, never a job called ``secret``)."""
    if "'" not in segment and '"' not in segment:
        return segment.split()
    try:
        return shell_words(segment)
    except ValueError:  # an unbalanced quote (cron cut the line at a %): best effort
        return [w.strip("'\"") for w in _WORD.findall(segment)]


# ``shlex.split`` (POSIX mode) as three regular expressions: the same words (a property test
# holds them equal), at a tenth of the cost of shlex's character-by-character state machine,
# which was a sixth of ``analyze``'s time on a crontab full of quoted commands.
_SHELL_BLANK = "[ \t\r\n]"
_SHELL_WORD = re.compile(
    rf"""{_SHELL_BLANK}*((?:[^ \t\r\n'"\\]+|\\[\s\S]|'[^']*'|"(?:[^"\\]|\\[\s\S])*")+)"""
)
_SHELL_PART = re.compile(r"""\\([\s\S])|'([^']*)'|"((?:[^"\\]|\\[\s\S])*)"|([^'"\\]+)""")
_IN_DOUBLE_QUOTES = re.compile(r'\\([\\"])')


def shell_words(text: str) -> list[str]:
    """``shlex.split(text)``: words split at blanks, quotes and backslashes as POSIX shells
    read them (no expansion). ValueError for an unclosed quote or a trailing backslash."""
    words: list[str] = []
    position = 0
    match = _SHELL_WORD.match(text)
    while match is not None:
        word = match.group(1)
        if "'" in word or '"' in word or "\\" in word:
            word = "".join(map(_unquoted, _SHELL_PART.finditer(word)))
        words.append(word)
        position = match.end()
        match = _SHELL_WORD.match(text, position)
    if text[position:].strip(" \t\r\n"):
        raise ValueError("No closing quotation")
    return words


def _unquoted(part: re.Match[str]) -> str:
    kind = part.lastindex
    if kind == 3:  # inside double quotes a backslash only escapes \\ and "
        return _IN_DOUBLE_QUOTES.sub(r"\1", part.group(3))
    return part.group(kind or 0)


def _strip_wrappers(words: list[str]) -> list[str]:
    while words:
        head = words[0]
        skip = _WRAPPERS.get(head, _WRAPPERS.get(_basename(head)))
        if skip is None:
            return words
        words = words[1:]
        while words and words[0].startswith("-"):  # options of the wrapper
            option = words[0]
            words = words[1:]
            if (
                option in ("-n", "-c", "-w", "-E", "-s", "-k", "-u")
                and words
                and (words[0][:1].isdigit() or option in ("-c", "-u"))
            ):
                words = words[1:]
        words = words[skip:] if head not in ("sudo", "env") else words
        while words and _ASSIGNMENT.match(words[0]):
            words = words[1:]
    return words


def _name(words: list[str]) -> str:
    if not words:
        return ""
    head = _basename(words[0])
    rest = [w for w in words[1:] if not w.startswith("-") and not w.startswith(">")]
    if head in _INTERPRETERS and rest:
        script = _basename(rest[0])
        if script in _FRAMEWORK_TOOLS and len(rest) > 1:
            return _slug(rest[1])
        if head == "bundle" and rest[0] == "exec" and len(rest) > 2:
            return _slug(rest[2] if _basename(rest[1]) == "rake" else rest[1])
        return _slug(_strip_extension(script))
    if head in _FRAMEWORK_TOOLS and rest:
        # The sub-command (``app:sync``, ``simplenews:spool-send``, else the first word that is
        # not a path), never an option's value such as drush's ``-r web`` or ``-r /srv/web``.
        sub = next((w for w in rest if ":" in w and "/" not in w), None)
        if sub is None:
            sub = next((w for w in rest if "/" not in w), rest[0])
        return _slug(sub if sub not in ("cron", "event") else f"{head}-{sub}")
    if head == "find" and rest:
        # What it cleans or looks through: ``find /var/log/app -mtime +14 -delete`` is
        # clean-app, not "find" (the same name for every housekeeping line).
        where = _NOT_SLUG.sub("-", _basename(rest[0].rstrip("/")).lower()).strip("-")[:50]
        deletes = "-delete" in words or ("-exec" in words and "rm" in words)
        return f"{'clean' if deletes else 'find'}-{where}" if where else ""
    if head == "run-parts" and rest:
        directory = rest[-1].rstrip("/")
        return _slug(_basename(directory).replace(".", "-"))
    if head in ("curl", "wget") and rest:
        url = next((w for w in rest if "://" in w), rest[-1])
        path = url.split("://", 1)[-1].split("?", 1)[0].rstrip("/")
        tail = path.rsplit("/", 1)[-1] if "/" in path else path
        return _slug(f"{head}-{tail}")
    return _slug(_strip_extension(head))


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _strip_extension(word: str) -> str:
    for ext in (".sh", ".php", ".py", ".pl", ".rb", ".js", ".bash"):
        if word.endswith(ext):
            return word[: -len(ext)]
    return word


def _slug(word: str) -> str:
    slug = _NOT_SLUG.sub("-", word.lower()).strip("-")
    return slug[:60] or "job"
