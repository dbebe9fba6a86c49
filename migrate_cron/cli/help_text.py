"""What ``--help`` adds to each command: examples at the end (Typer's ``epilog``) and the
panel it is listed under in ``migrate-cron --help`` (the journey's order, not A to Z).

Kept in one table rather than in each command module so that every command has them and a
test can check that none is missing; the names are the ones ``generate registry`` gives the
lines of ``samples/shop.crontab``, so each example can be pasted into the demo's directory.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

EXAMPLES: dict[str, tuple[str, ...]] = {
    "analyze": (
        "migrate-cron analyze /etc/crontab /etc/cron.d/*",
        "migrate-cron analyze web1:crontab-web1 web2:crontab-web2 --json > report.json",
        "crontab -l | migrate-cron analyze -",
    ),
    "explain": (
        'migrate-cron explain "30 2 * * 1-5" --tz Europe/Berlin',
        'migrate-cron explain "*/5 * * * *" --next 10 --json',
    ),
    "plan": ("migrate-cron plan shop.crontab", "migrate-cron plan shop.crontab --json"),
    "generate registry": (
        "migrate-cron generate registry shop.crontab --tz Europe/Berlin",
        "migrate-cron generate registry /etc/cron.d/reports --cron cronie",
        "migrate-cron generate registry shop.crontab --tz Europe/Berlin --force --json",
        "migrate-cron generate registry web1:/etc/cron.d/shop web2:/etc/cron.d/shop",
    ),
    "generate migration": (
        "migrate-cron generate migration",
        "migrate-cron generate migration --sql --dialect postgresql",
        "migrate-cron generate migration --claim-table notifications",
    ),
    "db upgrade": ("migrate-cron db upgrade",),
    "db downgrade": ("migrate-cron db downgrade base",),
    "db current": ("migrate-cron db current --json",),
    "migrate": (
        # --format user: a copy of `crontab -l` away from cron's spool says nothing of its
        # format (tests/cli/test_first_hour.py runs each of these as written).
        "migrate-cron migrate invoices-export --format user --to enqueue --dry-run",
        "migrate-cron migrate invoices-export --format user --to scheduler",
        "migrate-cron migrate invoices-export --cron cronie --format user --dry-run",
    ),
    "rollback": ("migrate-cron rollback invoices-export",),
    "verify": ("migrate-cron verify invoices-export", "migrate-cron verify invoices-export --json"),
    "migrations": ("migrate-cron migrations", "migrate-cron migrations --json"),
    "worker": (
        "migrate-cron worker",
        "migrate-cron worker --concurrency 4 --grace 60 --metrics-port 9465",
        "migrate-cron worker --kind invoices-export --once",
        "migrate-cron worker --table notifications --concurrency 8",
    ),
    "scheduler": ("migrate-cron scheduler", "migrate-cron scheduler --once --json"),
    "simulate": (
        "migrate-cron simulate invoices-export --down 2026-03-01T00:00..2026-03-01T06:00",
    ),
    "status": (
        "migrate-cron status",
        "migrate-cron status --check --max-age 10m",
        "migrate-cron status --json --window 24h",
    ),
    "jobs list": (
        "migrate-cron jobs list --state failed",
        "migrate-cron jobs list --kind invoices-export --json",
        "migrate-cron jobs list --ref order:8812 --since 7d",
        "migrate-cron jobs list --limit 100 --after 5120",
    ),
    "jobs show": ("migrate-cron jobs show 42", "migrate-cron jobs show 42 --tail 200"),
    "jobs retry": ("migrate-cron jobs retry 42", "migrate-cron jobs retry --kind invoices-export"),
    "cleanup": (
        "migrate-cron cleanup --done-older-than 7d --failed-older-than 90d",
        "migrate-cron cleanup --done-older-than 30d --json",
    ),
    "metrics": ("migrate-cron metrics --port 9464", "migrate-cron metrics --window 1h"),
    "web": (
        "migrate-cron web",
        "migrate-cron web --port 8081 --window 24h",
        "migrate-cron web --allow-actions  # with MIGRATE_CRON_WEB_TOKEN set",
    ),
}


#: ``migrate-cron --help`` lists commands under these panels, in this order: the journey.
PANELS: dict[str, tuple[str, ...]] = {
    "1. Read and plan": ("analyze", "explain", "plan"),
    "2. Set up": ("generate", "registry", "db"),
    "3. Move one line": ("migrate", "verify", "rollback", "migrations"),
    "4. Run": ("enqueue", "worker", "scheduler", "simulate", "spool", "once"),
    "5. Operate": ("status", "jobs", "pause", "resume", "cleanup", "metrics", "web"),
}


def add_help(app: typer.Typer, prefix: str = "") -> None:
    """Give every registered command its examples (unless it has its own) and its panel."""
    panel_of = {cmd: panel for panel, cmds in PANELS.items() for cmd in cmds}
    for info in app.registered_commands:
        name = info.name or (info.callback.__name__ if info.callback else "")
        lines = EXAMPLES.get(f"{prefix}{name}")
        if lines and not info.epilog:
            info.epilog = "Examples:\n\n" + "\n\n".join(f"  {line}" for line in lines)
        if not prefix:
            info.rich_help_panel = panel_of.get(name, info.rich_help_panel)
    for group in app.registered_groups:
        if group.typer_instance is not None and group.name:
            if not prefix:
                group.rich_help_panel = panel_of.get(group.name, group.rich_help_panel)
            add_help(group.typer_instance, f"{prefix}{group.name} ")


class JourneyGroup(TyperGroup):
    """Lists commands in the journey's order (``PANELS``): Typer shows panels in the order
    their first command comes, and it would otherwise put every group after every command."""

    def list_commands(self, ctx: Any) -> list[str]:
        order = [cmd for cmds in PANELS.values() for cmd in cmds]
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: order.index(n) if n in order else len(order))


def plain_types(command: Any) -> None:
    """Show what to type, not Python's types, in every ``--help`` of the tree.

    Typer prints each parameter's annotation: ``<bool>`` beside a flag that takes no value
    (``--help`` included), ``<list[str]>`` beside a repeatable option or a variadic argument.
    A flag shows nothing; a list its element (``<str>...``). Explicit metavars are kept.
    Called on the Click command tree before it runs; only the help text changes.
    """
    for param in getattr(command, "params", ()):
        _plain_type(param)
    original = command.get_help_option

    def get_help_option(ctx: Any) -> Any:
        option = original(ctx)
        if option is not None:
            _plain_type(option)
        return option

    command.get_help_option = get_help_option
    for sub in getattr(command, "commands", {}).values():
        plain_types(sub)


def _plain_type(param: Any) -> None:
    from typing import get_args

    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None and descriptor.is_list:
        (element,) = get_args(descriptor.annotation) or (str,)
        shown = f"<{getattr(element, '__name__', element)}>..."
        if param.param_type_name == "argument":  # a metavar would change the usage line
            param.display_type_rich = lambda ctx: shown
        elif param.metavar is None:
            param.metavar = shown
    elif param.metavar is None and getattr(param, "is_flag", False) and not param.count:
        param.metavar = ""
