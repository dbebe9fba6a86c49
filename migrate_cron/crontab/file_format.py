"""User or system crontab: whether a user name stands between the schedule and the command.

cron itself never guesses: the file's place decides (``/etc/crontab`` and ``cron.d`` are system
crontabs, cron's spool holds user crontabs). A copy elsewhere (``crontab -l > x``, a file checked
into a repository) has lost that fact, and reading it the wrong way changes what runs: a system
line read as a user line runs a command called ``root``; a user line read as a system line runs
as a user called ``php``. So the format comes from the place when there is one, and otherwise
from the job lines themselves, one vote per line:

- a line reads as ``schedule USER command`` when its sixth word has the shape of a user name
  and is an account here or a conventional one (``root``, ``www-data``) followed by anything
  but an option, or when any user-shaped word is followed by what surely starts a command (an
  absolute path, ``sudo``, a program known by name) — accounts of the cron host need not exist
  here (``minecraft /srv/mc/backup.sh``);
- a word that is a shell builtin or keyword (``cd``, ``exec``), a well-known program
  (``php``, ``python3``, ``bash``) or a program on this host's PATH is the command itself, not
  a user; so is anything followed by an option (``wget -q …``).

The file is a system crontab when at least half of its job lines read as one. The reason
names the users it saw, and the caller is told that the format was inferred (``migrate`` then
asks for ``--format``).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Iterator
from functools import lru_cache

from migrate_cron.crontab.env_line import parse_env
from migrate_cron.crontab.line_words import BLANKS, FIVE, MACRO, TOKEN

FORMATS = ("auto", "user", "system")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_USER_NAME = re.compile(r"[a-z_][a-z0-9_.-]*\$?")
#: Accounts most systems have or conventionally use for cron jobs.
_COMMON_USERS = _words(
    """root www-data nobody daemon postgres mysql www nginx apache deploy ubuntu admin debian
    redis git jenkins odoo www-user app web ftp http operator"""
)
#: Accounts that are also common command names (or common words): evidence of a user field
#: only when what follows surely starts a command.
_AMBIGUOUS_USERS = _words(
    """mail news sync backup man lp games list proxy irc uucp bin sys shutdown halt"""
)
#: Shell builtins and reserved words: the command itself when they come first.
_SHELL_WORDS = _words(
    """[ [[ ! alias bg break builtin case cd command continue do done echo elif else esac eval
    exec exit export false fg fi for function getopts hash if jobs kill let local printf pwd read
    readonly return select set shift source test then time times trap true type typeset ulimit
    umask unalias unset until wait while"""
)
#: Programs a cron command often starts with, whether or not this host has them: never a user.
_KNOWN_PROGRAMS = _words(
    """sudo su runuser doas env nice ionice nohup timeout flock chronic cronic run-one setlock
    lockrun unbuffer xvfb-run sh bash dash zsh ksh mksh csh tcsh fish busybox perl ruby node
    nodejs deno bun java php php-cli python python2 python3 pypy pypy3 uv poetry pipenv
    rscript awk gawk sed grep find xargs tee cat touch mkdir rm cp mv ln chmod chown sleep
    date wget curl lynx links w3m rsync scp ssh sftp tar gzip gunzip bzip2 xz zip unzip mysql
    mysqldump mysqlcheck mariadb mariadb-dump pg_dump pg_dumpall psql vacuumdb redis-cli mongo
    mongosh mongodump docker docker-compose podman kubectl systemctl service logrotate
    run-parts certbot svn make npm npx yarn pnpm composer drush wp rake bundle s3cmd aws gsutil
    rclone restic borg duplicity rsnapshot ntpdate apachectl crontab killall pkill tmux screen
    sendmail mailx"""
)
#: ``php7.4``, ``python3.11``, ``ruby2.7``, ``node18``: versioned interpreters.
_INTERPRETER = re.compile(r"(?:php|python|pypy|ruby|perl|node|java)[0-9][0-9.]*")
_SYSTEM_PATHS = ("/etc/crontab",)
_SYSTEM_DIRS = ("/etc/cron.d/",)
#: cron's spool directories, where each user's crontab is a file named after the user.
_SPOOL_DIRS = ("/var/spool/cron/crontabs", "/var/spool/cron", "/etc/crontabs")
#: Job lines looked at: enough to decide, and a 100,000-line file costs no more than this.
_SAMPLE = 2000


def format_from_path(path: str) -> tuple[str, str] | None:
    """The format a file's place says it has, as cron reads it: /etc/crontab and any file in a
    ``cron.d`` directory are system crontabs (a user field before the command); a file in
    cron's spool (named after its owner) and ``crontab -l`` output on stdin are user crontabs.
    None when the path says nothing."""
    if path == "-":
        return "user", "user format: read from stdin (crontab -l output)"
    normalized = os.path.abspath(path)
    if normalized in _SYSTEM_PATHS or any(d in normalized for d in _SYSTEM_DIRS):
        return "system", f"system format: {path} is a system crontab (user field before command)"
    parent = os.path.dirname(normalized)
    if os.path.basename(parent) == "cron.d":
        return (
            "system",
            f"system format: {path} is in a cron.d directory (user field before command)",
        )
    if parent in _SPOOL_DIRS:
        return "user", f"user format: {path} is a user's crontab in cron's spool"
    return None


def choose_format(
    path: str, words: Iterable[tuple[str, str | None]], requested: str
) -> tuple[str, str]:
    """``"user"`` or ``"system"`` and why: ``requested`` when it is one of them, else the
    file's place, else the job lines' ``words`` (the word after the schedule and the one after
    it, None when missing) as the module docstring says."""
    if requested in ("user", "system"):
        return requested, f"{requested} format (as requested)"
    known = format_from_path(path)
    if known is not None:
        return known
    with_user = 0
    jobs = 0
    names: list[str] = []
    for sixth, seventh in _sample(words):
        jobs += 1
        if reads_as_user_field(sixth, seventh):
            with_user += 1
            if sixth not in names:
                names.append(sixth)
    if with_user and with_user * 2 >= jobs:
        shown = ", ".join(names[:3])
        return "system", (
            f"system format: {with_user} of {jobs} jobs have a user name ({shown}) before the "
            "command (use --format user if that is wrong)"
        )
    return "user", (
        "user format: the word after the schedule is the command"
        + (f" in {jobs - with_user} of {jobs} jobs" if jobs else "")
    )


def could_be_user(words: Iterable[tuple[str, str | None]]) -> bool:
    """Whether some job line's word after the schedule has the shape of a user name (so the
    file could be read either way); a path or an option there can only be a command."""
    return any(
        seventh is not None and _USER_NAME.fullmatch(sixth) for sixth, seventh in _sample(words)
    )


def reads_as_user_field(sixth: str, seventh: str | None) -> bool:
    """Whether ``schedule SIXTH SEVENTH …`` reads as a system line (SIXTH the user)."""
    if seventh is None or seventh.startswith("-") or not _USER_NAME.fullmatch(sixth):
        return False
    if _is_known_command(sixth):
        return False
    account = sixth in _COMMON_USERS or _is_account(sixth)
    if _on_path(sixth):
        # git, mail: accounts that are also programs here; only a sure command start decides.
        return account and starts_command(seventh)
    if account and sixth not in _AMBIGUOUS_USERS:
        return True
    return starts_command(seventh)


def starts_command(word: str) -> bool:
    """Whether a command surely starts with ``word``: an absolute or home path, a variable
    (``$HOME/bin/x``), sudo and other well-known programs, a builtin, a program on PATH."""
    if word.startswith(("/", "~/", "$")):
        return True
    return _is_known_command(word) or (bool(_USER_NAME.fullmatch(word)) and _on_path(word))


def _is_known_command(word: str) -> bool:
    return word in _SHELL_WORDS or word in _KNOWN_PROGRAMS or bool(_INTERPRETER.fullmatch(word))


def _sample(words: Iterable[tuple[str, str | None]]) -> Iterable[tuple[str, str | None]]:
    for count, pair in enumerate(words):
        if count >= _SAMPLE:
            return
        yield pair


@lru_cache(maxsize=4096)
def _is_account(name: str) -> bool:
    try:
        import pwd

        pwd.getpwnam(name)
    except (ImportError, KeyError, OSError):
        return False
    return True


@lru_cache(maxsize=4096)
def _on_path(name: str) -> bool:
    return shutil.which(name) is not None


def job_words(raws: list[str]) -> Iterator[tuple[str, str | None]]:
    """For each job line: the word after the schedule and the word after that."""
    for raw in raws:
        sixth, seventh = _sixth_token(raw)
        if sixth is not None:
            yield sixth, seventh


def _sixth_token(raw: str) -> tuple[str | None, str | None]:
    """The word after the schedule and the word after that (None when missing)."""
    text = raw.rstrip("\n")
    body = text.lstrip(BLANKS)
    if not body or body[0] == "#" or parse_env(text) is not None:
        return None, None
    if body.startswith("@"):
        match = MACRO.match(body)
        rest = (match.group(2) or "") if match else ""
    else:
        match = FIVE.match(body)
        if match is None:
            return None, None
        rest = match.group(6) or ""
    tokens = TOKEN.findall(rest, 0)[:2]
    if not tokens:
        return None, None
    return tokens[0], tokens[1] if len(tokens) > 1 else None
