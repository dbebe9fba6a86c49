"""What a call really runs once the programs that only wrap it are stepped over.

``cd /srv && flock -n /tmp/x.lock nice -n 10 sudo -u app php artisan invoices:export`` runs
``php artisan invoices:export``: ``flock``, ``nice`` and ``sudo`` each take their own options
and operands and then run the rest of their arguments as a command. Each wrapper's grammar is
its manual page's synopsis (util-linux flock(1), coreutils timeout(1)/nice(1)/env(1), sudo(8),
su(1), daemontools setlock(8)/envdir(8), moreutils chronic(1), docker exec/run/compose). A
wrapper that takes its command as one string (``sh -c``, ``su -c``, ``flock FILE -c``) hands
over a body that is parsed again with the shell grammar.
"""

from __future__ import annotations

from dataclasses import dataclass

from migrate_cron.analysis.tree import MAX_DEPTH, Call, Script, Word, parse

#: Wrapper → (options that take a value, how many operands come before the command).
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}), 0),
    "nohup": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "time": (frozenset({"-f", "-o", "--format", "--output"}), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), 1),
    "flock": (frozenset({"-w", "-E", "--timeout", "--wait", "--conflict-exit-code"}), 1),
    "setlock": (frozenset(), 1),
    "lckdo": (frozenset({"-w", "-W"}), 1),
    "chronic": (frozenset(), 0),
    "cronic": (frozenset(), 0),
    "run-one": (frozenset(), 0),
    "run-this-one": (frozenset(), 0),
    "run-one-constantly": (frozenset(), 0),
    "solo": (frozenset({"-port"}), 0),
    "envdir": (frozenset(), 1),
    "setuidgid": (frozenset(), 1),
    "softlimit": (frozenset({"-m", "-d", "-s", "-l", "-a", "-o", "-p", "-f", "-c", "-r", "-t"}), 0),
    "chpst": (frozenset({"-u", "-U", "-e", "-n", "-l", "-L", "-m", "-d", "-o", "-p", "-f"}), 0),
    "sudo": (
        frozenset(
            {
                "-u",
                "-g",
                "-C",
                "-D",
                "-h",
                "-p",
                "-r",
                "-t",
                "-U",
                "-T",
                "--user",
                "--group",
                "--chdir",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--other-user",
                "--command-timeout",
                "--close-from",
            }
        ),
        0,
    ),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "-C", "-S", "--unset", "--chdir", "--split-string"}), 0),
    "xvfb-run": (frozenset({"-n", "-s", "-f", "-e", "-p", "--server-args"}), 0),
    "unbuffer": (frozenset(), 0),
    "caffeinate": (frozenset(), 0),
}
#: Programs that run a command string: ``-c BODY`` (their user operand, where they take one).
_SHELLS = frozenset(("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"))
_SU = frozenset(("su", "runuser"))
#: Interpreters: the script they run says what the job is (``php bin/x.php`` is ``x``).
INTERPRETERS = frozenset(
    (
        "php",
        "python",
        "python2",
        "python3",
        "node",
        "nodejs",
        "ruby",
        "perl",
        "bash",
        "sh",
        "dash",
        "zsh",
        "ksh",
        "tclsh",
        "Rscript",
        "java",
        "deno",
        "bun",
        "lua",
        "pwsh",
        "php-cli",
    )
)
#: Interpreter options that take a value (``php -d memory_limit=1G``, ``python -W ignore``).
_INTERPRETER_VALUES = frozenset(
    (
        "-d",
        "-c",
        "-W",
        "-X",
        "-Q",
        "-I",
        "-r",
        "-e",
        "-jar",
        "-cp",
        "-classpath",
        "-f",
        "--require",
        "-r",
        "-n",
    )
)
_CONTAINER_VALUES = frozenset(
    (
        "-u",
        "--user",
        "-w",
        "--workdir",
        "-e",
        "--env",
        "--env-file",
        "--name",
        "-v",
        "--volume",
        "--network",
        "--entrypoint",
        "-p",
        "--publish",
        "--mount",
        "-l",
        "--label",
        "--platform",
        "--pull",
        "--memory",
        "-m",
        "--cpus",
        "--index",
        "-f",
        "--file",
        "--project-name",
        "--profile",
        "--project-directory",
        "--log-level",
        "--context",
        "-H",
        "--host",
    )
)


