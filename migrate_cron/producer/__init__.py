"""The producer path: what turns a cron firing or a shell pipe into queued jobs.

- ``enqueue``: one registry job's run for one slot (``enqueue NAME``), returned as a result the
  CLI says; its spool when the database is away, and the replay of what waits there.
- ``slot``: which slot a run is for (``--slot auto|ISO``).
- ``spool``: the files a slot waits in while the database is away.
- ``fanout``: one queue job per JSON line (``enqueue KIND --stdin``).

Nothing is imported here: cron's ``enqueue`` imports only the modules it uses (the write
itself is ``store.direct``'s, SQL lives in ``store/``).
"""
