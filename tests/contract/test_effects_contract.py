"""The side-effect ledger and the fan-out insert, against every backend: one winner per key,
fenced outcomes, a crash left in doubt, and (kind, ref) dedupe in bulk."""

from __future__ import annotations

from datetime import timedelta

import pytest

from migrate_cron.clock import FakeClock
from migrate_cron.errors import EffectInDoubt
from migrate_cron.store import Store, open_store
from migrate_cron.store.models import EffectStatus


def test_first_begin_wins_and_a_second_sees_it_attempted(store: Store) -> None:
    first = store.effect_begin("invoice:1:send", holder="h:1", job_id=7)
    second = store.effect_begin("invoice:1:send", holder="h:2")
    assert first.won and not second.won
    assert first.effect.status == EffectStatus.ATTEMPTED
    assert (first.effect.job_id, first.effect.attempts) == (7, 1)
    assert second.effect.holder == "h:1"
    assert first.effect.attempted_at.tzinfo is not None


def test_done_key_is_not_run_again_and_failed_key_is(store: Store) -> None:
    one = store.effect_begin("a", holder="h:1")
    assert store.effect_finish("a", holder="h:1", attempts=1, ok=True, exit_code=0)
    again = store.effect_begin("a", holder="h:2")
    assert not again.won and again.effect.status == EffectStatus.DONE
    assert one.won

    store.effect_begin("b", holder="h:1")
    assert store.effect_finish("b", holder="h:1", attempts=1, ok=False, exit_code=4)
    failed = store.effect_get("b")
    assert failed is not None and (failed.status, failed.exit_code) == ("failed", 4)
    retry = store.effect_begin("b", holder="h:3")
    assert retry.won and retry.effect.attempts == 2 and retry.effect.exit_code is None


def test_finish_is_fenced_on_holder_and_attempt(store: Store) -> None:
    store.effect_begin("k", holder="h:1")
    assert not store.effect_finish("k", holder="h:2", attempts=1, ok=True)
    assert store.effect_forget("k") is not None
    store.effect_begin("k", holder="h:3")
    assert not store.effect_finish("k", holder="h:1", attempts=1, ok=True)
    effect = store.effect_get("k")
    assert effect is not None and effect.status == "attempted" and effect.holder == "h:3"


def test_attempted_key_is_taken_only_when_asked(store: Store) -> None:
    store.effect_begin("k", holder="h:1")
    assert not store.effect_begin("k", holder="h:2").won
    taken = store.effect_begin("k", holder="h:2", retry_attempted=True)
    assert taken.won and taken.effect.holder == "h:2" and taken.effect.attempts == 2


def test_forget_removes_the_key_and_says_what_it_was(store: Store) -> None:
    assert store.effect_forget("nothing") is None
    store.effect_begin("k", holder="h:1")
    was = store.effect_forget("k")
    assert was is not None and was.status == "attempted"
    assert store.effect_get("k") is None
    assert store.effect_begin("k", holder="h:2").won


def test_ttl_expires_a_done_key(db_url: str, table_prefix: str) -> None:
    clock = FakeClock()
    store = open_store(db_url, prefix=table_prefix, clock=clock)
    store.create_schema()
    try:
        store.effect_begin("daily", holder="h:1")
        store.effect_finish("daily", holder="h:1", attempts=1, ok=True, ttl=3600)
        effect = store.effect_get("daily")
        assert effect is not None and effect.expires_at == clock.now() + timedelta(hours=1)
        clock.advance(3599)
        assert not store.effect_begin("daily", holder="h:2").won
        clock.advance(2)
        again = store.effect_begin("daily", holder="h:2")
        assert again.won and again.effect.expires_at is None
    finally:
        store.drop_schema()
        store.dispose()


def test_record_in_the_callers_transaction_commits_or_rolls_back_with_it(store: Store) -> None:
    with store.engine.connect() as conn:
        trans = conn.begin()
        assert store.effect_record(conn, "db:1")
        trans.rollback()
    assert store.effect_get("db:1") is None
    with store.engine.begin() as conn:
        assert store.effect_record(conn, "db:1")
    with store.engine.begin() as conn:
        assert not store.effect_record(conn, "db:1")
    store.effect_begin("db:2", holder="h:1")
    with store.engine.begin() as conn, pytest.raises(EffectInDoubt):
        store.effect_record(conn, "db:2")


def test_enqueue_refs_dedupes_in_and_across_batches(store: Store) -> None:
    items = [(f"r{i % 7}", {"i": i}, None) for i in range(20)]
    assert store.enqueue_refs("fan", items, chunk=6) == 7
    assert store.enqueue_refs("fan", items, chunk=6) == 0
    jobs = store.list_jobs(kind="fan")
    assert sorted(j.ref or "" for j in jobs) == [f"r{i}" for i in range(7)]
    assert {j.ref: j.payload["i"] for j in jobs}["r3"] == 3  # the first line of a ref wins
    when = store.db_now() + timedelta(hours=1)
    assert store.enqueue_refs("fan", [("r0", None, None), ("late", None, when)]) == 1
    (late,) = [j for j in store.list_jobs(kind="fan") if j.ref == "late"]
    assert late.run_at == when
