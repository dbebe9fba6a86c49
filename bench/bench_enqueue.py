"""Wall and CPU time of one `migrate-cron enqueue NAME` call (the installed command, as cron
runs it every minute on every host), on SQLite, PostgreSQL and MariaDB: a new slot, the same
slot again (the no-op every other host gets), and the exact crontab line `migrate --to
enqueue` writes. Each case runs the lean path (the installed command: `cli.lean`, no Typer or
Rich) and the full Typer CLI (`cli.app.main`, what every call cost before the lean path),
alternating call by call so both see the same machine load. Next to `migrate-cron --version`,
the floor of starting Python and the Typer CLI, and each path's imports (`python -X
importtime`).

Then issue 18's target: the median wall time of the cron line at most 150 ms above `python -c
"import sqlite3"` (the interpreter's own start, measured in the same run). The installed
command (the lean path writing through `store/direct.py`, no SQLAlchemy), the same lean
command line writing through the Store (SQLAlchemy: what the lean path did before), and the
baseline alternate call by call; wall and CPU (user + system) medians, and the differences.
Writes its block of the "## scheduler and enqueue" section of docs/benchmarks.md.

    python bench/bench_enqueue.py [--calls 15] [--backends sqlite,postgresql,mariadb]
    python bench/bench_enqueue.py --breakdown [--calls 10]   # where the cron line's time goes
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_scheduler import MARIADB, PG, machine, write_block
from migrate_cron.store import open_store

CLI = str(Path(sys.executable).with_name("migrate-cron"))
LEAN = [CLI]
FULL = [
    sys.executable,
    "-c",
    "import sys; from migrate_cron.cli.app import main; sys.argv[0] = 'migrate-cron'; main()",
]
#: The baseline of the target: starting the same interpreter and importing sqlite3.
BASELINE = [sys.executable, "-c", "import sqlite3"]
#: The lean command line through the Store (SQLAlchemy), as the lean path wrote before.
LEAN_STORE = [
    sys.executable,
    "-c",
    "import os, sys\n"
    "from migrate_cron.cli.lean import parse\n"
    "from migrate_cron.cli.enqueue_output import say\n"
    "from migrate_cron.producer.enqueue import enqueue_slot\n"
    "a = parse(sys.argv[1:], os.environ)\n"
    "sys.exit(say(enqueue_slot(a.name, slot=a.slot, quiet=a.quiet, as_json=False,\n"
    "    database_url=a.database_url, table_prefix=a.table_prefix, registry=a.registry,\n"
    "    spool_dir=a.spool_dir)))",
]
TARGET_MS = 150
REGISTRY = '[jobs.invoices]\nschedule = "*/5 * * * *"\ncommand = "true"\n'
CASES = ("new", "same", "cron")


def timed(
    cmd: list[str], args: list[str], env: dict[str, str], expect: int = 0
) -> tuple[float, float]:
    """(wall, CPU) seconds of one call; CPU is the child's user + system time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    res = subprocess.run([*cmd, *args], env=env, capture_output=True, text=True, timeout=60)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != expect:
        raise RuntimeError(f"{args}: exit {res.returncode}: {res.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def stats(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def imports(cmd: list[str], args: list[str], env: dict[str, str]) -> tuple[float, int, bool]:
    """(ms of imports, modules imported, Typer or Rich among them) for one call."""
    prog = cmd[1:] if cmd[0] == sys.executable else cmd
    res = subprocess.run(
        [sys.executable, "-X", "importtime", *prog, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows = [line.split("|") for line in res.stderr.splitlines() if line.startswith("import time:")]
    rows = [r for r in rows[1:] if len(r) == 3]  # rows[0] is the header
    total = sum(int(r[1]) for r in rows if not r[2].startswith("  "))  # top-level imports
    names = {r[2].strip() for r in rows}
    heavy = any(n.split(".")[0] in ("typer", "rich") for n in names)
    return total / 1000, len(rows), heavy


def bench_backend(
    backend: str, calls: int, tmp: Path
) -> tuple[dict[str, dict[str, list[tuple[float, float]]]], dict[str, tuple[float, int, bool]]]:
    url = {"sqlite": f"sqlite:///{tmp}/bench.db", "postgresql": PG, "mariadb": MARIADB}[backend]
    prefix = f"e{uuid.uuid4().hex[:6]}_"
    store = open_store(url, prefix=prefix)
    store.create_schema()
    registry = str(tmp / "migrate-cron.toml")
    env = {
        **child_env(),
        "MIGRATE_CRON_DATABASE_URL": url,
        "MIGRATE_CRON_TABLE_PREFIX": prefix,
        "MIGRATE_CRON_REGISTRY": registry,
    }
    # The line `migrate --to enqueue` writes (URL and prefix as options, not the environment).
    cron = ["enqueue", "invoices", "--quiet", "--registry", registry, "--database-url", url]
    cron += ["--table-prefix", prefix]
    try:
        base = datetime(2026, 1, 1, tzinfo=UTC)
        for cmd in (LEAN, FULL):  # warm the OS caches
            timed(cmd, ["enqueue", "invoices", "--slot", base.isoformat()], env)
        out: dict[str, dict[str, list[tuple[float, float]]]] = {
            case: {"lean": [], "full": []} for case in CASES
        }
        out["target"] = {"baseline": [], "direct": [], "store": []}
        minute = 0
        for _ in range(calls):
            for path, cmd in (("lean", LEAN), ("full", FULL)):
                minute += 5
                slot = (base + timedelta(minutes=minute)).isoformat()
                out["new"][path].append(timed(cmd, ["enqueue", "invoices", "--slot", slot], env))
                same = ["enqueue", "invoices", "--slot", base.isoformat()]
                out["same"][path].append(timed(cmd, same, env))
                out["cron"][path].append(timed(cmd, cron, env))
        for _ in range(calls):  # the target: cron line vs the interpreter's start, interleaved
            out["target"]["baseline"].append(timed(BASELINE, [], env))
            out["target"]["direct"].append(timed(LEAN, cron, env))
            out["target"]["store"].append(timed(LEAN_STORE, cron, env))
        assert store.count_jobs(kind="invoices") <= 2 * calls + 3
        imp = {"lean": imports(LEAN, cron, env), "full": imports(FULL, cron, env)}
        return out, imp
    finally:
        store.drop_schema()
        store.dispose()


def median_ms(samples: list[tuple[float, float]], which: int) -> float:
    return statistics.median(s[which] for s in samples) * 1000


def target_lines(
    results: dict[str, tuple[dict[str, dict[str, list[tuple[float, float]]]], object]],
    calls: int,
    load: float,
) -> list[str]:
    """Issue 18's target: the cron line's median wall time minus the baseline's."""
    lines = [
        "",
        f"Target (issue 18): the cron line's median wall time at most {TARGET_MS} ms above "
        '`python -c "import sqlite3"` (same interpreter), measured in the same run: the '
        "baseline, the installed cron line (*direct*: `store/direct.py`, the driver alone) and "
        "the same lean command line through the Store (*Store*: SQLAlchemy, what the lean path "
        f"did before) alternate call by call, {calls} calls each (slot `auto`: already "
        f"enqueued). Wall / CPU medians; 1-minute load average up to {load:.1f}.",
        "",
        "| backend | baseline | direct | direct − baseline | target met | Store | "
        "Store − baseline |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for backend, (r, _) in results.items():
        t = r["target"]
        base = (median_ms(t["baseline"], 0), median_ms(t["baseline"], 1))
        direct = (median_ms(t["direct"], 0), median_ms(t["direct"], 1))
        via = (median_ms(t["store"], 0), median_ms(t["store"], 1))
        met = "yes" if direct[0] - base[0] <= TARGET_MS else "no"
        lines.append(
            f"| {backend} | {base[0]:.0f} / {base[1]:.0f} ms | {direct[0]:.0f} / {direct[1]:.0f} "
            f"ms | +{direct[0] - base[0]:.0f} / +{direct[1] - base[1]:.0f} ms | {met} | "
            f"{via[0]:.0f} / {via[1]:.0f} ms | +{via[0] - base[0]:.0f} / +{via[1] - base[1]:.0f} "
            "ms |"
        )
    return lines


#: The modules the cron line loads besides the driver and croniter (``--breakdown``).
OUR_MODULES = (
    "sqlite3, threading, migrate_cron.cli.main, migrate_cron.cli.lean, "
    "migrate_cron.producer.enqueue, migrate_cron.cli.enqueue_output, migrate_cron.registry, "
    "migrate_cron.producer.slot, migrate_cron.crontab.schedule, migrate_cron.producer.spool, "
    "migrate_cron.store.direct"
)
DRIVERS = {"sqlite": "sqlite3", "postgresql": "psycopg", "mariadb": "pymysql"}


def child_env() -> dict[str, str]:
    """The measured commands' environment: this one without ``MIGRATE_CRON_DEBUG`` (it sends
    the lean path to Typer) and without ``PYTHONDONTWRITEBYTECODE``, which cron's environment
    does not carry either: set (as some shells and containers do), an editable install
    compiles our modules from source on every call (+30 ms), which a pip-installed package,
    compiled at install time, never does."""
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("MIGRATE_CRON_DEBUG", "PYTHONDONTWRITEBYTECODE")
    }


def breakdown(calls: int, backends: list[str], tmp: Path) -> str:
    """Where the cron line's time goes: cumulative steps (the interpreter, our modules,
    croniter, the driver's import, the whole call), interleaved call by call; printed only."""
    env = child_env()
    py = [sys.executable, "-c"]
    steps: dict[str, list[str]] = {
        'python -c "import sqlite3"': [*py, "import sqlite3"],
        "+ our modules": [*py, f"import {OUR_MODULES}"],
        "+ croniter": [*py, f"import {OUR_MODULES}, croniter"],
    }
    stores = []
    for backend in backends:
        url = {"sqlite": f"sqlite:///{tmp}/split.db", "postgresql": PG, "mariadb": MARIADB}[backend]
        prefix = f"s{uuid.uuid4().hex[:6]}_"
        store = open_store(url, prefix=prefix)
        store.create_schema()
        stores.append(store)
        driver = DRIVERS[backend]
        steps[f"{backend}: driver import only"] = [*py, f"import sqlite3, {driver}"]
        steps[f"{backend}: + ours + croniter"] = [*py, f"import {OUR_MODULES}, croniter, {driver}"]
        steps[f"{backend}: the cron line"] = [
            *LEAN, "enqueue", "invoices", "--quiet", "--registry", str(tmp / "migrate-cron.toml"),
            "--database-url", url, "--table-prefix", prefix,
        ]  # fmt: skip
    try:
        samples: dict[str, list[tuple[float, float]]] = {step: [] for step in steps}
        for _ in range(calls):
            for step, cmd in steps.items():
                samples[step].append(timed(cmd, [], env))
    finally:
        for store in stores:
            store.drop_schema()
            store.dispose()
    first = next(iter(samples.values()))
    base = (median_ms(first, 0), median_ms(first, 1))
    lines = [
        f"Where the cron line's time goes ({calls} rounds, 1-minute load average "
        f"{os.getloadavg()[0]:.1f}): wall / CPU medians, and above the baseline.",
        "",
        "| step | wall | CPU | wall − baseline | CPU − baseline |",
        "|---|---:|---:|---:|---:|",
    ]
    for step, got in samples.items():
        wall, cpu = median_ms(got, 0), median_ms(got, 1)
        lines.append(
            f"| {step} | {wall:.0f} ms | {cpu:.0f} ms | {wall - base[0]:+.0f} ms | "
            f"{cpu - base[1]:+.0f} ms |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--backends", default="sqlite,postgresql,mariadb")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--breakdown", action="store_true", help="where the cron line's time goes")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    (tmp / "migrate-cron.toml").write_text(REGISTRY)
    if args.breakdown:
        print(breakdown(args.calls, [b for b in args.backends.split(",") if b], tmp))
        return
    env = child_env()
    floor = stats([timed(LEAN, ["--version"], env)[0] for _ in range(args.calls)])
    env_reg = {**env, "MIGRATE_CRON_REGISTRY": str(tmp / "migrate-cron.toml")}
    unknown = {
        name: stats(
            [timed(cmd, ["enqueue", "nope"], env_reg, expect=2)[0] for _ in range(args.calls)]
        )
        for name, cmd in (("lean", LEAN), ("full", FULL))
    }
    load = os.getloadavg()[0]
    results = {}
    for backend in [b for b in args.backends.split(",") if b]:
        try:
            results[backend] = bench_backend(backend, args.calls, tmp)
        except Exception as exc:  # a server that is not running: report, keep the rest
            print(f"{backend}: skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
    load = max(load, os.getloadavg()[0])
    lines = [
        f"### enqueue ({datetime.now(UTC):%Y-%m-%d}, {machine()})",
        "",
        f"`python bench/bench_enqueue.py`: the installed command per call, median / p95 wall "
        f"time of {args.calls} calls each (process start, registry, schedule, connect, one "
        "transaction), and median CPU (user + system). *lean* = the installed command, which "
        "serves a plain `enqueue NAME` without Typer or Rich (`cli/lean.py`) and writes through "
        "the driver alone, without SQLAlchemy (`store/direct.py`); *full* = the same "
        "command line through the Typer CLI (`cli.app.main`), what every call cost before. The "
        "two alternate call by call. *cron line* = the line `migrate --to enqueue` writes "
        "(`enqueue NAME --quiet --registry … --database-url … --table-prefix …`, slot `auto`: "
        f"already enqueued). 1-minute load average up to {load:.1f}. `migrate-cron --version` "
        f"(Python + Typer CLI start-up, no database): {floor[0]:.0f} / {floor[1]:.0f} ms; "
        "`migrate-cron enqueue UNKNOWN` (the registry, no database; exit 2): "
        f"lean {unknown['lean'][0]:.0f} / {unknown['lean'][1]:.0f} ms, "
        f"full {unknown['full'][0]:.0f} / {unknown['full'][1]:.0f} ms.",
        "",
        "| backend | case | full: wall | lean: wall | full: CPU | lean: CPU |",
        "|---|---|---:|---:|---:|---:|",
    ]
    label = {"new": "new slot", "same": "same slot again (no-op)", "cron": "cron line"}
    for backend, (r, _) in results.items():
        for case in CASES:  # (r["target"] is reported below)
            cells = []
            for path in ("full", "lean"):
                wall = stats([w for w, _ in r[case][path]])
                cells.append(f"{wall[0]:.0f} / {wall[1]:.0f} ms")
            for path in ("full", "lean"):
                cells.append(f"{statistics.median(c for _, c in r[case][path]) * 1000:.0f} ms")
            lines.append(f"| {backend} | {label[case]} | {' | '.join(cells)} |")
    lines += [
        "",
        "Imports of the cron line (`python -X importtime`, top-level cumulative, one call):",
        "",
        "| backend | full: imports | lean: imports | lean imports Typer or Rich |",
        "|---|---:|---:|---|",
    ]
    for backend, (_, imp) in results.items():
        full, lean = imp["full"], imp["lean"]
        lines.append(
            f"| {backend} | {full[0]:.0f} ms, {full[1]} modules | {lean[0]:.0f} ms, "
            f"{lean[1]} modules | {'yes' if lean[2] else 'no'} |"
        )
    lines += target_lines(results, args.calls, load)
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        write_block("bench_enqueue", text)


if __name__ == "__main__":
    main()
