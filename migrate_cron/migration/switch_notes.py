"""What changes for a job once the queue runs it, said at ``migrate`` with the registry edit
that fixes each; and the command without the tail that hides its failures (the queue would
record every failed run ``done``, never retried nor shelved)."""

from __future__ import annotations

from migrate_cron.registry import JobSpec


def what_changes(spec: JobSpec, swallow: str) -> tuple[list[str], str | None]:
    """What changes for this line once the queue runs it, each with the registry edit that
    fixes it; and the command without what hides its failures: the success-forcing tail
    unless ``swallow`` is ``keep``, the ``/dev/null`` redirections too when it is ``all``."""
    from migrate_cron.analysis.work_rules import lock_wrapper
    from migrate_cron.migration.swallow import find, strip_swallow, strip_tail

    notes: list[str] = []
    command = spec.command or ""
    new_command = None
    hidden = find(command)
    if swallow == "all" and hidden.found:
        stripped = strip_swallow(command)
        new_command = stripped if stripped != command else None
        notes.append(
            f"--strip-swallow: the registry's command becomes {stripped!r} (the crontab "
            "line keeps its text for rollback)"
            if new_command
            else f"the command hides failures ({', '.join(hidden.found)}) in a way that "
            f"cannot be cut out safely: edit `command` in [jobs.{spec.name}]"
        )
    elif swallow == "tail" and hidden.tail:
        new_command = strip_tail(command)
        if new_command is not None:
            notes.append(
                f"the command ended in `{hidden.tail}`, which reports success when it fails: "
                f"the queue would record `done`, never retry, never shelve it. The registry's "
                f"command becomes {new_command!r} (the crontab line keeps its text for "
                "rollback); --keep-swallow keeps cron's behaviour"
            )
        else:
            notes.append(
                f"the command ends in `{hidden.tail}` in a way that cannot be cut out safely: "
                f"the queue would record every failure as `done` — edit `command` in "
                f"[jobs.{spec.name}]"
            )
    elif hidden.tail:
        notes.append(
            f"--keep-swallow: the command still ends in `{hidden.tail}`: a failed run is "
            "recorded `done`, never retried nor shelved, and `verify` says so"
        )
    if hidden.nulls and swallow != "all":
        notes.append(
            f"output goes to /dev/null ({', '.join(hidden.nulls)}): a failed attempt keeps no "
            "output to read — --strip-swallow removes the redirections"
        )
    if spec.timeout is None:
        notes.append(
            f"no timeout: a hung run holds its slot until someone kills it — add "
            f"`timeout = 3600` (seconds) to [jobs.{spec.name}]"
        )
    wrapper = lock_wrapper(command)
    if wrapper and spec.max_running is None:
        notes.append(
            f"the line guards itself with {wrapper}: add `concurrency = 1` and "
            f'`overlap = "skip"` to [jobs.{spec.name}] (one run at a time over every host), '
            "then drop the wrapper"
        )
    elif wrapper:
        notes.append(
            f"{wrapper} is redundant now: at most {spec.max_running} run(s) at once over every "
            "host; drop it from `command` when you like"
        )
    return notes, new_command
