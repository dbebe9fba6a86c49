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

from migrate_cron.analysis.finding import Context, Hit
from migrate_cron.analysis.job import CronJob
from migrate_cron.analysis.shellcheck import Comment, Request, dialect, wiki
from migrate_cron.analysis.streams import shown_program
from migrate_cron.analysis.tree import parse
from migrate_cron.analysis.work_calls import REPORTING
from migrate_cron.analysis.wrappers import INTERPRETERS, basename, unwrap
from migrate_cron.crontab.entry import CrontabLine

#: Shells that understand the bash-only syntax below.
_BASH_LIKE = ("bash", "zsh", "ksh", "mksh", "ksh93")

#: ShellCheck's bash-only codes, with what dash does with the construct (dash(1)).
_DASH_DOES = {
    3046: '"source: not found": the file is never read, and a command after && never runs',
    3010: '"[[: not found": the test is always false',
    3028: "$RANDOM is empty in dash: the expression does not vary",
    3001: "a syntax error: nothing runs",
    3011: "a syntax error: nothing runs",
    3005: "a syntax error: nothing runs",
    3006: '"((: not found": the arithmetic test is always false',
    3014: '"[: unexpected operator": the test is always false',
    3040: '"set: Illegal option -o pipefail": the line stops there',
    3057: '"Bad substitution": the line stops there',
    3060: '"Bad substitution": the line stops there',
    3009: "the braces are kept literally: one word, not several",
    3018: '"++: not found"',
}
#: Codes whose construct makes the line fail or do something else under dash: errors.
_FATAL = frozenset((3046, 3010, 3001, 3011, 3005, 3006, 3014, 3040, 3057, 3060))


def _shell_of(job: CronJob) -> str:
    return job.line.env.get("SHELL", "/bin/sh")


def _runs_dash(job: CronJob, ctx: Context) -> bool:
    shell = _shell_of(job).rsplit("/", 1)[-1]
    return shell == "dash" or (shell == "sh" and ctx.bin_sh == "dash")


def _comments(job: CronJob, ctx: Context) -> tuple[Comment, ...]:
    if ctx.shell is None:
        return ()
    request = shellcheck_request(job.line, ctx.bin_sh)
    return ctx.shell.comments.get(request, ()) if request is not None else ()


def shellcheck_request(line: CrontabLine, bin_sh: str) -> Request | None:
    """What to ask ShellCheck about this line (None: a shell it does not check)."""
    kind = dialect(line.env.get("SHELL", "/bin/sh"), bin_sh)
    if kind is None or not line.shell_command:
        return None
    env = tuple(sorted(k for k in line.env if k not in ("MAILTO", "CRON_TZ", "SHELL")))
    return Request(line.shell_command, kind, env)


def _amp_redirects(job: CronJob) -> list[str]:
    """``&>``/``&>>`` as dash reads them: ``&`` (background) then ``>``/``>>``."""
    found = []
    for op, before in job.script.redirect_ops:
        if op in ("&>", "&>>"):
            stray = f" (and `{before}` becomes an extra argument)" if before.isdigit() else ""
            found.append(
                f'"{before if before.isdigit() else ""}{op}" is "&" then "{op[1:]}" in dash: '
                f"the command runs in the background and its output is not redirected{stray}"
            )
    return found


def check_bashism(job: CronJob, ctx: Context) -> Hit | None:
    if not _runs_dash(job, ctx):
        return None
    parts = _amp_redirects(job)
    codes = []
    for comment in _comments(job, ctx):
        if 3000 <= comment.code < 4000 and comment.code != 3020:
            does = _DASH_DOES.get(comment.code, comment.message.rstrip("."))
            parts.append(f"{comment.message.rstrip('.')} — {does} [SC{comment.code}]")
            codes.append(comment.code)
    if not parts:
        return None
    link = f" ({wiki(codes[0])})" if codes else ""
    return Hit(f"bash syntax run by {_shell_of(job)} (dash on Debian): " + "; ".join(parts) + link)


