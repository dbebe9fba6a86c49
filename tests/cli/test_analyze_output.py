"""What a person reads from ``analyze FILE`` (issue 29, item 6), on small crontabs of our own:
counts that agree with their nouns, no empty table, one paragraph per kind of finding, long
commands folded (never cut), next runs with their year when it is not ``--now``'s, and bytes
from the file shown escaped, never sent raw to the terminal."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.reading import kinds_said
from tests.conftest import run_cli

NOW = "2026-03-01T12:00:00Z"
NOUNS = ("file", "job", "finding", "line", "error", "warning", "kind")
# "in 1 of 1 jobs" (the parser's format reason, crontab/parser.py) is left to its owner.
COUNT = re.compile(rf"(?<!of )\b(\d[\d,]*) (?:rejected |new |more )?({'|'.join(NOUNS)})(s?)\b")

ONE_JOB = "MAILTO=ops@example.org\n10 2 * * * /opt/tools/rotate-archive --keep 7\n"
TWO_JOBS = (
    "# two jobs, both swallow their errors\n"
    "*/10 * * * * /opt/tools/pull-feed || true\n"
    "40 1 * * * /opt/tools/compact-db || true\n"
)


def analyze(
    tmp_path: Path, text: str | bytes, *args: str, columns: int = 80, name: str = "tab.cron"
) -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    done = run_cli(
        "analyze", name, "--now", NOW, "--tz", "UTC", *args,
        env={"COLUMNS": str(columns)}, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def assert_counts_agree(text: str) -> None:
    """Every "N noun" says "1 noun" or "N nouns"; nothing says "noun(s)"."""
    assert "(s)" not in text, text
    flat = re.sub(r"\s+", " ", text)
    found = COUNT.findall(flat)
    assert found, text
    for number, noun, s in found:
        assert (number == "1") == (s == ""), f"{number} {noun}{s}"


@pytest.mark.parametrize("text", [ONE_JOB, TWO_JOBS], ids=["one", "two"])
def test_counts_agree_with_their_nouns_in_the_table_and_markdown(tmp_path: Path, text: str) -> None:
    table = analyze(tmp_path, text)
    assert_counts_agree(table)
    jobs = text.count("/opt/tools/")
    assert f"tab.cron — {jobs} job{'s' if jobs > 1 else ''}, user format" in table
    assert f"Summary: 1 file, {jobs} job{'s' if jobs > 1 else ''}, 0 rejected lines" in table
    assert_counts_agree(analyze(tmp_path, text, "--markdown"))


def test_one_finding_and_one_rejected_line_are_singular(tmp_path: Path) -> None:
    out = analyze(tmp_path, "5 4 * * * /opt/tools/sweep || true\n61 * * * * /bin/true\n")
    assert_counts_agree(out)
    assert "1 rejected line;" in re.sub(r"\s+", " ", out)


def test_plan_and_generate_counts_agree(tmp_path: Path) -> None:
    (tmp_path / "tab.cron").write_text(ONE_JOB + "61 * * * * /bin/true\n")
    plan = run_cli("plan", "tab.cron", env={"COLUMNS": "80"}, cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert_counts_agree(plan.stdout)
    assert "— 1 job" in plan.stdout
    generate = run_cli("generate", "registry", "tab.cron", cwd=tmp_path)
    assert generate.returncode == 1  # the rejected line
    message = re.sub(r"\s+", " ", generate.stderr)
    assert "1 new job;" in message
    assert "1 line is not valid crontab syntax and was not taken" in message
    assert "(s)" not in message


def test_a_file_without_job_lines_prints_a_sentence_not_an_empty_table(tmp_path: Path) -> None:
    out = analyze(tmp_path, "# retired: everything moved to the queue\nMAILTO=root\n\n")
    assert "tab.cron — no job lines (only comments, settings or blank lines: 3 lines)" in out
    assert not re.search(r"[┃━┏]", out) and "Line " not in out
    assert "No findings." in out
    md = analyze(tmp_path, "# nothing\n", "--markdown")
    assert "no job lines" in md and "| Line |" not in md


PROSE = "Notes for the night shift\nrestart the exporter when it hangs\nthen call Sam\n"


def test_a_file_of_rejected_lines_says_so_and_lists_them(tmp_path: Path) -> None:
    out = analyze(tmp_path, PROSE, name="notes.txt")
    flat = re.sub(r"\s+", " ", out)
    assert "notes.txt — no job lines: cron rejects 3 of its 3 lines (see the findings)" in flat
    assert not re.search(r"[┃━┏]", out)
    assert set().union(*kinds_said(out, "notes.txt").values()) == {1, 2, 3}


def test_a_file_without_job_lines_still_shows_its_file_level_findings(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text(PROSE)
    (tmp_path / "tab.cron").write_text(ONE_JOB)
    done = run_cli(
        "analyze", "notes.txt", "tab.cron", "--now", NOW, env={"COLUMNS": "80"}, cwd=tmp_path
    )
    flat = re.sub(r"\s+", " ", done.stdout)
    assert "notes.txt — no job lines: CRON IGNORES THIS WHOLE FILE" in flat
    assert "tab.cron — 1 job, user format" in flat
    assert kinds_said(done.stdout, "notes.txt") == {"syntax/not-a-crontab": {0}}


SWALLOWING = "\n".join(
    [
        "MAILTO=ops@example.org",
        "",
        "0 1 * * * /opt/tools/export-a || true",  # line 3
        "# comment",
        "5 1 * * * /opt/tools/export-b || true",  # line 5
        "",
        "# three pollers at different rates",
        "*/2 * * * * /opt/tools/poll-queue",
        "0 2 * * * /opt/tools/export-c || true",  # line 9
        "0 3 * * * /opt/tools/export-d || true",
        "0 4 * * * /opt/tools/export-e || true",
        "0 5 * * * /opt/tools/export-f || true",  # line 12
        "* * * * * /opt/tools/poll-inbox",
        "*/3 * * * * /opt/tools/poll-outbox",
        "",
    ]
)


def test_one_paragraph_per_kind_with_its_lines(tmp_path: Path) -> None:
    out = analyze(tmp_path, SWALLOWING)
    doc = json.loads(analyze(tmp_path, SWALLOWING, "--json"))
    said = kinds_said(out, "tab.cron")
    assert said["errors-swallowed"] == {3, 5, 9, 10, 11, 12}
    assert said["poll"] == {8, 13, 14}
    flat = re.sub(r"\s+", " ", out)
    assert "errors-swallowed — tab.cron lines 3, 5, 9-12" in flat
    for rule in ("errors-swallowed", "poll"):
        fixes = {f["fix"] for e in doc["entries"] for f in e["findings"] if f["rule"] == rule}
        (fix,) = fixes
        explanation = doc["rules"][rule]["explanation"]
        # The shared explanation and fix are printed once for all the rule's lines.
        assert flat.count(" ".join(fix.split())) == 1, rule
        assert flat.count(" ".join(explanation.split())) == 1, rule
    # The same message on six lines is said once; the pollers' own messages stay per line.
    swallowed = {
        f["message"]
        for e in doc["entries"]
        for f in e["findings"]
        if f["rule"] == "errors-swallowed"
    }
    (message,) = swallowed
    assert flat.count(" ".join(message.split())) == 1
    polls = [
        (e["line"], f["message"])
        for e in doc["entries"]
        for f in e["findings"]
        if f["rule"] == "poll"
    ]
    assert len({m for _, m in polls}) == 3
    for line, message in polls:
        assert f"line {line}: {' '.join(message.split())}" in flat


def test_findings_are_grouped_in_markdown_too(tmp_path: Path) -> None:
    md = analyze(tmp_path, SWALLOWING, "--markdown")
    assert "### warning `errors-swallowed` — tab.cron lines 3, 5, 9-12" in md
    assert md.count("Fix: remove '\\|\\| true'") == 1


LONG = (
    "15 3 * * * cd /srv/reports && /usr/local/bin/build-report --tenant all --format pdf "
    "--since yesterday --until today --include-archived --compress gzip --retries 3 "
    "--output /srv/reports/out/nightly-$(date +\\%F).pdf --notify ops@example.org "
    "--template /srv/reports/templates/quarterly-summary.tpl >> /var/log/reports/nightly.log 2>&1\n"
)


@pytest.mark.parametrize("columns", [80, 120])
def test_a_long_command_is_folded_never_cut(tmp_path: Path, columns: int) -> None:
    out = analyze(tmp_path, LONG, columns=columns)
    lines = out.splitlines()
    assert all(len(line) <= columns for line in lines), max(lines, key=len)
    assert "…" not in out
    command = LONG.split(" ", 5)[5].strip()
    # Every word of the command is there, in order, the redirection at its end included.
    words = [w for w in re.split(r"[\s│┃]+", out) if w]
    at = 0
    for word in command.split():
        at = words.index(word, at) + 1
    assert ">>" in words and "/var/log/reports/nightly.log" in words


def test_markdown_keeps_the_whole_command(tmp_path: Path) -> None:
    md = analyze(tmp_path, LONG, "--markdown")
    assert ">> /var/log/reports/nightly.log 2>&1`" in md


def run_at(tmp_path: Path, text: str, now: str, tz: str = "UTC") -> str:
    (tmp_path / "tab.cron").write_text(text)
    done = run_cli(
        "analyze", "tab.cron", "--now", now, "--tz", tz, env={"COLUMNS": "120"}, cwd=tmp_path
    )
    return re.sub(r"\s+", " ", done.stdout)


def test_a_next_run_in_another_year_shows_the_year(tmp_path: Path) -> None:
    flat = run_at(
        tmp_path, "0 3 5 1 * /opt/tools/close-year\n0 23 * * * /opt/tools/nightly\n",
        "2026-12-30T12:00:00Z",
    )  # fmt: skip
    assert "Tue 5 Jan 2027 03:00" in flat
    assert "Wed 30 Dec 23:00" in flat and "Dec 2026" not in flat


def test_the_year_is_compared_in_the_job_s_zone(tmp_path: Path) -> None:
    # 12:00 UTC on 31 December is already 1 January 2027 in Auckland: no year to show.
    flat = run_at(
        tmp_path, "0 3 * * * /opt/tools/nightly\n", "2026-12-31T12:00:00Z", "Pacific/Auckland"
    )
    assert "Fri 1 Jan 03:00" in flat and "2027 03:00" not in flat


BAD = (
    b"0 3 * * * echo caf\xe9 > /tmp/menu 2>&1\n"
    b"5 3 * * * printf '\x1b[2J\x1b]0;pwned\x07' | logger -t x\n"
    b"10 3 * * * /opt/tools/sync \xe2\x80\xae--dry-run || true\n"
    b"15 3 * * * echo back\x08space\x0b\n"
)
RAW = ("\x1b", "\x07", "\x08", "\x0b", "\u202e", "\udce9")


def assert_escaped(text: str) -> None:
    for raw in RAW:
        assert raw not in text, repr(raw)


@pytest.mark.parametrize("args", [(), ("--markdown",)], ids=["table", "markdown"])
@pytest.mark.parametrize("columns", [80, 200])
def test_bad_bytes_and_control_characters_are_shown_escaped(
    tmp_path: Path, args: tuple[str, ...], columns: int
) -> None:
    (tmp_path / "bad.cron").write_bytes(BAD)
    done = run_cli(
        "analyze", "bad.cron", "--now", NOW, *args,
        env={"COLUMNS": str(columns)}, cwd=tmp_path,
    )  # fmt: skip
    # Decoded as the terminal would see it (an undecodable byte would come back as \udcXX).
    out = done.stdout.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
    assert_escaped(out)
    flat = re.sub(r"\s+", "", out)
    for shown in ("caf\\xe9", "\\x1b[2J\\x1b]0;pwned\\x07", "\\u202e--dry-run", "back\\x08space"):
        assert shown in flat, shown


def test_plan_and_generate_show_bad_bytes_escaped(tmp_path: Path) -> None:
    (tmp_path / "bad.cron").write_bytes(BAD)
    plan = run_cli("plan", "bad.cron", env={"COLUMNS": "80"}, cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert_escaped(plan.stdout + plan.stderr)
    generate = run_cli("generate", "registry", "bad.cron", cwd=tmp_path)
    assert generate.returncode == 1, generate.stderr  # the registry cannot hold line 1
    assert "bad.cron:1: not registered: byte 0xE9 (column 19) is not UTF-8" in generate.stderr
    assert_escaped(generate.stdout + generate.stderr)
