"""What a dialect's ``connector`` (the direct writer's connection) says about a URL it cannot
map exactly as SQLAlchemy does: ``Unsupported``, and the Store takes the call. Standard
library only."""

from __future__ import annotations


class Unsupported(Exception):
    """This call needs the Store (nothing was written)."""


def check_params(
    query: str, known: frozenset[str], repeatable: frozenset[str] = frozenset()
) -> list[tuple[str, str]]:
    """The query's (name, value) pairs; ``Unsupported`` unless each name is ``known`` and
    given once (``repeatable`` ones: any number of times)."""
    from urllib.parse import parse_qsl

    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise Unsupported("query string") from None
    names = [k for k, _ in pairs if k not in repeatable]
    if len(set(names)) != len(names) or not {k for k, _ in pairs} <= known:
        raise Unsupported("query parameter")
    return pairs
