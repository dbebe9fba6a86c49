"""Finding jobs (``jobs list``, the console's Jobs page) and a running job's output so far, on
every backend: the filters mean the same on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

from datetime import timedelta

from migrate_cron.clock import FakeClock
from migrate_cron.store import Store, open_store

W = "w-search"


def _fail(store: Store, kind: str, error: str, output: str | None = None) -> int:
    job_id = store.enqueue(kind, max_attempts=1).job_id
    [job] = store.claim(W, 1, lease=60, kinds=[kind])
    assert store.fail(W, job.id, error, output=output, attempt=job.attempts) == "failed"
    return job_id


def test_search_finds_text_in_error_output_and_payload_in_any_case(store: Store) -> None:
    by_error = _fail(store, "a", "Connection REFUSED by upstream")
    by_output = _fail(store, "b", "exit code 1", output="step 3: refused token\n")
    by_payload = store.enqueue("c", {"note": "Refused once", "n": 1}).job_id
    store.enqueue("d", {"note": "fine"})
    found = store.list_jobs(search="refused", limit=10)
    assert [j.id for j in found] == [by_payload, by_output, by_error]
    assert store.count_jobs(search="refused") == 3
    assert [j.id for j in store.list_jobs(search="refused", state="failed")] == [
        by_output,
        by_error,
    ]
    assert store.list_jobs(search="nowhere") == []


def test_search_wildcards_match_themselves(store: Store) -> None:
    percent = _fail(store, "a", "disk 100% full")
    under = _fail(store, "a", "no such file a_b.txt")
    _fail(store, "a", "disk 1000 full; aXb.txt")
    back = _fail(store, "a", "path C:\\temp\\x")
    assert [j.id for j in store.list_jobs(search="100%")] == [percent]
    assert [j.id for j in store.list_jobs(search="a_b")] == [under]
    assert [j.id for j in store.list_jobs(search="\\temp\\")] == [back]
    assert [j.id for j in store.list_jobs(search="%")] == [percent]


def test_search_kinds_are_ored_with_the_text(store: Store) -> None:
    """The registry's commands are not in the database: the caller names the kinds whose
    command holds the word, and those jobs match too."""
    mailer = store.enqueue("mailer").job_id
    text = _fail(store, "other", "rsync: error")
    store.enqueue("third")
    found = store.list_jobs(search="rsync", search_kinds=["mailer"])
    assert [j.id for j in found] == [text, mailer]
    assert store.count_jobs(search="rsync", search_kinds=["mailer"]) == 2
    assert [
        j.id for j in store.list_jobs(search="rsync", search_kinds=["mailer"], kind="mailer")
    ] == [mailer]


def test_since_and_until_bound_the_creation_time(db_url: str, table_prefix: str) -> None:
    clock = FakeClock()
    store = open_store(db_url, table_prefix, clock=clock)
    try:
        store.create_schema()
        t0 = clock.now()
        old = store.enqueue("k").job_id
        clock.advance(3600)
        middle = store.enqueue("k").job_id
        clock.advance(3600)
        new = store.enqueue("k").job_id
        hour = timedelta(hours=1)
        assert [j.id for j in store.list_jobs(since=t0 + hour)] == [new, middle]
        assert [j.id for j in store.list_jobs(until=t0 + hour)] == [old]
        window = store.list_jobs(since=t0 + hour / 2, until=t0 + hour * 1.5)
        assert [j.id for j in window] == [middle]
        assert store.count_jobs(since=t0 + hour / 2, until=t0 + hour * 1.5) == 1
        # the id cursor pages within the filters
        assert [j.id for j in store.list_jobs(since=t0, before_id=new)] == [middle, old]
    finally:
        store.drop_schema()
        store.dispose()


def test_write_output_lands_only_on_a_job_this_worker_still_runs(store: Store) -> None:
    a = store.enqueue("k").job_id
    b = store.enqueue("k").job_id
    assert {j.id for j in store.claim(W, 2, lease=60)} == {a, b}
    assert store.write_output(W, {a: "so far ✓\n", b: "b so far\n"}) == 2
    job = store.get(a)
    assert job is not None and (job.state, job.output) == ("running", "so far ✓\n")
    # b is taken over by another worker: our late write must not touch it
    assert store.release(W, [b]) == 1
    assert [j.id for j in store.claim("w-other", 1, lease=60)] == [b]
    assert store.write_output(W, {a: "more\n", b: "late\n"}) == 1
    other = store.get(b)
    assert other is not None and other.output == "b so far\n"
    # the finish overwrites the output so far
    assert store.complete(W, [a], outputs={a: "final\n"}) == 1
    done = store.get(a)
    assert done is not None and done.output == "final\n"
    assert store.write_output(W, {a: "after the end\n"}) == 0
    assert store.write_output(W, {}) == 0
