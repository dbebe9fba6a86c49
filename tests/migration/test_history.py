"""Store.kind_history on every backend: what verify and migrations read about a switched job."""

from __future__ import annotations

from datetime import timedelta

from migrate_cron.store import Store


def test_kind_history_counts_since_a_moment(store: Store) -> None:
    before = store.db_now() - timedelta(seconds=1)
    for minute in range(4):
        store.enqueue_run(
            "export", before.replace(second=0, microsecond=0) - timedelta(minutes=minute)
        )
    store.enqueue("other", {"x": 1})
    [a, b] = store.claim("w1", n=2, kinds=["export"])
    store.complete("w1", [a.id])
    assert store.fail("w1", b.id, "boom: upstream 503", retry_in=0) == "open"
    [c] = store.claim("w1", n=1, kinds=["export"])
    store.fail("w1", c.id, "final: 401", terminal=True)

    h = store.kind_history(["export", "never"], before)
    export = h["export"]
    assert (export.done, export.failed, export.open, export.running) == (1, 1, 2, 0)
    assert export.total == 4
    assert export.last_success is not None and export.last_success.tzinfo is not None
    assert export.last_error == "final: 401" and export.last_error_job == c.id
    assert export.retried == (1 if c.id == b.id else 0)
    assert h["never"].total == 0 and h["never"].last_success is None

    later = store.kind_history(["export"], store.db_now() + timedelta(hours=1))["export"]
    assert later.total == 0 and later.last_error is None
    assert store.kind_history([]) == {}
