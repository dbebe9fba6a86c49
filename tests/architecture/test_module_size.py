"""No module of ``migrate_cron/`` over 400 lines unless it holds one idea, said here.

A long module that holds several ideas is read whole for every change to one of them; split
it into modules named after what each part does. A module may stay long when what it holds is
one idea (one grammar walk, one table of facts): it is then listed below with that idea, so
the next reader knows it was weighed and why it stayed. The list only shrinks: a module that
falls under the limit must leave it (the second test), so it never hides a regrowth.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "migrate_cron"
LIMIT = 400

#: Modules allowed over the limit, by path under migrate_cron/, each with why.
ALLOWED: dict[str, str] = {
    # one idea: reading tree-sitter-bash's tree into the calls a command runs (one walk over
    # the grammar's node types, with its one correction of where a redirection belongs)
    "analysis/tree.py": "one idea: the shell tree walk",
    # one idea: a line's name from its shell tree (the word tables are in naming_words.py, the
    # uniqueness across a file in unique_names.py)
    "analysis/naming.py": "one idea: one line's name from what it runs",
}


def long_modules() -> dict[str, int]:
    """Every module over the limit, by path under the package, with its line count."""
    found: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = len(path.read_text().splitlines())
        if lines > LIMIT:
            found[path.relative_to(PACKAGE).as_posix()] = lines
    return found


def test_every_long_module_is_allowed_with_a_reason() -> None:
    unlisted = {p: n for p, n in long_modules().items() if p not in ALLOWED}
    assert not unlisted, (
        f"modules over {LIMIT} lines: {unlisted}; split each by idea into modules named after "
        "what they do, or list it in ALLOWED with the one idea it holds"
    )


def test_the_allowed_list_names_only_long_modules() -> None:
    stale = sorted(set(ALLOWED) - set(long_modules()))
    assert not stale, f"no longer over {LIMIT} lines, remove from ALLOWED: {stale}"


def test_every_allowance_says_why() -> None:
    for path, reason in ALLOWED.items():
        assert reason.startswith(("one idea: ", "to split (issue 31)")), path
