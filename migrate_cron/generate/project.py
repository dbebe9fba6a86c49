"""A user's Alembic project: find the one they have, or create one (``--init``).

We go through Alembic's own ``Config`` / ``ScriptDirectory`` so their ``file_template``,
``version_locations``, ``script.py.mako`` and post-write hooks (formatters) all apply to the
revision we add, as if they had written it.
"""

from __future__ import annotations

import os
from argparse import Namespace
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING

from migrate_cron.errors import ConfigError

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

ENV_DIR = Path(__file__).with_name("alembic_env")
ENV_FILES = ("env.py", "script.py.mako", "README")
_QUIET = Namespace(quiet=True)
_NO_PROJECT_HINT = (
    "point --config at your alembic.ini or --directory at your Alembic script directory, "
    "or create a new Alembic environment with --init DIR"
)


def find_script_directory(
    cwd: Path, config_file: Path | None = None, directory: Path | None = None
) -> ScriptDirectory:
    """The user's script directory from ``--directory``, ``--config``, ./alembic.ini or
    ``[tool.alembic]`` in ./pyproject.toml, in that order."""
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    if directory is not None:
        directory = cwd / directory
        if not (directory / "script.py.mako").is_file():
            raise ConfigError(
                f"{directory} is not an Alembic script directory (no script.py.mako); "
                + _NO_PROJECT_HINT
            )
        return ScriptDirectory(str(directory), messaging_opts={"quiet": True})
    config = _load_config(cwd, config_file)
    try:
        return ScriptDirectory.from_config(config)
    except CommandError as exc:
        raise ConfigError(f"cannot use the Alembic configuration: {exc}") from None


def _load_config(cwd: Path, config_file: Path | None) -> Config:
    from alembic.config import Config

    if config_file is not None:
        ini = cwd / config_file
        if not ini.is_file():
            raise ConfigError(f"{ini} does not exist; " + _NO_PROJECT_HINT)
    else:
        ini = cwd / "alembic.ini"
    toml = cwd / "pyproject.toml"
    use_toml = toml.is_file() and _has_alembic_table(toml)
    if not ini.is_file() and not use_toml:
        raise ConfigError(
            f"no Alembic project in {cwd} (no alembic.ini, no [tool.alembic] in pyproject.toml); "
            + _NO_PROJECT_HINT
        )
    config = Config(
        file_=str(ini) if ini.is_file() else None,
        toml_file=str(toml) if use_toml else None,
        cmd_opts=_QUIET,
    )
    if not config.get_alembic_option("script_location"):
        where = ini if ini.is_file() else toml
        raise ConfigError(f"{where} sets no script_location; " + _NO_PROJECT_HINT)
    return config


def _has_alembic_table(path: Path) -> bool:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return "alembic" in data.get("tool", {})


def dialect_lines() -> dict[str, str]:
    """The ini values env.py reads instead of naming databases itself: the default URL and
    ``scheme=scheme+driver`` pairs, from the dialect table."""
    from migrate_cron.store.dialects import DEFAULT_DATABASE_URL, driver_defaults

    drivers = " ".join(f"{typed}={full}" for typed, full in driver_defaults().items())
    return {"default_url": DEFAULT_DATABASE_URL, "drivers": drivers}


def init_project(cwd: Path, directory: Path, config_file: Path | None, prefix: str) -> Path:
    """Create a working Alembic environment in ``directory`` and its alembic.ini.

    The env.py is ours (it imports only alembic and SQLAlchemy): it reads the URL from
    ``-x database_url=``, the ini, or ``MIGRATE_CRON_DATABASE_URL``, and already keeps
    autogenerate away from our tables. Returns the ini's path.
    """
    directory = cwd / directory
    ini = cwd / (config_file or Path("alembic.ini"))
    if ini.exists():
        raise ConfigError(
            f"{ini} already exists: leave out --init to add the revision to that project"
        )
    if directory.exists() and any(directory.iterdir()):
        raise ConfigError(f"{directory} exists and is not empty: --init needs a new directory")
    (directory / "versions").mkdir(parents=True, exist_ok=True)
    for name in ENV_FILES:
        (directory / name).write_bytes((ENV_DIR / name).read_bytes())
    relative = Path(os.path.relpath(directory, ini.parent)).as_posix()
    template = Template((ENV_DIR / "alembic.ini.template").read_text(encoding="utf-8"))
    ini.parent.mkdir(parents=True, exist_ok=True)
    ini.write_text(
        template.substitute(
            script_location=f"%(here)s/{relative}",
            table_prefix=prefix,
            version_table="alembic_version",
            **dialect_lines(),
        ),
        encoding="utf-8",
    )
    return ini
