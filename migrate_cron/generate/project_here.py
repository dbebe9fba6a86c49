"""Whether the directory a command runs in holds an Alembic project with our revisions
(``generate migration`` wrote them), before its ``alembic upgrade head`` made the tables.

There ``migrate-cron db upgrade`` would make the tables through our packaged revision, and the
project's own ``alembic upgrade head`` would then fail on "table already exists": the two ways
to the tables trap each other (issue 32). ``db current`` reads this to advise the project's
way instead of ours.
"""

from __future__ import annotations

import configparser
from pathlib import Path

from migrate_cron.generate.revision import SCHEMA_VERSION, revision_id


def own_project_revisions(prefix: str, directory: Path | None = None) -> Path | None:
    """The versions directory of ``./alembic.ini``'s project when it holds one of our
    revisions for ``prefix``; None when there is no such project (or it cannot be read)."""
    here = directory or Path.cwd()
    ini = here / "alembic.ini"
    if not ini.is_file():
        return None
    parser = configparser.RawConfigParser()
    try:
        parser.read(ini, encoding="utf-8")
        location = parser.get("alembic", "script_location")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    versions = here / location.replace("%(here)s", str(here)) / "versions"
    ours = {revision_id(prefix, v) for v in range(1, SCHEMA_VERSION + 1)}
    try:
        names = [p.name for p in versions.iterdir()]
    except OSError:
        return None
    return versions if any(n.split("_", 1)[0] in ours for n in names) else None
