"""Benchmark: ``migrate-cron analyze --json`` on generated 100,000-line crontabs.

Target: at most 2 s, both in-process (parse + rules + classify + plan + next runs + JSON) and
for the installed command (process start included). Two crontabs:

* ``hard`` — deliberately hard: ~50,000 distinct commands and ~8,000 distinct schedules per
  100,000 lines (comments, blank lines, env lines, every-minute pollers, fixed-time nightly jobs
  with a spread of hours and minutes, % stdin, redirections, locks, curl calls, a few invalid
  lines, some CRON_TZ=Europe/Berlin). Almost nothing repeats, so every cache misses.
* ``realistic`` — the user crontabs in samples/ (~110 lines: jobs, CRON_TZ and other env lines,
  comments) repeated as blocks, one tenant per block: script paths and app
  directories get the tenant's number (no two job lines are byte-identical), and fixed minutes
  shift by tenant as people spread load, so schedules repeat as they do in real crontabs.

    .venv/bin/python bench/bench_analyze.py [--case hard|realistic|both] [--lines 100000]
        [--repeat 3] [--check] [--table]

``--check`` exits 1 when the best time of either measurement is over the target.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from datetime import UTC, datetime
from pathlib import Path

TARGET_SECONDS = 2.0
NOW = "2026-03-01T00:00:00Z"

_COMMANDS = (
    "cd /var/www/app{n} && php artisan orders:sync --limit=250 >/dev/null 2>&1",
    "cd /var/www/app{n} && php artisan invoices:export --date=$(date +\\%F) || true",
    "/usr/local/bin/backup-db{n}.sh 2>&1 | logger -t backup",
    "flock -n /tmp/job{n}.lock /opt/jobs/run-{n} --batch-size=100",
    "curl -s https://hooks.example.com/ping/{n}",
    "python3 /srv/etl/load_{n}.py --day=yesterday",
    "sleep 30; /opt/report/build-{n} | mail -s report{n} ops@example.com",
    "find /var/log/app{n} -mtime +14 -delete",
    "/usr/bin/mail -s 'digest {n}' team@example.com%Daily digest {n}%",
    "wget -q -O - https://app{n}.example.com/cron.php > /dev/null",
)
_SCHEDULES = (
    "* * * * *",
    "*/5 * * * *",
    "*/15 * * * *",
    "{m} * * * *",
    "{m} {h} * * *",
    "{m} {h} * * *",
    "{m} {h} * * 1-5",
    "{m} {h} 1 * *",
    "{m} {h} * * 0",
    "@daily",
    "@hourly",
)


def generate(lines: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    out: list[str] = ["# generated for bench_analyze.py\n", "MAILTO=ops@example.com\n"]
    while len(out) < lines:
        roll = rng.random()
        if roll < 0.08:
            out.append(f"# job group {len(out)}\n")
        elif roll < 0.1:
            out.append("\n")
        elif roll < 0.11:
            out.append(f"APP_ENV=env{rng.randint(1, 9)}\n")
        elif roll < 0.112:
            out.append(f"{rng.randint(60, 99)} * * * * /bin/broken-{len(out)}\n")
        elif roll < 0.114:
            out.append("CRON_TZ=Europe/Berlin\n" if rng.random() < 0.5 else "CRON_TZ=UTC\n")
        else:
            schedule = rng.choice(_SCHEDULES).format(m=rng.randint(0, 59), h=rng.randint(0, 23))
            command = rng.choice(_COMMANDS).format(n=rng.randint(1, 5000))
            out.append(f"{schedule} {command}\n")
    return "".join(out[:lines])


SAMPLES = Path(__file__).resolve().parent.parent / "samples"
_SAMPLE_FILES = (
    "shop.crontab",
    "agency-box.crontab",
    "backups.crontab",
    "nightly-loaders.crontab",
    "workers.crontab",
    "web1.crontab",
    "web2.crontab",
    "no-newline.crontab",
)
# The first path of a command that belongs to the tenant (not a system binary or /dev/null).
_TENANT_PATH = re.compile(
    r"(?<![\w/])(?!/(?:usr/)?s?bin/|/dev/)(/[A-Za-z0-9_./-]*?[A-Za-z0-9_-])"
    r"(\.(?:sh|php|py|pl|rb|lock|log))?(?=$|[\s;&|>'\"%)])"
)


def generate_realistic(lines: int) -> str:
    """Tenant blocks made from the sample crontabs (see the module docstring)."""
    blocks = [(SAMPLES / name).read_text().splitlines() for name in _SAMPLE_FILES]
    out: list[str] = ["# generated for bench_analyze.py from samples/\n"]
    tenant = 0
    while len(out) < lines:
        tenant += 1
        source = _SAMPLE_FILES[tenant % len(blocks)]
        out.append(f"# --- tenant {tenant} (from samples/{source}) ---\n")
        for text in blocks[tenant % len(blocks)]:
            out.append(_tenant_line(text, tenant) + "\n")
    return "".join(out[:lines])


def _tenant_line(text: str, tenant: int) -> str:
    stripped = text.lstrip()
    if not stripped or not (stripped[0].isdigit() or stripped[0] in "*@"):
        return text  # comments, blank and env lines stay as they are
    parts = stripped.split(None, 1 if stripped[0] == "@" else 5)
    if len(parts) < (2 if stripped[0] == "@" else 6):
        return text
    fields, command = parts[:-1], parts[-1]
    command, found = _TENANT_PATH.subn(
        lambda m: f"{m.group(1)}-t{tenant}{m.group(2) or ''}", command, count=1
    )
    if not found:
        command = f"TENANT=t{tenant} {command}"
    shift = (tenant // len(_SAMPLE_FILES)) % 6 * 10
    if shift and fields[0].isdigit():
        fields[0] = str((int(fields[0]) + shift) % 60)
    return " ".join([*fields, command])


def in_process(path: Path, table: bool = False) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) for parse + analyze + the JSON document, or
    the terminal table (``table``: rendered at the fixed 140 columns of a pipe)."""
    from migrate_cron.analysis.report import analyze
    from migrate_cron.cli.render.analyze import render_terminal, write_report_json
    from migrate_cron.crontab.parser import read_crontab

    start = time.perf_counter()
    cpu = time.process_time()
    crontab = read_crontab(str(path))
    report = analyze(
        [crontab],
        now=datetime(2026, 3, 1, tzinfo=UTC),
        next_count=3,
        default_tz="UTC",
    )
    sink = io.StringIO()
    with redirect_stdout(sink):
        (render_terminal if table else write_report_json)(report)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    assert sink.getvalue().startswith("/" if table else "{")
    return elapsed, cpu


