"""Rules about how the shell cron starts reads the command: bash-only syntax under ``/bin/sh``,
pipelines that hide the command's exit status, guards that make a line a no-op on most hosts,
build-time ``@placeholder@`` tokens nobody replaced, and variables nothing sets.

Cron runs every command with ``$SHELL -c`` and ``SHELL`` is ``/bin/sh`` unless the file sets
it (crontab(5)); on Debian and Ubuntu ``/bin/sh`` is dash, which has no ``source``, ``[[``,
``&>`` or ``<(…)``. Like the other rules these read the text only, with a substring test in
front of every regular expression.
"""

from __future__ import annotations

import re

from migrate_cron.analysis.finding import Context, Hit, Rule, RuleId
from migrate_cron.analysis.job import CronJob
from migrate_cron.crontab.entry import Severity

#: Shells that understand the bash-only syntax below.
_BASH_LIKE = ("bash", "zsh", "ksh", "mksh", "ksh93")

_SOURCE = re.compile(r"(?:^|[;&|({]\s*|\bthen\s+|\bdo\s+)source\s")
_AMP_REDIRECT = re.compile(r"&>>?")
_DOUBLE_BRACKET = re.compile(r"(?:^|[\s;&|(])\[\[\s")
_PROCESS_SUB = re.compile(r"[<>]\(")


def _bashisms(command: str) -> list[tuple[str, str]]:
    """(what was written, what dash does with it) for each bash-only construct."""
    found: list[tuple[str, str]] = []
    if "source" in command and _SOURCE.search(command):
        found.append(("source", '"source: not found": the file is never read'))
    if "&>" in command and (m := _AMP_REDIRECT.search(command)):
        found.append(
            (
                m.group(),
                f'"{m.group()}" is "&" then "{m.group()[1:]}": the command runs in the '
                "background and its output is not redirected",
            )
        )
    if "[[" in command and _DOUBLE_BRACKET.search(command):
        found.append(("[[", '"[[: not found": the test is always false'))
    if "(" in command and _PROCESS_SUB.search(command):
        found.append(("<(…)", "a syntax error: nothing runs"))
    return found


def _bashism(job: CronJob, ctx: Context) -> Hit | None:
    text = job.command.text
    if "source" not in text and "&>" not in text and "[[" not in text and "(" not in text:
        return None
    shell = job.line.env.get("SHELL", "/bin/sh")
    if shell.rsplit("/", 1)[-1] in _BASH_LIKE:
        return None
    found = _bashisms(text)
    if not found:
        return None
    parts = "; ".join(f"`{what}`: {effect}" for what, effect in found)
    return Hit(f"bash syntax run by {shell} (dash on Debian): {parts}")


# A pipeline's status is its last command's; "||" is not a pipe.
_PIPE = re.compile(r"(?<![|\\])\|(?![|&])\s*([\w./-]+)")


def _pipe_status(job: CronJob, ctx: Context) -> Hit | None:
    text = job.command.text
    if "|" not in text or "pipefail" in text:
        return None
    pipes = _PIPE.findall(text)
    if not pipes:
        return None
    last = pipes[-1].rsplit("/", 1)[-1]
    return Hit(
        f"the line's exit status is that of `{last}`, the last command of a pipeline: when the "
        "command before it fails, cron (and a queue's retries) still see success"
    )


_GUARDS = (
    ("/usr/sbin/anacron", "anacron is installed", "anacron runs these jobs instead"),
    ("/run/systemd/system", "systemd runs the host", "a systemd timer does the work instead"),
)
_GUARD = re.compile(
    r"(?:test|\[)\s+(?:!\s+)?-[xdef]\s+(/usr/sbin/anacron|/run/systemd/system)\b[^|;&]*"
    r"(\|\||&&|;\s*then)"
)


def _guard(job: CronJob, ctx: Context) -> Hit | None:
    text = job.command.text
    if "/usr/sbin/anacron" not in text and "/run/systemd/system" not in text:
        return None
    match = _GUARD.search(text)
    if match is None:
        return None
    path = match.group(1)
    when, instead = next((w, i) for p, w, i in _GUARDS if p == path)
    return Hit(
        f"guarded by a test on {path}: wherever {when} the line does nothing ({instead}); it "
        "is the package's fallback, not a job of its own"
    )


_PLACEHOLDER = re.compile(r"(?<![\w.@])@[A-Za-z_][A-Za-z0-9_]*@")


def _placeholder(job: CronJob, ctx: Context) -> Hit | None:
    text = job.command.text
    if "@" not in text or text.count("@") < 2:
        return None
    found = _PLACEHOLDER.findall(text)
    if not found:
        return None
    shown = ", ".join(dict.fromkeys(found))
    return Hit(
        f"{shown}: a build-time placeholder nobody replaced (configure/sed templating); the "
        "shell takes it literally, so the command fails"
    )


