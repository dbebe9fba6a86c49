"""Which package may import which: the layer map of docs/architecture.md, as a table.

``test_imports.py`` finds module cycles; a package cycle (notify → worker → registry →
notify) passes it when no two *modules* close the loop, yet it ties three layers together.
This test lifts every import of ``migrate_cron/`` to its package — module-level and inside
functions alike (a lazy import is still a dependency), except under ``if TYPE_CHECKING:`` —
and fails on any edge the table does not allow, and on any package cycle.

A root module (``config.py``, ``errors.py``…) is a package of its own here. Adding a
package means adding its row: what it may use, said once, where a reviewer sees it.
"""

from __future__ import annotations

from tests.architecture.test_imports import find_cycles, import_graph

#: The plain values and files every layer may use.
BASE = frozenset({"errors", "config", "clock", "vocabulary", "logline"})

#: package -> the packages it may import (besides itself and ``BASE``).
ALLOWED: dict[str, frozenset[str]] = {
    # base: each may use the ones listed, nothing above
    "errors": frozenset(),
    "vocabulary": frozenset(),
    "logline": frozenset(),
    "clock": frozenset({"errors"}),
    "config": frozenset({"errors"}),
    # reading crontabs and judging them: no database, no registry
    "crontab": frozenset(),
    "analysis": frozenset({"crontab"}),
    # the data layer: SQL lives here and only here
    "store": frozenset(),
    # migrate-cron.toml: its spec, loader, writer and notify targets
    "registry": frozenset({"crontab", "analysis"}),  # the writer turns an analysis into entries
    # sending a worker's events: reads the registry's targets, knows nothing of the worker
    "notify": frozenset({"registry"}),
    # the cron side: enqueue a slot, spool it when the database is away, fan out refs
    "producer": frozenset({"store", "registry", "crontab"}),
    "ledger": frozenset({"store"}),
    # the long-running processes
    "scheduler": frozenset({"store", "registry", "crontab", "producer"}),
    "worker": frozenset({"store", "registry", "notify"}),
    "handlers": frozenset({"registry", "worker"}),
    # read models and exports over the store
    "ops": frozenset({"store", "registry", "crontab"}),
    "metrics": frozenset({"ops", "store"}),
    "generate": frozenset({"store"}),
    # one line at a time: plan, switch, verify
    "migration": frozenset({"analysis", "crontab", "registry", "store", "ops", "generate"}),
    # the two faces: the web console reads through the layers below, never through cli/
    "web": frozenset({"ops", "store", "registry", "migration", "crontab", "metrics"}),
    "cli": frozenset(
        {
            "analysis",
            "crontab",
            "generate",
            "ledger",
            "metrics",
            "migration",
            "notify",
            "ops",
            "producer",
            "registry",
            "scheduler",
            "store",
            "web",
            "worker",
            "handlers",
        }
    ),
}


def package_of(module: str) -> str:
    """``migrate_cron.store.jobs`` → ``store``; ``migrate_cron.config`` → ``config``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def package_graph(graph: dict[str, set[str]]) -> dict[str, dict[str, set[str]]]:
    """package -> imported package -> the modules that import it (for the message)."""
    edges: dict[str, dict[str, set[str]]] = {}
    for module, deps in graph.items():
        source = package_of(module)
        for dep in deps:
            target = package_of(dep)
            if target != source and source != "(root)":
                edges.setdefault(source, {}).setdefault(target, set()).add(f"{module} → {dep}")
    return edges


def violations(edges: dict[str, dict[str, set[str]]]) -> list[str]:
    found = []
    for source, targets in sorted(edges.items()):
        allowed = ALLOWED.get(source)
        for target, where in sorted(targets.items()):
            if allowed is None:
                found.append(f"{source}: a package the table does not know ({sorted(where)[0]})")
            elif target not in allowed and not (target in BASE and source not in BASE):
                found.append(f"{source} may not import {target}: {', '.join(sorted(where))}")
    return found


def test_the_rule_bites() -> None:
    """A worker import from notify/ — the cycle of issue 31 — is refused, with its module."""
    graph = {
        "migrate_cron.notify.sender": {"migrate_cron.worker.outcome"},
        "migrate_cron.worker.loop": {"migrate_cron.notify.sender", "migrate_cron.errors"},
        "migrate_cron.newpkg.x": set(),
    }
    graph["migrate_cron.newpkg.x"].add("migrate_cron.store.jobs")
    found = violations(package_graph(graph))
    assert found == [
        "newpkg: a package the table does not know (migrate_cron.newpkg.x → "
        "migrate_cron.store.jobs)",
        "notify may not import worker: migrate_cron.notify.sender → migrate_cron.worker.outcome",
    ]


def test_every_import_follows_the_table() -> None:
    graph = import_graph()
    edges = package_graph(graph)
    assert {package_of(m) for m in graph} - {"(root)"} <= set(ALLOWED) | {"__init__"}, (
        "a package without a row in ALLOWED"
    )
    assert violations(edges) == []


def test_packages_form_no_cycle() -> None:
    edges = package_graph(import_graph())
    packages = {source: set(targets) for source, targets in edges.items()}
    assert find_cycles(packages) == []