def installed(path: Path) -> float:
    command = shutil.which("migrate-cron") or str(Path(sys.executable).with_name("migrate-cron"))
    start = time.perf_counter()
    with open(os.devnull, "w") as devnull:
        subprocess.run(
            [
                command,
                "analyze",
                str(path),
                "--json",
                "--now",
                NOW,
                "--tz",
                "UTC",
                "--fail-on",
                "never",
            ],
            stdout=devnull,
            check=True,
        )
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("hard", "realistic", "both"), default="both")
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="exit 1 when over the target")
    parser.add_argument(
        "--table", action="store_true", help="also time the terminal table (target: <= 2x JSON)"
    )
    args = parser.parse_args()
    cases = ("hard", "realistic") if args.case == "both" else (args.case,)
    over = False
    for case in cases:
        over = measure(case, args.lines, args.repeat, args.table) or over
    return 1 if (over and args.check) else 0


def measure(case: str, lines: int, repeat: int, with_table: bool = False) -> bool:
    """Print one case's numbers; True when over the target."""
    text = generate(lines) if case == "hard" else generate_realistic(lines)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{case}.crontab"
        path.write_text(text)
        # In-process runs share caches across repeats; the first run is the honest cold one.
        cold, cold_cpu = in_process(path)
        warm, warm_cpu = min(in_process(path) for _ in range(max(repeat - 1, 1)))
        command = min(installed(path) for _ in range(repeat))
        table, table_cpu = in_process(path, table=True) if with_table else (0.0, 0.0)
    load = os.getloadavg()[0]
    print(f"{case}: analyze --json on {lines:,} lines (target <= {TARGET_SECONDS:.1f} s)")
    print(f"  load average at the end : {load:6.2f} on {os.cpu_count()} CPUs")
    print(f"  in-process, cold caches : {cold:6.2f} s wall, {cold_cpu:5.2f} s CPU")
    print(f"  in-process, warm caches : {warm:6.2f} s wall, {warm_cpu:5.2f} s CPU")
    print(
        f"  installed command       : {command:6.2f} s (best of {repeat}, process start included)"
    )
    if with_table:
        print(
            f"  in-process, table       : {table:6.2f} s wall, {table_cpu:5.2f} s CPU "
            f"({table_cpu / warm_cpu:.1f}x the JSON, warm; target <= 2x)"
        )
    over = cold > TARGET_SECONDS or command > TARGET_SECONDS
    if over:
        print("  OVER TARGET")
    return over


if __name__ == "__main__":
    raise SystemExit(main())