#: What cron itself puts in a command's environment (crontab(5): SHELL, LOGNAME, HOME, PATH;
#: USER on cronie and the BSDs; MAILTO and friends only when set) and what the shell sets.
_PROVIDED = frozenset(
    {
        "HOME",
        "LOGNAME",
        "USER",
        "SHELL",
        "PATH",
        "PWD",
        "OLDPWD",
        "IFS",
        "PPID",
        "PS1",
        "PS2",
        "PS4",
        "OPTIND",
        "OPTARG",
        "LINENO",
        "RANDOM",
        "SECONDS",
        "HOSTNAME",
        "UID",
        "EUID",
        "SHLVL",
        "HOSTTYPE",
        "OSTYPE",
        "MACHTYPE",
        "PIPESTATUS",
        "BASHPID",
        "EPOCHSECONDS",
        "EPOCHREALTIME",
        "FUNCNAME",
        "BASH",
        "BASH_VERSION",
        "BASH_SOURCE",
        "BASH_REMATCH",
        "_",
    }
)
# $NAME or ${NAME…}, not after a backslash; single-quoted text is removed before the search.
_EXPANSION = re.compile(r"(?<!\\)\$(?:\{([A-Za-z_][A-Za-z0-9_]*)([^}]?)|([A-Za-z_][A-Za-z0-9_]*))")
# Where the command itself sets a name: NAME=…, for NAME in, read [-opts] NAME…, export/local/
# declare/readonly NAME.
_SETS = re.compile(
    r"(?:^|[\s;&|(`])([A-Za-z_][A-Za-z0-9_]*)=|\bfor\s+([A-Za-z_][A-Za-z0-9_]*)\s|"
    r"\bread\s+(?:-\w+\s+)*([A-Za-z_][\w ]*)|"
    r"\b(?:export|local|declare|readonly|typeset)\s+(?:-\w+\s+)*([A-Za-z_][A-Za-z0-9_]*)"
)
_SINGLE_QUOTED = re.compile(r"'[^']*'")


def unset_variables(command: str, env: dict[str, str]) -> list[str]:
    """Names the command expands that neither the file (its NAME=value lines above), nor the
    command itself, nor cron or the shell sets. ``${NAME:-default}`` and the like say what to
    do when it is unset, so they are not counted."""
    if "$" not in command:
        return []
    text = _SINGLE_QUOTED.sub("''", command) if "'" in command else command
    used: list[str] = []
    for braced, after, plain in _EXPANSION.findall(text):
        name = braced or plain
        if braced and after in (":", "-", "=", "+", "?"):
            continue  # ${NAME:-x}, ${NAME-x}, ${NAME:=x}…: unset is handled
        if name not in used:
            used.append(name)
    if not used:
        return []
    set_here: set[str] = set()
    for groups in _SETS.findall(text):
        for group in groups:
            set_here.update(group.split())
    return [n for n in used if n not in env and n not in _PROVIDED and n not in set_here]


def _unset(job: CronJob, ctx: Context) -> Hit | None:
    names = unset_variables(job.command.text, job.line.env)
    if not names:
        return None
    shown = ", ".join(f"${n}" for n in names[:4])
    return Hit(
        f"uses {shown}, which no line above sets and cron does not provide (cron gives a "
        "command only HOME, LOGNAME, SHELL, PATH and the file's NAME=value lines): it expands "
        "to nothing, unless /etc/environment sets it (Debian's cron reads it through PAM)"
    )


SHELL_RULES: tuple[Rule, ...] = (
    Rule(
        RuleId.BASHISM,
        Severity.ERROR,
        "Bash syntax in a line cron runs with /bin/sh (dash on Debian/Ubuntu): it fails or "
        "does something else.",
        "write it for sh (`. FILE` for `source`, `>>FILE 2>&1` for `&>>`, `[ ]` for `[[ ]]`), or "
        "set SHELL=/bin/bash above the line",
        _bashism,
    ),
    Rule(
        RuleId.PIPE_STATUS,
        Severity.WARNING,
        "A pipeline's exit status is its last command's: a failure before the pipe is hidden.",
        "run it under bash with `set -o pipefail`, or drop the pipe: the worker keeps the "
        "output and mails or stores it",
        _pipe_status,
    ),
    Rule(
        RuleId.DISTRO_GUARD,
        Severity.INFO,
        "The line only runs where anacron or systemd is absent: a distribution's fallback.",
        "leave it on cron (or drop it where anacron/systemd handles the work); nothing to migrate",
        _guard,
    ),
    Rule(
        RuleId.PLACEHOLDER,
        Severity.ERROR,
        "An @name@ token left from a package template: the command has never worked.",
        "replace the token with the real path or value (what the package's build would have "
        "put there)",
        _placeholder,
    ),
    Rule(
        RuleId.UNSET_VARIABLE,
        Severity.WARNING,
        "A variable the crontab never sets: cron's environment is almost empty, so it expands "
        "to nothing.",
        "set it above the line (NAME=value) or inside the script; a job run from the queue gets "
        "the environment its registry entry gives it",
        _unset,
    ),
)
