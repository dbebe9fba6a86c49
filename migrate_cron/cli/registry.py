"""``migrate-cron registry check``: is the registry usable, every entry of it? For CI and
for the person who just edited it. Every bad entry is listed (the loader keeps each entry's
error apart, as the worker and the scheduler do), each with file:line, the job, the key and
the expected form; exit 1 when any is bad."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from migrate_cron.cli.common import JsonFlag, RegistryPath, info, print_json, reflow
from migrate_cron.config import DEFAULT_REGISTRY

if TYPE_CHECKING:
    from migrate_cron.registry import EntryError

registry_app = typer.Typer(
    help="The job registry (migrate-cron.toml): check it. Reference: docs/registry.md.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(registry_app, name="registry")


@registry_app.command("check")
def check(as_json: JsonFlag = False, registry: RegistryPath = DEFAULT_REGISTRY) -> None:
    """Load every entry as the worker would and list each one that cannot be used.

    Exit 0 when every entry loads, 1 when one or more cannot (each named with file:line,
    job, key and the form it expects), 2 when the file itself cannot be read.

    Example: migrate-cron registry check --json
    """
    from migrate_cron.registry import load_registry

    loaded = load_registry(registry, partial=True)
    errors = sorted(loaded.errors.items(), key=lambda item: (item[1].line or 0, item[0]))
    if as_json:
        print_json(
            {
                "registry": str(registry),
                "jobs": len(loaded.jobs),
                "tables": len(loaded.tables),
                "ok": not errors,
                "errors": [_error_json(name, e) for name, e in errors],
            }
        )
    else:
        for _, error in errors:
            typer.echo(f"error: {error}", err=True)
        bad = f"{len(errors)} cannot be used" if errors else "every entry loads"
        info(f"{registry}: {len(loaded.jobs)} job(s), {len(loaded.tables)} table(s); {bad}")
    if errors:
        raise typer.Exit(1)


check.__doc__ = reflow(check.__doc__)


def _error_json(name: str, error: EntryError) -> dict[str, Any]:
    return {
        "job": name,
        "file": error.path,
        "line": error.line,
        "key": error.key,
        "message": error.reason,
    }
