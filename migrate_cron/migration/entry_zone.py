"""The zone a generated registry entry is scheduled in, and why: never changed in silence.

cron schedules a line in one zone: the daemon's (its TZ, /etc/timezone), or — on cronie only —
the ``CRON_TZ`` above the line (crontab(5): "The CRON_TZ variable specifies the time zone
specific for the cron table"). Debian's cron and busybox ignore ``CRON_TZ`` for scheduling: it
is only an environment variable there (docs/cron-flavours.md, rule 1). The entry keeps the
zone cron used:

- ``CRON_TZ`` that the cron honours: that zone;
- ``CRON_TZ`` that it ignores (or cannot read): cron ran the line in the daemon's zone, which
  a copy of the file does not tell. ``--tz`` says it; without ``--tz`` the line is refused,
  because either guess — the host's zone, the file's ``CRON_TZ`` — may move the job (unless
  both name the same zone);
- no ``CRON_TZ``: ``--tz``, else this host's zone (generate usually runs where cron runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from migrate_cron.registry.proposal import Refusal

if TYPE_CHECKING:
    from migrate_cron.crontab.entry import CrontabLine
    from migrate_cron.crontab.flavour import Flavour


@dataclass(frozen=True)
class EntryZone:
    zone: str
    #: Why this zone, for the line on stderr ("timezone Europe/Berlin for 3 job(s): …").
    reason: str


def entry_zone(
    line: CrontabLine, name: str, cron: Flavour, default_zone: str, given: bool
) -> EntryZone | Refusal:
    """The zone for ``line`` (job ``name``) read by ``cron``; ``default_zone`` is ``--tz``
    when ``given``, else this host's zone."""
    if line.timezone is not None:
        return EntryZone(line.timezone, f"CRON_TZ above them, which {cron.label} schedules in")
    asked = line.env.get("CRON_TZ")
    if asked is None:
        if given:
            return EntryZone(default_zone, "--tz")
        return EntryZone(
            default_zone, "this host's zone (pass --tz ZONE if cron runs in another zone)"
        )
    if cron.cron_tz:
        why = f"CRON_TZ={asked} is not a zone {cron.label} knows"
        runs, other = ", so it runs", "or correct CRON_TZ"
    else:
        why = f"{cron.label} ignores CRON_TZ={asked}"
        runs, other = " and runs", "or --cron cronie if cronie reads the file"
    if given:
        return EntryZone(default_zone, f"--tz: {why}, so they run in the daemon's zone")
    if asked == default_zone:  # both guesses agree: nothing can move
        return EntryZone(default_zone, f"this host's zone, the one CRON_TZ names too ({why})")
    return Refusal(
        f"job {name}: {why}{runs} this line in the daemon's zone, which the file does not say",
        f"pass --tz ZONE with the daemon's zone, --tz {default_zone} if cron runs on this "
        f"host, {other}",
    )