def check_redirect_order(job: CronJob, ctx: Context) -> Hit | None:
    for comment in _comments(job, ctx):
        if comment.code == 2069:
            mail = job.line.env.get("MAILTO")
            where = (
                'cron\'s output, which MAILTO="" discards'
                if mail == ""
                else "cron's mail, not the file"
            )
            return Hit(
                "`2>&1` comes before the redirection of stdout: stderr is pointed at what stdout "
                f"was then, so errors go to {where} [SC2069] ({wiki(2069)})",
                fix="put 2>&1 last: >>FILE 2>&1",
            )
    return None


def check_syntax(job: CronJob, ctx: Context) -> Hit | None:
    if job.line.stdin is not None:
        return None  # cut at %: the percent-split finding says why it does not parse
    for comment in _comments(job, ctx):
        # SC1017 (a carriage return) is no parse failure: syntax/carriage-return says it.
        if 1000 <= comment.code < 2000 and comment.level == "error" and comment.code != 1017:
            return Hit(
                f"the shell cannot parse this command: {comment.message.rstrip('.')} — it never "
                f"runs [SC{comment.code}] ({wiki(comment.code)})"
            )
    return None


def check_background(job: CronJob, ctx: Context) -> Hit | None:
    if "&" not in job.command.text:
        return None
    script = job.script
    alone = [c for c in script.top if not c.words and c.chain and c.joined == "&"]
    if alone:
        redirect = " ".join(r.raw for r in alone[0].chain)
        return Hit(
            f'"&{redirect}" is "&" then "{redirect}": the command runs in the background and '
            "the redirection applies to nothing; cron (and a worker) see it end at once, "
            "successful, whatever it does",
            fix=f"drop the & ({redirect} alone) if the redirection was meant",
        )
    if script.ends_background and not _amp_redirects(job):
        return Hit(
            "ends with &: the command runs in the background, so its exit status is never seen "
            "and runs can pile up"
        )
    return None


def check_comment_command(job: CronJob, ctx: Context) -> Hit | None:
    if "#" not in job.command.text:
        return None
    if not job.script.comment_only:
        return None
    token = re.match(r"#[A-Za-z_][A-Za-z0-9_]*#", job.script.text.lstrip())
    why = f"{token.group()} is a template token nobody replaced, and " if token else ""
    return Hit(
        f"{why}the shell reads a word that starts with # as a comment: the whole command is a "
        "comment, so the line runs nothing and exits 0 — it never worked"
    )


def check_sleep_operands(job: CronJob, ctx: Context) -> Hit | None:
    if "sleep" not in job.command.text:
        return None
    for call in job.script.top:
        if call.words and call.words[0].value == "sleep" and len(call.words) > 2:
            extra = [w.value for w in call.words[1:] if not re.fullmatch(r"[\d.]+[smhd]?", w.value)]
            if (extra and "/" in extra[0]) or (extra and extra[0].endswith((".sh", ".py", ".php"))):
                return Hit(
                    f"`sleep` is given `{extra[0]}` as a second duration: sleep fails with "
                    f'"invalid time interval" and {extra[0]} never runs (a missing ; or &&)'
                )
    return None


def check_script_named_program(job: CronJob, ctx: Context) -> Hit | None:
    if "sh " not in job.command.text:
        return None
    for call in job.script.top:
        if not call.words:
            continue
        inner = unwrap(call)
        argv = inner.argv
        if len(argv) < 2 or basename(argv[0]) not in ("bash", "sh", "dash", "zsh", "ksh"):
            continue
        operands = [a for a in argv[1:] if not a.startswith("-")]
        if operands and operands[0] in INTERPRETERS and "/" not in operands[0]:
            return Hit(
                f"`{basename(argv[0])} {operands[0]} …` makes {basename(argv[0])} read a file "
                f"called `{operands[0]}` in the current directory as a shell script: "
                f"{operands[0]} itself never runs"
            )
    return None


_GUARDS = (
    ("/usr/sbin/anacron", "anacron is installed", "anacron runs these jobs instead"),
    ("/run/systemd/system", "systemd runs the host", "a systemd timer does the work instead"),
)


