"""``Store``: every named operation on the queue, composed from one module per concern.

A database's Store (``dialects/*_store.py``) subclasses ``Store`` and overrides
only the hooks declared in ``base.py``. Reading the data layer of one table means reading one
file: ``jobs.py`` (the job table), ``runs.py`` (scheduled_runs), ``leases.py``, ``admin.py``
(operator changes and history), ``status.py`` (the read model of ``status``/``metrics``),
``trends.py`` (the console's charts over time), ``rollup.py``/``rolled.py`` (their long
windows from rolled-up periods) and ``effects.py`` (the side_effects ledger of
``once``).
"""

from __future__ import annotations

from migrate_cron.store.admin import AdminOps
from migrate_cron.store.effects import EffectOps
from migrate_cron.store.history import HistoryOps
from migrate_cron.store.leases import LeaseOps, PauseOps
from migrate_cron.store.rolled import OverviewOps
from migrate_cron.store.runs import RunOps


class Store(RunOps, AdminOps, HistoryOps, LeaseOps, PauseOps, OverviewOps, EffectOps):
    """Named operations on the queue. Subclasses implement the dialect hooks."""
