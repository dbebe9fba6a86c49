"""``migrate-cron web``: the dashboard (Starlette + Jinja2, served by uvicorn).

A layer above ``ops/``, ``migration/`` and ``store/``: every number comes from the Store's
named operations and the same read models the CLI prints (``ops.status``,
``migration.progress``, ``migration.verify``), never from SQL of its own. Nothing here is
imported unless the ``web`` command runs, so the ``enqueue`` fast path never pays for it.
"""
