"""``EffectLedger.once`` for application code, on every backend: the body runs once per key; in the
caller's transaction the mark commits or rolls back with the caller's own writes."""

from __future__ import annotations

import os

import pytest
from sqlalchemy import insert, select

from migrate_cron.errors import EffectInDoubt
from migrate_cron.ledger import EffectLedger, holder
from migrate_cron.store import Store


def test_body_runs_once_and_a_raising_body_is_recorded_failed(store: Store) -> None:
    ledger = EffectLedger(store)
    sent: list[str] = []
    for _ in range(2):
        with ledger.once("invoice:8812:send") as first:
            if first:
                sent.append("mail")
    assert sent == ["mail"]
    with pytest.raises(RuntimeError), ledger.once("k") as first:
        assert first
        raise RuntimeError("smtp down")
    effect = store.effect_get("k")
    assert effect is not None and effect.status == "failed"
    with ledger.once("k") as first:
        assert first  # a failed key runs again


def test_a_key_in_doubt_is_refused(store: Store) -> None:
    store.effect_begin("k", holder=f"{holder().rpartition(':')[0]}:{os.getpid()}")
    with pytest.raises(EffectInDoubt, match="still running"), EffectLedger(store).once("k"):
        pass


def test_in_the_callers_transaction_the_mark_and_the_write_go_together(store: Store) -> None:
    ledger, job = EffectLedger(store), store.tables.job
    now = store.db_now()
    row = {"kind": "audit", "state": "done", "run_at": now, "created_at": now}
    with store.engine.connect() as conn:
        trans = conn.begin()
        with ledger.once("audit:1", conn=conn) as first:
            assert first
            conn.execute(insert(job).values(**row))
        trans.rollback()  # the caller's transaction fails: neither the row nor the mark stays
    assert store.effect_get("audit:1") is None
    for _ in range(2):
        with store.engine.begin() as conn, ledger.once("audit:1", conn=conn) as first:
            if first:
                conn.execute(insert(job).values(**row))
    with store.engine.connect() as conn:
        assert len(conn.execute(select(job.c.id).where(job.c.kind == "audit")).all()) == 1