@dataclass(frozen=True, slots=True)
class Unwrapped:
    """A call with its wrappers stepped over. ``argv`` is what runs (empty when a wrapper's
    command is a body); ``body`` the parsed ``-c`` string; ``user`` the user a wrapper switches
    to; ``lock`` the lock a wrapper takes (its file, or ``solo``'s port)."""

    wrappers: tuple[str, ...]
    argv: tuple[str, ...]
    words: tuple[Word, ...]
    body: Script | None = None
    user: str | None = None
    lock: str | None = None
    container: str | None = None


def basename(word: str) -> str:
    if "/" not in word:
        return word
    return word.rstrip("/").rsplit("/", 1)[-1]


def unwrap(call: Call, depth: int = 0) -> Unwrapped:
    """``call`` with wrappers stepped over."""
    return unwrap_words(call.words, depth)


def unwrap_words(words: tuple[Word, ...], depth: int = 0) -> Unwrapped:
    wrappers: list[str] = []
    user: str | None = None
    lock: str | None = None
    container: str | None = None
    rest = list(words)
    while rest:
        head = basename(rest[0].value)
        if "=" in rest[0].value and rest[0].value.split("=", 1)[0].isidentifier() and wrappers:
            rest = rest[1:]  # `env A=1 cmd`, `sudo A=1 cmd`
            continue
        if head in _WRAPPERS:
            values, operands = _WRAPPERS[head]
            rest, options = _options(rest[1:], values)
            if head in ("sudo", "doas"):
                user = options.get("-u") or options.get("--user") or user
            if head == "env":
                rest = (
                    [w for w in rest if w.value != "-"]
                    if rest[:1] and rest[0].value == "-"
                    else rest
                )
                while rest and rest[0].value in ("-", "-i", "--ignore-environment"):
                    rest = rest[1:]
            if head == "flock" and "-c" in options:
                lock = rest[0].value if rest else lock
                return _body([*wrappers, head], options["-c"], depth, user, lock, container)
            if head == "flock" and len(rest) >= 2 and rest[1].value in ("-c", "--command"):
                lock = rest[0].value
                body = rest[2].value if len(rest) > 2 else ""
                return _body([*wrappers, head], body, depth, user, lock, container)
            if head in ("flock", "setlock", "lckdo") and rest:
                lock = rest[0].value
            if head == "solo":
                lock = options.get("-port", lock)
            if head == "timeout" and rest and not rest[0].value[:1].isdigit():
                operands = 0  # a malformed timeout: keep the word
            rest = rest[operands:]
            wrappers.append(head)
            continue
        if head in _SU:
            user_word, su_body, rest = _su(rest[1:])
            user = user_word or user
            if su_body is not None:
                return _body([*wrappers, head], su_body, depth, user, lock, container)
            wrappers.append(head)
            continue
        if head == "busybox" and len(rest) > 1 and basename(rest[1].value) in _SHELLS:
            rest = rest[1:]
            continue
        if head in _SHELLS:
            body_text = _shell_c(rest[1:])
            if body_text is not None:
                return _body([*wrappers, head], body_text, depth, user, lock, container)
            break
        if head in ("docker", "podman", "docker-compose", "kubectl"):
            found = _container(rest)
            if found is None:
                break
            container, rest = found
            wrappers.append(head)
            continue
        if head == "cronitor" and len(rest) > 2 and rest[1].value == "exec":
            rest = rest[3:]
            wrappers.append(head)
            if len(rest) == 1 and " " in rest[0].value:  # the command as one string
                return _body(wrappers, rest[0].value, depth, user, lock, container)
            continue
        break
    return Unwrapped(
        tuple(wrappers), tuple(w.value for w in rest), tuple(rest), None, user, lock, container
    )


