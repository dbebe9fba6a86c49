"""URLs as the dialects read them. What a dialect's ``connector`` (the direct writer's
connection) says about a URL it cannot map exactly as SQLAlchemy does: ``Unsupported``, and
the Store takes the call; and a host list rewritten into SQLAlchemy's form. Standard library
only."""

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


def sqlalchemy_hosts(rest: str) -> str:
    """A URL's host list (a primary and its replicas, ``Dialect.host_list``) in the form
    SQLAlchemy reads.

    libpq takes ``h1:p1,h2:p2`` after the ``@`` or in ``host=``; SQLAlchemy takes neither
    (verified, SQLAlchemy 2.1 with psycopg 3: the first fails to parse its port, the second
    reaches libpq as a host named ``h1:p1``). Its documented form ("Specifying multiple
    fallback hosts", dialects/postgresql) is one ``host=h:p`` parameter per host, which it
    hands to libpq as ``host=h1,h2 port=p1,p2``. Both spellings are rewritten to it, each host
    keeping its own port; bracketed IPv6 addresses and a ``port=`` parameter are left alone.
    """
    location, _, query = rest.partition("?")
    netloc, slash, path = location.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    params = query.split("&") if query else []
    if "," in hosts and "[" not in hosts and not any(p.startswith("host=") for p in params):
        params = [f"host={h}" for h in hosts.split(",")] + params
        location = f"{userinfo}{at}{slash}{path}"
    elif not any(p.startswith("port=") for p in params):
        params = [
            "&".join(f"host={h}" for h in p[5:].split(","))
            if p.startswith("host=") and "," in p and ":" in p and "[" not in p
            else p
            for p in params
        ]
    return f"{location}?{'&'.join(params)}" if params else location
