"""Any sequence of migrate/rollback over a sample's jobs, then rolling all back, gives the
original file byte for byte: comments, blank lines, env lines, %, tabs, no final newline."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrate_cron.crontab.parser import parse_crontab
from migrate_cron.migration.generation import generate_registry
from migrate_cron.migration.line_switch import AlreadyThere
from migrate_cron.migration.switch import migrate, rollback
from migrate_cron.migration.target import Target
from migrate_cron.registry import load_registry

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(
    p
    for p in [*(ROOT / "samples").iterdir(), *(Path(__file__).parent / "data").iterdir()]
    if p.is_file() and not p.name.endswith((".sh", ".csv", ".md"))
)
NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
OPS = st.lists(
    st.tuples(st.integers(0, 50), st.sampled_from(["enqueue", "scheduler", "rollback"])),
    max_size=12,
)


def test_there_are_samples_with_jobs() -> None:
    assert len(SAMPLES) >= 3
    assert any(p.name == "shop.crontab" for p in SAMPLES)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sample=st.sampled_from(SAMPLES),
    final_newline=st.sampled_from(["keep", "drop", "add-crlf"]),
    ops=OPS,
)
def test_rolling_everything_back_restores_the_file(
    sample: Path, final_newline: str, ops: list[tuple[int, str]]
) -> None:
    data = sample.read_bytes()
    if final_newline == "drop":
        data = data.rstrip(b"\n")
    elif final_newline == "add-crlf":
        data = data.replace(b"\n", b"\r\n")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        crontab = root / sample.name
        crontab.write_bytes(data)
        registry = root / "migrate-cron.toml"
        generate_registry([crontab], registry, timezone="UTC")
        names = [j.name for j in load_registry(registry)]
        fmt = parse_crontab(data, str(crontab)).format  # what generate read it as, said out loud
        target = Target("/opt/migrate cron/bin/migrate-cron", str(registry), "sqlite:////q.db")
        for index, op in ops:
            if not names:
                break
            name = names[index % len(names)]
            try:
                if op == "rollback":
                    rollback(registry, name)
                else:
                    migrate(registry, name, op, target, NOW, file_format=fmt)
            except AlreadyThere:
                pass
            assert len(crontab.read_bytes().split(b"\n")) == len(data.split(b"\n"))
        for name in names:
            with contextlib.suppress(AlreadyThere):
                rollback(registry, name)
        assert crontab.read_bytes() == data
        assert all(j.mode == "cron" and j.migration is None for j in load_registry(registry))
        shutil.rmtree(root / ".migrate-cron", ignore_errors=True)
