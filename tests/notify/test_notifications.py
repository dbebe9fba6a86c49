"""Failure mail, webhooks and commands as a user gets them: a real SMTP server (aiosmtpd), a
real HTTP server, the installed ``migrate-cron worker`` on SQLite, PostgreSQL and MariaDB. A
dead or stalled mail server changes no outcome and does not hold the worker."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from migrate_cron.store import Store
from tests.conftest import run_cli
from tests.worker.helpers import free_port


class Inbox:
    """aiosmtpd handler: keeps every message it accepts."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        msg = message_from_bytes(envelope.content)
        self.messages.append((list(envelope.rcpt_tos), msg))
        return "250 OK"


@pytest.fixture
def smtp() -> Iterator[tuple[int, Inbox]]:
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port, inbox
    finally:
        controller.stop()


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers["Content-Length"])
            received.append(json.loads(self.rfile.read(size)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook?token=secret", received
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def stalled_smtp() -> Iterator[int]:
    """A port that accepts connections and never says a word (a hung mail server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(2)
        for conn in held:
            conn.close()
        listener.close()


def run_worker(tmp_path: Path, registry: str, db_url: str, prefix: str, *extra: str) -> Any:
    path = tmp_path / "migrate-cron.toml"
    path.write_text(registry)
    env = {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": prefix,
        "MIGRATE_CRON_REGISTRY": str(path),
    }
    return run_cli("worker", "--once", "--poll", "0.1", *extra, env=env, cwd=tmp_path, timeout=90)


def test_mail_per_final_failure_none_for_empty_mailto_and_output_mode(
    tmp_path: Path, db_url: str, table_prefix: str, store: Store, smtp: tuple[int, Inbox]
) -> None:
    port, inbox = smtp
    registry = f"""
[notify]
smtp = "smtp://127.0.0.1:{port}"
from = "cron@example.com"

[jobs.failing]
command = "echo boom-output; echo on-stderr >&2; exit 3"
env = {{ MAILTO = "ops@example.com, dev@example.com" }}
max_attempts = 2
backoff = {{ base = 0, cap = 0 }}

[jobs.quiet-failure]
command = "exit 1"
env = {{ MAILTO = "" }}
max_attempts = 1

[jobs.chatty]
command = "echo hello from chatty"
env = {{ MAILTO = "ops@example.com" }}
notify_on = ["output"]
"""
    store.enqueue("failing", None, max_attempts=2)
    store.enqueue("quiet-failure", None, max_attempts=1)
    store.enqueue("chatty", None)
    store.enqueue_run(
        "failing", datetime.fromisoformat("2026-12-03T02:30:00+00:00"), max_attempts=2
    )
    done = run_worker(tmp_path, registry, db_url, table_prefix)
    assert done.returncode == 0, done.stderr
    states = {j.kind: j.state for j in store.list_jobs(limit=100)}
    assert states == {"failing": "failed", "quiet-failure": "failed", "chatty": "done"}, done.stderr
    deadline = time.monotonic() + 10
    while len(inbox.messages) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    subjects = sorted(m["Subject"] for _, m in inbox.messages)
    # Two failing jobs (one plain, one for a slot), each mailed once — on its last attempt
    # only — to both MAILTO addresses; the MAILTO="" job to nobody; chatty for its output.
    failing = [(to, m) for to, m in inbox.messages if "failing" in m["Subject"]]
    assert len(failing) == 2, subjects
    for to, msg in failing:
        assert to == ["ops@example.com", "dev@example.com"]
        body = msg.get_payload()
        assert "exit:     3" in body and "boom-output" in body and "attempt:  2/2" in body
        assert msg["From"] == "cron@example.com"
    assert any("2026-12-03T02:30:00+00:00" in m.get_payload() for _, m in failing)
    assert not [m for _, m in inbox.messages if "quiet-failure" in m["Subject"]]
    chatty = [m for _, m in inbox.messages if "chatty" in m["Subject"]]
    assert len(chatty) == 1 and "hello from chatty" in chatty[0].get_payload()
    assert "boom-output" not in done.stderr  # the log never carries a job's output


def test_webhook_and_command_get_the_event_as_json(
    tmp_path: Path,
    db_url: str,
    table_prefix: str,
    store: Store,
    webhook: tuple[str, list[dict[str, Any]]],
) -> None:
    url, received = webhook
    sink = tmp_path / "events.jsonl"
    registry = f"""
[jobs.broken]
command = "echo partial; exit 7"
max_attempts = 1
notify = ["webhook:{url}", "command:cat >> {sink}; echo >> {sink}"]
notify_on = ["failed"]
"""
    job_id = store.enqueue("broken", None, max_attempts=1).job_id
    done = run_worker(tmp_path, registry, db_url, table_prefix)
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 10
    while not received and time.monotonic() < deadline:
        time.sleep(0.1)
    (event,) = received
    assert event["event"] == "failed" and event["job"] == "broken" and event["job_id"] == job_id
    assert event["exit_code"] == 7 and event["attempt"] == 1 and event["max_attempts"] == 1
    assert "partial" in event["output_tail"]
    assert event["show"] == f"migrate-cron jobs show {job_id}"
    (line,) = [ln for ln in sink.read_text().splitlines() if ln.strip()]
    assert json.loads(line)["exit_code"] == 7
    assert "token=secret" not in done.stderr


@pytest.mark.parametrize("server", ["refused", "stalled"])
def test_a_dead_mail_server_changes_no_outcome_and_holds_no_runner(
    tmp_path: Path,
    db_url: str,
    table_prefix: str,
    store: Store,
    stalled_smtp: int,
    server: str,
) -> None:
    port = stalled_smtp if server == "stalled" else free_port()
    registry = f"""
[notify]
smtp = "smtp://127.0.0.1:{port}"
timeout = 3

[jobs.failing]
command = "exit 2"
env = {{ MAILTO = "ops@example.com" }}
max_attempts = 1

[jobs.quick]
command = "true"
"""
    first = store.enqueue("failing", None, max_attempts=1).job_id
    # Ready at once, behind the failing job: one runner thread takes the failure first, then
    # the quick jobs — which would wait out the mail's timeout if sending held the runner. (A
    # `delay` here raced the worker's start: a fast `--once` worker exited before they were due.)
    quick = [store.enqueue("quick", None).job_id for _ in range(3)]
    started = time.monotonic()
    done = run_worker(tmp_path, registry, db_url, table_prefix, "--concurrency", "1")
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert store.get(first).state == "failed"
    assert "exit code 2" in (store.get(first).last_error or "")
    assert all(store.get(i).state == "done" for i in quick)
    # The quick jobs ran after the failure (one runner thread, the failing job first), while
    # its mail was being tried...
    failure = store.attempts(first)
    assert len(failure) == 1
    for i in quick:
        (run,) = store.attempts(i)
        assert run.started_at >= failure[0].finished_at, (run, failure)
    # ...and did not wait for it: they finished well before its timeout ran out.
    failed_at = store.get(first).finished_at
    assert failed_at is not None
    for i in quick:
        finished = store.get(i).finished_at
        assert finished is not None and (finished - failed_at).total_seconds() < 2.5
    assert "notify-failed" in done.stderr
    assert took < 60


def test_recovered_once_after_a_final_failure(
    tmp_path: Path,
    db_url: str,
    table_prefix: str,
    store: Store,
    webhook: tuple[str, list[dict[str, Any]]],
) -> None:
    url, received = webhook
    ok = tmp_path / "fixed"
    registry = f"""
[jobs.flaky]
command = "test -f {ok}"
notify = ["webhook:{url}"]
notify_on = ["failed", "recovered"]
"""
    store.enqueue("flaky", None, max_attempts=1)
    assert run_worker(tmp_path, registry, db_url, table_prefix).returncode == 0
    ok.write_text("")
    for _ in range(3):
        store.enqueue("flaky", None, max_attempts=1)
    assert run_worker(tmp_path, registry, db_url, table_prefix).returncode == 0
    deadline = time.monotonic() + 10
    while len(received) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    assert sorted(e["event"] for e in received) == ["failed", "recovered"], received


def test_failed_deliveries_are_counted_on_the_worker_metrics_port(
    tmp_path: Path, db_url: str, table_prefix: str, store: Store
) -> None:
    """A webhook nobody listens on: the job's outcome stands, the worker logs the failure and
    its /metrics counts it (scraped and parsed with prometheus-client's own parser)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    from tests.worker.helpers import spawn_cli_worker, stop_process, wait_for

    port, dead = free_port(), free_port()
    path = tmp_path / "migrate-cron.toml"
    path.write_text(
        f'[jobs.broken]\ncommand = "exit 1"\nnotify = ["webhook:http://127.0.0.1:{dead}/x"]\n'
    )
    env = {
        "MIGRATE_CRON_DATABASE_URL": db_url,
        "MIGRATE_CRON_TABLE_PREFIX": table_prefix,
        "MIGRATE_CRON_REGISTRY": str(path),
    }
    job_id = store.enqueue("broken", None, max_attempts=1).job_id
    proc, log = spawn_cli_worker(
        "--poll", "0.2", "--metrics-port", str(port), cwd=tmp_path, env=env
    )
    try:
        deadline = time.monotonic() + 30
        counted = 0.0
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    text = r.read().decode()
            except OSError:
                time.sleep(0.2)
                continue
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    if sample.name == "migrate_cron_notifications_total" and sample.labels == {
                        "transport": "webhook",
                        "result": "failed",
                    }:
                        counted = sample.value
            if counted:
                break
            time.sleep(0.2)
        # The notice goes out as the outcome is handed to the finisher; the row is written
        # a moment later. Wait for it before the SIGKILL of the clean-up.
        wait_for(lambda: store.get(job_id).state == "failed", 30, what="the failed row")
    finally:
        stop_process(proc)
    assert counted == 1.0
    assert "notify-failed" in log.read_text()


def test_bad_bytes_in_the_output_still_reach_the_mailbox(
    tmp_path: Path, db_url: str, table_prefix: str, store: Store, smtp: tuple[int, Inbox]
) -> None:
    port, inbox = smtp
    registry = f"""
[notify]
smtp = "smtp://127.0.0.1:{port}"

[jobs.binary]
command = "printf 'head\\\\000\\\\377\\\\376tail'; exit 9"
env = {{ MAILTO = "ops@example.com" }}
"""
    store.enqueue("binary", None, max_attempts=1)
    done = run_worker(tmp_path, registry, db_url, table_prefix)
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 10
    while not inbox.messages and time.monotonic() < deadline:
        time.sleep(0.1)
    ((_, msg),) = inbox.messages
    body = msg.get_payload(decode=True).decode("utf-8")
    assert "head\ufffd" in body and "tail" in body and "exit:     9" in body