def check_guard(job: CronJob, ctx: Context) -> Hit | None:
    """A `test`/`[` on anacron's binary or systemd's run directory that decides whether the
    rest runs (``test -x /usr/sbin/anacron || …``, ``if [ ! -d /run/systemd/system ]; then``):
    read from the tree's calls, followed by ``||``, ``&&`` or an ``if`` body."""
    text = job.command.text
    if "/usr/sbin/anacron" not in text and "/run/systemd/system" not in text:
        return None  # a fast path only
    top = job.script.top
    for i, call in enumerate(top):
        argv = call.argv
        if not argv or argv[0] not in ("test", "["):
            continue
        path = next((p for p, _, _ in _GUARDS if p in argv), None)
        if path is None or not any(f in argv for f in ("-x", "-d", "-e", "-f")):
            continue
        if i + 1 < len(top) and top[i + 1].joined in ("||", "&&", ";"):
            when, instead = next((w, r) for p, w, r in _GUARDS if p == path)
            return Hit(
                f"guarded by a test on {path}: wherever {when} the line does nothing "
                f"({instead}); it is the package's fallback, not a job of its own"
            )
    return None


_PLACEHOLDER = re.compile(r"(?<![\w.@])@[A-Za-z_][A-Za-z0-9_]*@")


def check_placeholder(job: CronJob, ctx: Context) -> Hit | None:
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


def unset_variables(command: str, env: dict[str, str]) -> list[str]:
    """Names the command expands (``$NAME``, ``${NAME}``; not ``${NAME:-x}``, which says what
    to do when unset) that neither the file's env lines above, nor the command itself, nor
    cron or the shell sets. Read from the shell tree: single quotes, comments and here-docs
    expand nothing."""
    if "$" not in command:
        return []
    script = parse(command)
    used = [n for n, has_default in script.expanded if not has_default]
    return [
        n
        for n in dict.fromkeys(used)
        if n not in env
        and n not in _PROVIDED
        and n not in script.assigned
        and not n.isdigit()
        and n not in ("@", "*", "#", "?", "-", "$", "!", "0")
    ]


def check_unset(job: CronJob, ctx: Context) -> Hit | None:
    names = unset_variables(job.command.text, job.line.env)
    if not names:
        return None
    shown = ", ".join(f"${n}" for n in names[:4])
    near = [k for k in job.line.env if k != k.strip(";:&|`' ") and k.strip(";:&|`' ") in names]
    if near:
        return Hit(
            f"uses {shown}; a line above sets `{near[0]}`, a different name (cron takes "
            "everything before = as the name), so it expands to nothing"
        )
    return Hit(
        f"uses {shown}, which no line above sets and cron does not provide (cron gives a "
        "command only HOME, LOGNAME, SHELL, PATH and the file's NAME=value lines): it expands "
        "to nothing, unless /etc/environment sets it (Debian's cron reads it through PAM)"
    )


#: Programs that succeed whatever they are fed: a pipeline ending in one hides the failure of
#: the command before the pipe (``grep`` is not one: no input, no match, a failure).
_SINKS = frozenset(
    (
        "logger",
        "tee",
        "cat",
        "mail",
        "mailx",
        "sendmail",
        "mutt",
        "gzip",
        "bzip2",
        "xz",
        "zstd",
        "pigz",
        "ts",
        "cronolog",
        "rotatelogs",
        "multilog",
        "svlogd",
        "sort",
        "uniq",
        "wc",
        "sed",
        "awk",
        "cut",
        "tr",
        "head",
        "tail",
        "s-nail",
        "systemd-cat",
    )
)


def check_pipe_status(job: CronJob, ctx: Context) -> Hit | None:
    if "|" not in job.command.text:
        return None
    top = [c for c in job.script.top if c.words]
    if len(top) < 2 or top[-1].joined != "|" or "pipefail" in job.script.text:
        return None
    if _shell_of(job).rsplit("/", 1)[-1] in _BASH_LIKE and "pipefail" in str(job.line.env):
        return None
    last = basename(top[-1].words[0].value)
    if last not in _SINKS:
        return None
    first = next((c for c in reversed(top[:-1]) if c.joined != "|"), top[0])
    if first.joined == "||":
        return None  # `check || echo x | mail`: an alert branch, its status is not the work's
    inner = unwrap(first)
    if not inner.argv or basename(inner.argv[0]) in REPORTING:
        return None  # `echo x | mail`: nothing before the pipe that could fail
    program = shown_program(inner.argv) or basename(first.words[0].value)
    return Hit(
        f"the line's exit status is that of `{last}`, which succeeds whatever it is fed: when "
        f"`{program}` before the pipe fails, cron (and a queue's retries) still see success"
    )
