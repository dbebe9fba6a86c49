"""The one red ``error:`` line every command ends with when it fails.

Its own module because both entry paths print it — the full Typer CLI (``cli.app``) and the
lean ``enqueue`` path (``cli.lean``) — and the lean path must not import Rich unless it fails.
"""

from __future__ import annotations


def print_error(message: str) -> None:
    """``error: MESSAGE`` on stderr; Rich decides colour (a terminal, ``NO_COLOR`` …), so
    both paths print byte-identical lines."""
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True, soft_wrap=True).print(
        f"[red]error:[/red] {escape(message)}", highlight=False
    )
