"""The demo's setup for tests: the shop's crontab pointed into a temporary directory, with a
stand-in `php` that logs each run, so its commands really run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "samples" / "shop.crontab"


def shop_crontab(root: Path) -> tuple[Path, Path]:
    """Write ``root/shop.crontab`` and ``root/bin/php``; return the crontab and the run log."""
    (root / "shop" / "storage").mkdir(parents=True)
    (root / "bin").mkdir()
    log = root / "shop" / "storage" / "runs.log"
    php = root / "bin" / "php"
    php.write_text(
        f'#!/bin/sh\necho "ran: php $* (slot ${{MIGRATE_CRON_SCHEDULED_FOR:-none}})" >> "{log}"\n'
    )
    php.chmod(0o755)
    text = SHOP.read_text(encoding="utf-8")
    text = text.replace("/var/www/shop", str(root / "shop"))
    text = text.replace("/tmp/erp-sync.lock", str(root / "erp-sync.lock"))
    text = text.replace("\nPATH=", f"\nPATH={root / 'bin'}:", 1)
    crontab = root / "shop.crontab"
    crontab.write_text(text, encoding="utf-8")
    return crontab, log


def cron_command(crontab: Path, name: str) -> str:
    """The command cron hands to /bin/sh for the line that enqueues ``name``."""
    from migrate_cron.crontab.parser import read_crontab

    for line in read_crontab(str(crontab)).jobs:
        if f" enqueue {name} " in (line.shell_command or ""):
            return line.shell_command or ""
    raise AssertionError(f"no line enqueues {name} in {crontab}")


def fire_like_cron(command: str, hosts: int, env: dict[str, str]) -> list[int]:
    """Start ``sh -c command`` on ``hosts`` "hosts" at once, with cron's bare environment."""
    cron_env = {"PATH": "/usr/bin:/bin", "HOME": env.get("HOME", "/"), "SHELL": "/bin/sh"}
    procs = [
        subprocess.Popen(["/bin/sh", "-c", command], env=cron_env, start_new_session=True)
        for _ in range(hosts)
    ]
    codes = []
    try:
        for p in procs:
            codes.append(p.wait(timeout=60))
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, 9)
                p.wait()
    return codes
