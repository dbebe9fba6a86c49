"""Python's cyclic garbage collector held off while parse and analysis build values in bulk."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off Python's cyclic garbage collector while bulk-building acyclic values.

    Parsing and analysing a 100,000-line crontab allocates millions of small objects (lines,
    jobs, findings) and no reference cycles; the collector would re-scan the growing heap again
    and again (a third of the CPU time of ``analyze``), and free nothing. Reference counting
    still frees everything as usual; the collector resumes afterwards if it was on.

    On the way out everything the collector tracks moves to its oldest generation (freeze, then
    unfreeze): left in the youngest, the whole bulk would be scanned at the next allocation and
    again one generation up (0.1 s after analysing 35,000 jobs) only to be promoted. Nothing is
    hidden from the collector: the oldest generation is still scanned by full collections.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
