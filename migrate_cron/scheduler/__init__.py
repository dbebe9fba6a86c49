"""The scheduler: turns each job's schedule into enqueued runs, once per slot.

- ``policy``: what to do with the slots between the last recorded one and now (pure).
- ``scheduler``: a heap of each job's next due slot; one ``tick`` writes what is due.
- ``leader``: the lease that lets one of several scheduler processes act.
- ``loop``: sleeping until the next due slot, renewing the lease, surviving outages, SIGTERM.
- ``ledger``: an in-memory run ledger, for ``simulate`` and for what-if runs.
- ``simulate``: what each policy would enqueue and skip for a given downtime.
"""

from __future__ import annotations
