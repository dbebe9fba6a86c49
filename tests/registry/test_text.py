"""``registry.load_job``: one job read from the registry's text (``registry.text``) gives
exactly what the whole file's parse gives — the entry, its error (with its line), or the
file's error — for every spelling TOML allows; where the scan cannot be sure it parses the
whole file, and says so by returning ``None``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrate_cron.errors import MigrateCronError
from migrate_cron.registry import load_job, load_registry
from migrate_cron.registry import text as registry_text


def outcome(call: Any) -> object:
    """A call's value, or its error as (type, message): what a user would see."""
    try:
        return call()
    except MigrateCronError as exc:
        return (type(exc).__name__, str(exc))


def same_as_whole_file(path: Path, name: str) -> object:
    fast = outcome(lambda: load_job(path, name))
    whole = outcome(lambda: load_registry(path, partial=True).get(name))
    assert fast == whole, (name, path.read_text())
    return fast


def scanned(text: str, name: str) -> registry_text.Found | None:
    return registry_text.find_job(text.encode(), name)


SPELLINGS = {
    "plain": '[jobs.a]\ncommand = "x"\nschedule = "*/5 * * * *"\n',
    "quoted": '[jobs."a"]\ncommand = "x"\n',
    "literal": "[jobs.'a']\ncommand = \"x\"\n",
    "blanks and comment": '[ jobs . a ]   # the a job\ncommand = "x"\n',
    "quoted jobs": '["jobs".a]\ncommand = "x"\n',
    "crlf": '[jobs.a]\r\ncommand = "x"\r\n',
    "sub-tables": (
        '[jobs.a]\ncommand = "x"\n[jobs.a.env]\nA = "1"\n[jobs.a.backoff]\nbase = 1\n'
        '[jobs.a.source]\nfile = "f"\nline = 3\ntext = "t"\n'
    ),
    "arrays of origins": (
        '[jobs.a]\ncommand = "x"\n[[jobs.a.sources]]\nfile = "f"\nline = 1\ntext = "t"\n'
        'host = "h1"\n[[jobs.a.sources]]\nfile = "f"\nline = 1\ntext = "t"\nhost = "h2"\n'
    ),
    "dotted keys inside": '[jobs.a]\ncommand = "x"\nbackoff.base = 2\nenv.A = "1"\n',
    "inline tables inside": '[jobs.a]\ncommand = "x"\nbackoff = { base = 2, cap = 9 }\n',
    "a multi-line array": '[jobs.a]\ncommand = "x"\nnotify = [\n  "mail:a@b",\n]\n',
    "defaults": '[defaults]\nmax_attempts = 7\n[defaults.env]\nB = "2"\n[jobs.a]\ncommand = "x"\n',
    "a multi-line command": '[jobs.a]\ncommand = """\necho one\n"""\n',
}


@pytest.mark.parametrize("text", SPELLINGS.values(), ids=list(SPELLINGS))
def test_every_spelling_of_a_job_is_found_and_loads_the_same(tmp_path: Path, text: str) -> None:
    path = tmp_path / "r.toml"
    other = '[jobs.a-b]\ncommand = "other"\n[jobs."a.b"]\ncommand = "dotted"\n'
    path.write_text(other + text + '[jobs.ab]\ncommand = "after"\n')
    found = scanned(path.read_text(), "a")
    assert found is not None and found.job, "the scan itself found the job's tables"
    spec = same_as_whole_file(path, "a")
    assert getattr(spec, "command", None) in ("x", "echo one\n")
    assert getattr(same_as_whole_file(path, "a.b"), "command", None) == "dotted"


LAYOUTS_THE_SCAN_LEAVES_TO_THE_PARSER = {
    "inline under [jobs]": '[jobs]\na = { command = "x" }\n',
    "dotted under [jobs]": '[jobs]\na.command = "x"\n',
    "dotted at the top": 'jobs.a.command = "x"\n',
    "inline at the top": 'jobs = { a = { command = "x" } }\n',
    "an escaped name": '[jobs."\\u0061"]\ncommand = "x"\n',
    "an array of jobs": '[[jobs.a]]\ncommand = "x"\n',
    "an unterminated string": '[jobs.a]\ncommand = "x\n',
}


@pytest.mark.parametrize(
    "text",
    LAYOUTS_THE_SCAN_LEAVES_TO_THE_PARSER.values(),
    ids=list(LAYOUTS_THE_SCAN_LEAVES_TO_THE_PARSER),
)
def test_what_the_scan_cannot_be_sure_of_goes_to_the_whole_parse(tmp_path: Path, text: str) -> None:
    path = tmp_path / "r.toml"
    path.write_text(text)
    found = scanned(text, "a")
    assert found is None or not found.job or found.text() is not None
    same_as_whole_file(path, "a")


def test_a_header_inside_another_jobs_multi_line_string_is_not_the_job(tmp_path: Path) -> None:
    text = (
        '[jobs.writer]\ncommand = "cat > /etc/x.toml"\nstdin = """\n[jobs.a]\n'
        'command = "not this"\n[jobs.b]\n"""\n[jobs.a]\ncommand = "this one"\n'
    )
    path = tmp_path / "r.toml"
    path.write_text(text)
    found = scanned(text, "a")
    assert found is not None and len(found.job) == 1
    assert getattr(same_as_whole_file(path, "a"), "command", None) == "this one"
    # Triple quotes inside one-line strings and comments open nothing.
    quiet = '[jobs.q]\ncommand = "echo \'\'\' \\"\\"\\""  # """\n[jobs.a]\ncommand = "x"\n'
    path.write_text(quiet)
    assert scanned(quiet, "a") is not None
    same_as_whole_file(path, "a")


