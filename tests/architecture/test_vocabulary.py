"""Every state, outcome, mode, policy, overlap and event is spelled in ``vocabulary.py`` only.

A raw value elsewhere is a second definition that the next rename misses. The rule, checked on
every module of ``migrate_cron/`` with ``ast``: a string constant equal to a value of one of
``vocabulary``'s enums is flagged when it is

- an operand of a comparison (``==``, ``!=``, ``in``, ``not in``, ``is``), itself or as a member
  of a tuple, list or set compared against: ``spec.mode == "cron"``, ``s in ("open", "done")``;
- the value of a keyword argument, a parameter's default, an assignment's target or a dict
  literal's key when that name is a vocabulary field: ``state``, ``outcome``, ``mode``,
  ``policy``, ``overlap``, ``event``, ``status``, their plurals, or a name ending in ``_`` and
  one of them (``previous_mode``, ``notify_on`` is not one): ``outcome="skipped"``,
  ``def f(mode: str = "cron")``, ``self.state = "open"``, ``{"state": "open"}``.

Prose is not flagged: docstrings, log and error messages, help text, f-strings, and strings
passed positionally to anything but a comparison. Write the member (``Mode.CRON``) instead.
A word of another vocabulary that happens to be spelled alike (the ``enqueue`` command in an
argv, not the mode) says so on its line: ``# vocabulary: the command, not the mode``.
"""

from __future__ import annotations

import ast
import enum
import inspect
from collections.abc import Iterator
from pathlib import Path

from migrate_cron import vocabulary

PACKAGE = Path(__file__).resolve().parents[2] / "migrate_cron"
HOME = PACKAGE / "vocabulary.py"

#: Every value of every enum the vocabulary defines.
VALUES = frozenset(
    member.value
    for _, cls in inspect.getmembers(vocabulary, inspect.isclass)
    if issubclass(cls, enum.StrEnum) and cls.__module__ == vocabulary.__name__
    for member in cls
)
#: The mark of a line whose value belongs to another vocabulary (see the module docstring).
OTHER_WORD = "# vocabulary:"
FIELDS = ("state", "outcome", "mode", "policy", "overlap", "event", "status")
PLURALS = ("states", "outcomes", "modes", "policies", "overlaps", "events", "statuses")

#: Modules that other changes of issue #31 are moving or rewriting at the same time: their raw
#: values are converted (or marked as another vocabulary's word) once those land. Shrink this
#: to empty; a listed file with nothing left to flag fails the test, so it only gets shorter.
NOT_YET_CONVERTED: frozenset[str] = frozenset()


def _field(name: str | None) -> bool:
    if name is None:
        return False
    name = name.lstrip("_").lower()
    return any(name == f or name.endswith(f"_{f}") for f in (*FIELDS, *PLURALS))


def _target_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _raw(node: ast.AST | None) -> Iterator[ast.Constant]:
    """The vocabulary values ``node`` spells: itself, or the members of a tuple/list/set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in VALUES:
        yield node
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            yield from _raw(element)


def raw_values(source: str) -> list[tuple[int, str, str]]:
    """``(line, value, where)`` of each raw vocabulary value in ``source`` (see the rule)."""
    found: list[tuple[int, str, str]] = []

    def flag(node: ast.AST | None, where: str) -> None:
        found.extend((c.lineno, c.value, where) for c in _raw(node))

    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                flag(operand, "compared")
        elif isinstance(node, ast.keyword) and _field(node.arg):
            flag(node.value, f"{node.arg}=")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            pairs = [
                *zip(
                    positional[len(positional) - len(args.defaults) :], args.defaults, strict=True
                ),
                *zip(args.kwonlyargs, args.kw_defaults, strict=True),
            ]
            for arg, default in pairs:
                if _field(arg.arg):
                    flag(default, f"default of {arg.arg}")
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_field(_target_name(t)) for t in targets):
                flag(node.value, "assigned")
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and isinstance(key.value, str)
                    and _field(key.value)
                ):
                    flag(value, f"[{key.value!r}]")
    return sorted(f for f in found if OTHER_WORD not in lines[f[0] - 1])


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path != HOME:
            yield path.relative_to(PACKAGE).as_posix(), path


def test_no_raw_vocabulary_value_outside_vocabulary() -> None:
    problems = [
        f"migrate_cron/{rel}:{line}: {value!r} ({where}): use the vocabulary member"
        for rel, path in _modules()
        if rel not in NOT_YET_CONVERTED
        for line, value, where in raw_values(path.read_text())
    ]
    assert not problems, "\n".join(problems)


def test_the_not_yet_converted_list_only_names_files_with_raw_values() -> None:
    modules = dict(_modules())
    done = [
        rel
        for rel in NOT_YET_CONVERTED
        if rel not in modules or not raw_values(modules[rel].read_text())
    ]
    assert not done, f"nothing left to convert (remove from NOT_YET_CONVERTED): {sorted(done)}"


SAMPLE = '''
"""A docstring that says open, done and cron is prose."""
from migrate_cron.vocabulary import Mode

def fire(spec, mode: str = "cron", *, label: str = "done"):
    log.info("done")
    if spec.mode == "enqueue" or mode != Mode.CRON:
        record(spec, outcome="skipped")
    if job.state not in ("open", "running"):
        row = {"status": "attempted", "message": "failed"}
    spec.policy = "backfill"
    if argv[1] == "enqueue":  # vocabulary: the command, not the mode
        return f"{spec.name} is done"
'''


def test_the_rule_flags_raw_values_and_leaves_prose_alone() -> None:
    assert raw_values(SAMPLE) == [
        (5, "cron", "default of mode"),
        (7, "enqueue", "compared"),
        (8, "skipped", "outcome="),
        (9, "open", "compared"),
        (9, "running", "compared"),
        (10, "attempted", "['status']"),
        (11, "backfill", "assigned"),
    ]


def test_the_vocabulary_spells_what_the_rule_looks_for() -> None:
    assert {"open", "enqueued", "skipped", "attempted", "cron", "run-once", "wait"} <= VALUES
    assert {"retrying", "recovered", "ready", "release"} <= VALUES
