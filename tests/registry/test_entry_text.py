"""New registry entries are written as text (``entry_text``) and put in place in the rendered
document (``AppendedEntries``): byte for byte what tomlkit renders for the same entries built
as tables, whatever the values hold and whatever the registry already holds."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate_cron.migration.crontab_file import crontab_lines
from migrate_cron.registry import Source
from migrate_cron.registry.entry_tables import new_entry
from migrate_cron.registry.entry_text import entry_text
from migrate_cron.registry.paths import CrontabPaths
from migrate_cron.registry.proposal import GeneratedJob
from migrate_cron.registry.writer import _merge, merge

REGISTRY_DIR = Path("/srv/registry")
text = st.text(max_size=30)
optional = st.none() | text
names = st.from_regex(r"[a-z0-9][a-z0-9-]{0,20}", fullmatch=True) | text.filter(bool)

sources = st.builds(
    Source,
    file=st.sampled_from(["/srv/registry/crontab", "/etc/cron.d/app", "/tmp/a b/c\u00e9"]),
    line=st.integers(min_value=1, max_value=10**6),
    text=text,
    user=optional,
    host=st.none() | st.sampled_from(["web1", "db-2"]),
)
#: A value for every field of GeneratedJob but ``refusal`` (a refused job is not written).
FIELDS = dict(
    name=names,
    command=text,
    schedule=text,
    timezone=text,
    sources=st.lists(sources, min_size=1, max_size=3).map(tuple),
    user=optional,
    shell=text,
    env=st.dictionaries(text, text, max_size=4),
    stdin=optional,
    cwd=optional,
    cwd_fallback=optional,
    policy=text,
    note=st.lists(text.map(lambda t: t.replace("\r", "").replace("\n", "")), max_size=4).map(
        "\n".join
    ),
    concurrency=st.none() | st.integers(min_value=0, max_value=99),
    overlap=st.none() | st.sampled_from(["skip", "wait"]),
)
jobs = st.builds(GeneratedJob, **FIELDS)


def as_table(name: str, job: GeneratedJob) -> str:
    """The entry built as a tomlkit table and rendered alone, as ``merge`` did before."""
    doc = tomlkit.document()
    holder = tomlkit.table(is_super_table=True)
    holder.append(name, new_entry(job, CrontabPaths(REGISTRY_DIR, crontab_lines)))
    doc.append("jobs", holder)
    return tomlkit.dumps(doc)


def outcome(render: object, *args: object) -> tuple[str, str]:
    """What rendering gives: its text, or the error tomlkit raises (a comment cannot hold
    every character)."""
    try:
        return "text", render(*args)  # type: ignore[operator]
    except ValueError as exc:
        return "error", type(exc).__name__


def test_every_field_of_an_entry_is_tried() -> None:
    """A field added to GeneratedJob (and to the table ``_fill`` builds) must be written as
    text too: the property below only holds for the fields it is given."""
    assert set(FIELDS) == {f.name for f in fields(GeneratedJob)} - {"refusal"}


@settings(max_examples=400, deadline=None)
@given(name=names, job=jobs)
def test_an_entry_written_as_text_is_what_tomlkit_renders_for_its_table(
    name: str, job: GeneratedJob
) -> None:
    written = outcome(entry_text, name, job, CrontabPaths(REGISTRY_DIR, crontab_lines).stored)
    assert written == outcome(as_table, name, job)


EXISTING = [
    None,
    "",
    '[jobs.old]\ncommand = "x"\n',
    '[jobs.old]\ncommand = "x"\n\n\n',
    '[jobs.old]\ncommand = "x"',
    '[jobs.old]\ncommand = "x"\n# a comment at the end\n',
    '# header\n\n[jobs]\n\n[jobs.old]\ncommand = "x"\n\n[jobs.old.source]\nfile = "c"\n',
    '[jobs.old]\ncommand = "x"\n\n[[jobs.old.sources]]\nfile = "c"\n\n[tables.t]\nx = 1\n',
    '  [jobs.old]\n  command = "x"\n',
    'top = 1\n[defaults]\npolicy = "skip"\n',
    '["jobs".old]\ncommand = "x"\n',  # the text path gives way to tables here
]


@pytest.mark.parametrize("existing", EXISTING)
def test_new_entries_land_where_tomlkit_would_put_their_tables(existing: str | None) -> None:
    proposed = [
        GeneratedJob(
            name=f"new-{i}",
            command=f"/opt/bin/task-{i}",
            schedule=f"{i} * * * *",
            timezone="UTC",
            sources=tuple(
                Source(f"/srv/registry/c{j}", i + 1, f"{i} * * * * /opt/bin/task-{i}", host=h)
                for j, h in enumerate([None] if i % 2 else ["a", "b"])
            ),
            note=f"line {i}\npolicy skip: why",
            env={"MAILTO": "ops@example.com"} if i % 3 else {},
        )
        for i in range(4)
    ]
    as_tables, actions = _merge(
        existing, proposed, [], CrontabPaths(REGISTRY_DIR, crontab_lines), False, as_text=False
    )
    assert merge(existing, proposed, [], REGISTRY_DIR, crontab_lines=crontab_lines) == (
        as_tables,
        actions,
    )
    written, _ = _merge(
        existing, proposed, [], CrontabPaths(REGISTRY_DIR, crontab_lines), False, as_text=True
    )
    assert (written is None) == (existing is not None and existing.startswith('["jobs"'))