def _options(words: list[Word], values: frozenset[str]) -> tuple[list[Word], dict[str, str]]:
    """Options before the first operand (``--`` ends them); ``values`` take the next word."""
    options: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i].value
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        if "=" in word and word.startswith("--"):
            key, value = word.split("=", 1)
            options[key] = value
        elif word.startswith("-") and "=" in word:
            key, value = word.split("=", 1)  # solo's -port=2050
            options[key] = value
        elif word in values and i + 1 < len(words):
            options[word] = words[i + 1].value
            i += 1
        elif len(word) > 2 and not word.startswith("--") and word[:2] in values:
            options[word[:2]] = word[2:]  # -n10, -uwww-data
        elif word.lstrip("-").isdigit():
            options["-n"] = word.lstrip("-")  # nice -10
        else:
            options[word] = ""
            # combined short options ending in c: `bash -lc BODY`, `flock -nc BODY`
            bundled = word.endswith("c") and not word.startswith("--") and len(word) > 2
            if bundled and i + 1 < len(words):
                options["-c"] = words[i + 1].value
                i += 1
        i += 1
    return words[i:], options


def _su(words: list[Word]) -> tuple[str | None, str | None, list[Word]]:
    """``su [-] [-l] [-s SHELL] [-c BODY] [USER]`` and ``runuser -u USER -- COMMAND…``."""
    user: str | None = None
    body: str | None = None
    i = 0
    while i < len(words):
        word = words[i].value
        if word == "--":
            return user, body, words[i + 1 :]
        if word in ("-c", "--command") and i + 1 < len(words):
            body = words[i + 1].value
            i += 2
            continue
        if word.startswith("--command="):
            body = word.split("=", 1)[1]
            i += 1
            continue
        if word in ("-s", "--shell", "-g", "-G", "--group") and i + 1 < len(words):
            i += 2
            continue
        if word in ("-u", "--user") and i + 1 < len(words):
            user = words[i + 1].value
            i += 2
            continue
        if word.startswith("-"):
            i += 1
            continue
        if user is None:
            user = word
            i += 1
            continue
        return user, body, words[i:]
    return user, body, []


def _shell_c(words: list[Word]) -> str | None:
    """The body of ``sh [options] -c BODY`` (``-lc`` bundles included), or None."""
    i = 0
    while i < len(words) and words[i].value.startswith("-") and words[i].value != "-":
        flag = words[i].value
        if flag == "-c" or (not flag.startswith("--") and flag.endswith("c") and len(flag) > 2):
            return words[i + 1].value if i + 1 < len(words) else ""
        if flag in ("-o", "+o", "-O", "+O"):
            i += 1
        i += 1
    return None


def _container(words: list[Word]) -> tuple[str, list[Word]] | None:
    """``docker exec|run …``, ``docker compose exec|run …``, ``kubectl exec … --``."""
    values = [w.value for w in words]
    i = 1
    if basename(values[0]) == "kubectl":
        if "--" not in values or "exec" not in values:
            return None
        j = values.index("--")
        k = values.index("exec") + 1
        while k < j:
            if values[k] in ("-n", "--namespace", "-c", "--container", "--context", "-f"):
                k += 2
            elif values[k].startswith("-"):
                k += 1
            else:
                return basename(values[k]), list(words[j + 1 :])
        return None
    if i < len(values) and values[i] == "compose":
        i += 1
    while i < len(values) and values[i].startswith("-"):  # global options (-f file, -p name)
        i += 2 if values[i] in _CONTAINER_VALUES and "=" not in values[i] else 1
    if i >= len(values) or values[i] not in ("exec", "run"):
        return None
    i += 1
    while i < len(values) and values[i].startswith("-"):
        i += 2 if values[i] in _CONTAINER_VALUES and "=" not in values[i] else 1
    if i >= len(values):
        return None
    return values[i], list(words[i + 1 :])


def _body(
    wrappers: list[str],
    text: str,
    depth: int,
    user: str | None,
    lock: str | None,
    container: str | None,
) -> Unwrapped:
    if depth >= MAX_DEPTH:
        return Unwrapped(tuple(wrappers), (), (), None, user, lock, container)
    return Unwrapped(tuple(wrappers), (), (), parse(text), user, lock, container)
