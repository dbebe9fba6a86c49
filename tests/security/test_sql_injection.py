"""SQL injection: job names, kinds, refs and payloads full of quotes and SQL fragments are
stored and read back verbatim, and match only themselves — because every query is
parameterised. A static test over ``migrate_cron/`` keeps it that way: no SQL text is built
with f-strings, ``%`` or ``.format`` except a short allow-list of identifier-only cases.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from migrate_cron.store import Store
from tests.security.inprocess import TRACEBACK, invoke

HOSTILE = [
    "x' OR '1'='1",
    "'; DROP TABLE job; --",
    '" OR 1=1 --',
    "Robert'); DELETE FROM scheduled_runs; --",
    "%",
    "_",
    "a%b_c",
    "\\",
    "k\\' OR 1=1 #",
    "`id`",
    "$1",
    ":kind",
    "%(kind)s",
    "%s",
    "?",
    "{kind}",
    "0x27",
    "/* comment */ kind",
    "é ü ß 漢字 😀",
    "NULL",
    "line\nbreak\ttab",
    "trailing ",
    "x" * 200,
]

PACKAGE = Path(__file__).parents[2] / "migrate_cron"
SINKS = {"text", "exec_driver_sql", "execute", "executemany", "executescript", "literal_column"}
# Dynamic SQL text that is allowed, and why: (file, the call as written).
ALLOWED = {
    (
        "store/dialects/sqlite.py",
        "cur.execute(f'PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}')",
    ): "a module constant (int); PRAGMA takes no parameters",
    (
        "store/dialects/postgresql_listener.py",
        "self._conn.execute(f'LISTEN \"{channel}\"')",
    ): "an identifier built from the validated table prefix; LISTEN takes no parameters",
    (
        "store/schema.py",
        "text(f\"state = '{JobState.OPEN.value}'\")",
    ): "a vocabulary constant; an index's WHERE in DDL takes no parameters",
}


@pytest.fixture
def slot() -> Iterator[datetime]:
    yield datetime(2026, 1, 1, 3, 0, tzinfo=UTC)


def test_hostile_text_is_stored_verbatim_and_matches_only_itself(
    store: Store, slot: datetime
) -> None:
    decoy = store.enqueue("decoy", {"n": 0}, ref="decoy").job_id
    ids: dict[str, int] = {}
    for i, s in enumerate(HOSTILE):
        payload = {s: s, "list": [s, {"nested": s}], "n": i}
        res = store.enqueue(s, payload, ref=s)
        assert res.created, s
        ids[s] = res.job_id
        again = store.enqueue(s, {"other": True}, ref=s)  # the dedupe key is exact
        assert (again.job_id, again.created) == (res.job_id, False), s
    for i, s in enumerate(HOSTILE):
        job = store.get(ids[s])
        assert job is not None
        assert (job.kind, job.ref) == (s, s)
        assert job.payload == {s: s, "list": [s, {"nested": s}], "n": i}
        # Filters match the text, not a pattern and not a fragment of SQL.
        assert [j.id for j in store.list_jobs(kind=s)] == [ids[s]], s
        assert store.count_jobs(kind=s) == 1, s
        assert store.count_jobs(kind=s, states=["open"]) == 1, s
    # Slots: the job name is data too.
    for i, s in enumerate(HOSTILE):
        run = store.enqueue_run(s, slot + timedelta(minutes=i))
        assert run.created, s
        assert not store.enqueue_run(s, slot + timedelta(minutes=i)).created
        rows = store.runs(s)
        assert [r["job_name"] for r in rows] == [s], s
        assert store.last_run(s) == slot + timedelta(minutes=i)
    history = store.kind_history(HOSTILE)
    assert set(history) == set(HOSTILE)
    # Bulk operations by kind touch that kind only.
    s = HOSTILE[0]
    cancelled = store.cancel([ids[s]])
    assert cancelled == 1
    assert store.retry(kind=s) == 1
    assert store.get(ids[s]).state == "open"  # type: ignore[union-attr]
    # A worker restricted to a hostile kind claims exactly that kind (the job enqueued
    # with it, and its slot's job).
    claimed = store.claim("w", 100, 30, kinds=["%"])
    assert sorted(j.kind for j in claimed) == ["%", "%"]
    # Nothing was dropped, deleted or rewritten on the way.
    assert store.get(decoy).kind == "decoy"  # type: ignore[union-attr]
    total = len(HOSTILE) * 2 + 1  # each hostile kind once, its slot job once, the decoy
    assert store.count_jobs() == total


def test_the_cli_passes_hostile_filters_as_data(
    store: Store, db_url: str, table_prefix: str
) -> None:
    store.enqueue("real", {"a": 1})
    args = ["--database-url", db_url, "--table-prefix", table_prefix]
    for s in ("x' OR '1'='1", "%", "_", "'; DROP TABLE job; --"):
        r = invoke("jobs", "list", "--kind", s, "--json", *args)
        assert r.code == 0, r.err
        listed = json.loads(r.out)
        assert listed["jobs"] == [], r.out
        r = invoke("jobs", "retry", "--kind", s, "--yes", *args)
        assert r.code in (0, 1) and TRACEBACK not in r.both, r
    assert store.count_jobs() == 1
    assert store.list_jobs()[0].kind == "real"


@pytest.mark.parametrize("backend", ["mariadb"])
def test_keys_that_differ_only_in_case_or_accents_stay_distinct(
    backend: str, store: Store, slot: datetime
) -> None:
    a = store.enqueue("mail", ref="User-42")
    b = store.enqueue("mail", ref="user-42")
    c = store.enqueue("mail", ref="user-42 ")
    assert a.created and b.created and c.created
    assert store.enqueue_run("Backup", slot).created
    assert store.enqueue_run("backup", slot).created


# ---------------------------------------------------------------------- static
def _dynamic(node: ast.expr) -> bool:
    """Text built at run time from values (f-string with fields, %, +, .format, .join)."""
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
        return not (isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("format", "join", "replace")
    return False


def _sql_text_built_at_run_time() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        tree = ast.parse(path.read_text(), filename=str(path))
        for scope in [tree, *[n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]]:
            # Names assigned dynamic text in this scope (``sql = f"…"; conn.execute(sql)``).
            tainted = {
                t.id
                for n in ast.walk(scope)
                if isinstance(n, ast.Assign) and _dynamic(n.value)
                for t in n.targets
                if isinstance(t, ast.Name)
            }
            for n in ast.walk(scope):
                if not isinstance(n, ast.Call) or not n.args:
                    continue
                func = n.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name not in SINKS:
                    continue
                arg = n.args[0]
                if _dynamic(arg) or (isinstance(arg, ast.Name) and arg.id in tainted):
                    found.append((rel, ast.unparse(n)))
    return sorted(set(found))


def test_no_sql_text_is_built_from_values() -> None:
    found = _sql_text_built_at_run_time()
    unexpected = [f for f in found if f not in ALLOWED]
    assert not unexpected, "SQL built by string formatting (parameterise it):\n" + "\n".join(
        f"  {f}: {call}" for f, call in unexpected
    )
    assert set(ALLOWED) <= set(found), "allow-list entries that no longer exist: remove them"


def test_the_static_check_catches_what_it_should(tmp_path: Path) -> None:
    """The checker itself: these forms are caught, parameterised ones are not."""
    bad = [
        "conn.execute(text(f'SELECT * FROM job WHERE kind = {kind}'))",
        "conn.exec_driver_sql('DELETE FROM job WHERE id = %s' % job_id)",
        "conn.execute(text('SELECT ' + column))",
        "conn.execute(text('x = {}'.format(v)))",
        "q = f'UPDATE job SET kind = {k}'\nconn.exec_driver_sql(q)",
    ]
    good = [
        "conn.execute(text('SELECT pg_notify(:channel, :kind)'), {'channel': c, 'kind': k})",
        "conn.execute(select(job).where(job.c.kind == kind))",
    ]
    for snippet, expect in [(b, True) for b in bad] + [(g, False) for g in good]:
        tree = ast.parse(f"def f():\n    {snippet.replace(chr(10), chr(10) + '    ')}\n")
        func = tree.body[0]
        assert isinstance(func, ast.FunctionDef)
        tainted = {
            t.id
            for n in ast.walk(func)
            if isinstance(n, ast.Assign) and _dynamic(n.value)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        hits = [
            n
            for n in ast.walk(func)
            if isinstance(n, ast.Call)
            and n.args
            and (n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", ""))
            in SINKS
            and (
                _dynamic(n.args[0]) or (isinstance(n.args[0], ast.Name) and n.args[0].id in tainted)
            )
        ]
        assert bool(hits) == expect, snippet