def test_an_entry_error_names_the_line_of_its_key_both_ways(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text(
        '[jobs.a]\ncommand = "x"\n\n[jobs.b]\ncommand = "y"\n# a comment\nbackoff = 60\n'
        '[jobs.c]\ncommand = "z"\n[jobs.c.source]\nfile = "f"\nline = "three"\ntext = "t"\n'
    )
    assert same_as_whole_file(path, "b") == (
        "EntryError",
        f"{path}:7: job 'b': key 'backoff': must be a table, not 60"
        " (e.g. backoff = { base = 30, cap = 3600 })",
    )
    _kind, message = same_as_whole_file(path, "c")  # type: ignore[misc]
    assert message.startswith(f"{path}:10: job 'c': key 'source': line must be an integer")
    assert getattr(same_as_whole_file(path, "a"), "command", None) == "x"


def test_a_syntax_error_in_another_entry_does_not_stop_this_one(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text('[jobs.a]\ncommand = "x"\n[jobs.b]\ncommand = \n')
    assert load_job(path, "a").command == "x"  # the scan reads only a's table
    with pytest.raises(MigrateCronError, match="invalid TOML"):
        load_job(path, "b")


def test_cost_does_not_depend_on_what_the_other_jobs_say() -> None:
    """10,000 other jobs: the scan touches only the occurrences of the name (the benchmark in
    bench/bench_registry_lookup.py measures the time)."""
    body = "".join(f'[jobs.j{i}]\ncommand = "run {i}"\n' for i in range(10_000))
    found = registry_text.find_job((body + '[jobs.last]\ncommand = "x"\n').encode(), "last")
    assert found is not None and [t.keys for t in found.job] == [("jobs", "last")]


# ---------------------------------------------------------------------- property
_NAMES = st.sampled_from(["a", "a-b", "a.b", "b", "ab", "x:y", "defaults", "jobs"])
_VALUES = st.one_of(
    st.sampled_from(["x", "", "[jobs.a]", '"""', "'''", "a\nb", "# c", "\\", "jobs.a = 1"]),
    st.integers(-2, 70),
    st.booleans(),
)
_KEYS = st.sampled_from(
    ["command", "schedule", "max_attempts", "backoff", "env", "source", "timezone", "stdin"]
)
_TABLE = st.dictionaries(
    _KEYS,
    st.one_of(
        _VALUES,
        st.dictionaries(st.sampled_from(["base", "A", "file", "line", "text"]), _VALUES),
    ),
    max_size=4,
)


def _render(jobs: dict[str, dict[str, Any]], defaults: dict[str, Any], style: int) -> str:
    """The same document written in several TOML styles: tables, inline tables, multi-line
    strings (tomlkit's own choices), or with super-tables spelt out."""
    doc = tomlkit.document()
    if defaults:
        doc["defaults"] = defaults
    jobs_table = tomlkit.table(is_super_table=style != 1)
    for name, body in jobs.items():
        t = tomlkit.inline_table() if style == 2 else tomlkit.table()
        for k, v in body.items():
            if style == 3 and isinstance(v, str) and "\n" not in v and "'''" not in v:
                v = tomlkit.string(v, literal=True, multiline=True)
            t[k] = v
        jobs_table[name] = t
    doc["jobs"] = jobs_table
    return tomlkit.dumps(doc)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    jobs=st.dictionaries(_NAMES, _TABLE, max_size=4),
    defaults=st.dictionaries(st.sampled_from(["max_attempts", "timezone", "env"]), _VALUES),
    style=st.integers(0, 3),
)
def test_any_registry_gives_the_same_job_either_way(
    tmp_path: Path, jobs: dict[str, dict[str, Any]], defaults: dict[str, Any], style: int
) -> None:
    try:
        text = _render(jobs, defaults, style)
    except Exception:  # tomlkit cannot write that combination
        return
    path = tmp_path / "fuzz.toml"
    path.write_text(text)
    for name in [*jobs, "missing"]:
        same_as_whole_file(path, name)


def test_another_entry_s_broken_header_does_not_stop_this_one(tmp_path: Path) -> None:
    """``[jobs.b`` without its ``]``: a's cut ran into it and did not parse, so ``enqueue a``
    read the whole file and was spooled with b's syntax error (issue 30, item 4)."""
    path = tmp_path / "r.toml"
    for broken in ("[jobs.b\n", "[jobs.b]]\n", "[ jobs.b  # no bracket\n"):
        path.write_text(f'[jobs.a]\ncommand = "x"\n\n{broken}command = "y"\n')
        assert load_job(path, "a").command == "x"
        with pytest.raises(MigrateCronError, match="invalid TOML"):
            load_job(path, "b")


def test_a_cut_inside_an_array_of_arrays_reads_the_whole_file(tmp_path: Path) -> None:
    """A line opening with ``[`` inside a value ends the job's cut there; the cut does not
    parse, so the whole file gives the entry, all of it."""
    path = tmp_path / "r.toml"
    path.write_text('[jobs.a]\ncommand = "x"\nenv = { A = "1" }\nx = [\n[1, 2],\n]\n')
    found = scanned(path.read_text(), "a")
    assert found is not None and found.text() is not None
    assert same_as_whole_file(path, "a") == outcome(lambda: load_registry(path).get("a"))
