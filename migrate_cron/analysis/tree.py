"""A crontab command read with a real shell grammar: the simple commands it runs, in order,
with the redirections that reach each one, the variables it expands and sets, and whether it
runs anything at all.

The grammar is tree-sitter-bash (a maintained parser with binary wheels: ~6 µs a command here,
against ~270 µs for bashlex, which a 100,000-line crontab cannot afford). Its one known
difference from bash on cron lines is corrected here: tree-sitter hangs a trailing redirection
on the whole ``a && b >x`` list or ``a | b >x`` pipeline, where bash gives it to the last
command alone (tests/analysis/test_tree.py checks each case of the table against bash itself).

Nothing is expanded or run. A word's ``value`` has its quotes and backslashes removed when it
is literal; a word with an expansion keeps its source text and ``literal`` is false.
``sh -c BODY``-style wrappers are parsed again by :mod:`migrate_cron.analysis.wrappers`, which
calls back into :func:`parse`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

#: How deep ``sh -c '…'`` bodies are parsed again (a body quoting another body…).
MAX_DEPTH = 4


@dataclass(frozen=True, slots=True)
class Word:
    value: str  # quotes removed when literal, else the source text
    raw: str  # as written
    literal: bool


@dataclass(frozen=True, slots=True)
class Redirect:
    """One redirection as written. ``fd`` is the descriptor it changes (None: the operator's
    default, 1 for output and 0 for input); ``op`` the operator (``>``, ``>>``, ``>&``, ``&>``,
    ``&>>``, ``<``, ``<<``, ``<<<``, ``>|``); ``target`` the word after it."""

    fd: int | None
    op: str
    target: str
    raw: str
    #: Where it is written, in bytes of the command's UTF-8 text (what an edit cuts out).
    span: tuple[int, int] = field(default=(0, 0), compare=False)

    @property
    def is_output(self) -> bool:
        return ">" in self.op and not self.op.startswith("|")


@dataclass(frozen=True, slots=True)
class Call:
    """One simple command and what surrounds it.

    ``chain`` is every redirection that reaches it, in the order the shell applies them: the
    enclosing groups' and subshells' first, its own last. ``piped`` says its stdout goes into
    a pipe (it is not the last command of a pipeline). ``joined`` is the operator before it in
    its list (``""`` for the first, ``;``, ``&&``, ``||``, ``&``, ``|``); ``background`` that a
    ``&`` ends it. ``substituted`` marks commands inside ``$(…)``, whose output is a value,
    not the job's output.
    """

    words: tuple[Word, ...]
    assignments: tuple[tuple[str, str], ...]
    chain: tuple[Redirect, ...]
    piped: bool = False
    joined: str = ""
    background: bool = False
    substituted: bool = False
    negated: bool = False
    last: bool = False  # the last command of the top-level list: its status is the line's
    text: str = ""
    #: Where the command is written, in bytes of the command's UTF-8 text.
    span: tuple[int, int] = field(default=(0, 0), compare=False)

    @property
    def argv(self) -> tuple[str, ...]:
        return tuple(w.value for w in self.words)


@dataclass(frozen=True, slots=True)
class Script:
    """A parsed command. ``calls`` in source order (those of ``$(…)`` included, marked);
    ``expanded`` the variables it reads as ``(name, has_default)``; ``assigned`` the names it
    sets itself; ``comment_only`` that the shell sees nothing but a comment; ``broken`` that the
    grammar found an error (an unclosed quote, a stray operator)."""

    text: str
    calls: tuple[Call, ...]
    expanded: tuple[tuple[str, bool], ...]
    assigned: frozenset[str]
    comment_only: bool
    broken: bool
    ends_background: bool
    redirect_ops: tuple[tuple[str, str], ...] = field(default=())  # (op, word before it)
    #: What the readers derive from the script (its work calls, fates, paths), kept with it:
    #: a 100,000-line crontab asks each several times per line.
    memo: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def top(self) -> tuple[Call, ...]:
        """The commands the job's own output and status come from (not in ``$(…)``)."""
        return tuple(c for c in self.calls if not c.substituted)


@lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


@lru_cache(maxsize=65536)
def parse(text: str) -> Script:
    """The command ``text`` (what cron hands the shell, after its ``%`` split) as a Script."""
    data = text.encode("utf-8", "surrogateescape")
    root = _parser().parse(data).root_node
    walk = _Walk(data)
    walk.statements(root, (), top=True)
    comment_only = not walk.calls and any(c.type == "comment" for c in root.children)
    if walk.calls:
        # The line's status is that of the last command run at the top level.
        top = [i for i, c in enumerate(walk.calls) if not c.substituted]
        if top:
            i = top[-1]
            walk.calls[i] = _with(walk.calls[i], last=True)
    return Script(
        text=text,
        calls=tuple(walk.calls),
        expanded=tuple(dict.fromkeys(walk.expanded)),
        assigned=frozenset(walk.assigned),
        comment_only=comment_only,
        broken=root.has_error,
        ends_background=walk.ends_background,
        redirect_ops=tuple(walk.redirect_ops),
    )


def _with(call: Call, **changes: Any) -> Call:
    from dataclasses import replace

    return replace(call, **changes)


#: Where a pipe takes a command's stdout (``|``) or both streams (``|&``), placed in the chain
#: where the shell sets it up: after the enclosing groups' redirections, before the command's.
PIPE = Redirect(1, "|", "pipe", "|")
PIPE_BOTH = Redirect(None, "|&", "pipe", "|&")

_DEFAULT_OPS = frozenset((":-", "-", ":=", "=", ":+", "+", ":?", "?"))


class _Walk:
    """One pass over the tree, collecting calls with the redirections that reach them."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.calls: list[Call] = []
        self.expanded: list[tuple[str, bool]] = []
        self.assigned: set[str] = set()
        self.ends_background = False
        self.redirect_ops: list[tuple[str, str]] = []

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")

    # -- statements ---------------------------------------------------------------------

    def statements(
        self,
        node: Node,
        chain: tuple[Redirect, ...],
        *,
        top: bool = False,
        sub: bool = False,
        joined: str = "",
    ) -> None:
        """The children of a program, group, subshell or body: statements joined by ``;``,
        ``&`` or newlines; the first is joined to what came before by ``joined`` (``a || (b;
        c)``: ``b`` runs only when ``a`` fails)."""
        children = node.children
        for i, child in enumerate(children):
            kind = child.type
            if kind in (";", "\n", ";;"):
                joined = ";"
                continue
            if kind == "&":
                self._mark_background()
                if (top and i == len(children) - 1) or (
                    top and all(c.type in ("&", ";", "comment") for c in children[i:])
                ):
                    self.ends_background = True
                joined = "&"
                continue
            if kind == "comment" or not child.is_named:
                if kind == "ERROR":
                    self._error(child, chain, sub)
                continue
            before = len(self.calls)
            self.statement(child, chain, joined, sub=sub)
            joined = ";"
            if len(self.calls) == before + 1 and self.calls[-1].argv == ("exec",):
                # `exec >FILE` with no command moves the shell's own streams: every later
                # command of this list writes there.
                chain = self.calls[-1].chain

    def _mark_background(self) -> None:
        if self.calls:
            self.calls[-1] = _with(self.calls[-1], background=True)

    def _error(self, node: Node, chain: tuple[Redirect, ...], sub: bool) -> None:
        for child in node.children:
            if child.type in ("&>", "&>>", ">&", ">", ">>"):
                self.redirect_ops.append((child.type, self._digits_before(child.start_byte)))
            elif child.is_named:
                self._expansions(child)

    def statement(
        self,
        node: Node,
        chain: tuple[Redirect, ...],
        joined: str,
        *,
        piped: bool = False,
        sub: bool = False,
        negated: bool = False,
    ) -> None:
        kind = node.type
        if kind == "command":
            self.command(node, chain, joined, piped=piped, sub=sub, negated=negated)
        elif kind == "redirected_statement":
            self.redirected(node, chain, joined, piped=piped, sub=sub)
        elif kind == "list":
            self.list_(node, chain, joined, sub=sub)
        elif kind == "pipeline":
            self.pipeline(node, chain, joined, sub=sub)
        elif kind == "negated_command":
            for child in node.named_children:
                self.statement(child, chain, joined, piped=piped, sub=sub, negated=True)
        elif kind in ("subshell", "compound_statement", "do_group"):
            self.statements(node, chain, sub=sub, joined=joined)
        elif kind in ("variable_assignment", "variable_assignments"):
            self._assignments(node)
            self.calls.append(
                Call(
                    (),
                    self._assign_pairs(node),
                    chain,
                    piped,
                    joined,
                    substituted=sub,
                    text=self.text(node),
                )
            )
        elif kind == "declaration_command":
            self._declaration(node, chain, joined, sub)
        elif kind == "ERROR":
            self._error(node, chain, sub)
        else:
            # if/while/for/case/function/test/unset: their bodies are statements too.
            if kind == "for_statement":
                variable = node.child_by_field_name("variable")
                if variable is not None:
                    self.assigned.add(self.text(variable))
            if kind == "test_command":
                self._expansions(node)
                # `[ … ]` / `[[ … ]]`: its words as written (the analysis needs only the
                # paths and operators a test names).
                words = tuple(Word(w.strip("\"'"), w, True) for w in self.text(node).split())
                self.calls.append(
                    Call(
                        words,
                        (),
                        chain,
                        piped,
                        joined,
                        substituted=sub,
                        text=self.text(node),
                    )
                )
                return
            for child in node.named_children:
                if child.type in (
                    "command",
                    "redirected_statement",
                    "list",
                    "pipeline",
                    "subshell",
                    "compound_statement",
                    "do_group",
                    "negated_command",
                    "if_statement",
                    "while_statement",
                    "for_statement",
                    "case_statement",
                    "elif_clause",
                    "else_clause",
                    "case_item",
                    "test_command",
                    "variable_assignment",
                    "declaration_command",
                ):
                    self.statement(child, chain, joined, sub=sub)
                else:
                    self._expansions(child)

    def redirected(
        self, node: Node, chain: tuple[Redirect, ...], joined: str, *, piped: bool, sub: bool
    ) -> None:
        body = node.child_by_field_name("body")
        redirects = tuple(
            self.redirect(child) for child in node.children if child.type.endswith("redirect")
        )
        for child in node.children:
            if child.type.endswith("redirect"):
                self._expansions(child)
        if body is None:  # a redirection alone (`&2>/dev/null` read as `&` then `2>…`)
            self.calls.append(
                Call(
                    (),
                    (),
                    chain + redirects,
                    piped,
                    joined,
                    substituted=sub,
                    text=self.text(node),
                    span=(node.start_byte, node.end_byte),
                )
            )
            return
        if body.type in ("list", "pipeline"):
            # bash gives a redirection after `a && b` or `a | b` to the last command only.
            self._last_gets(body, chain, redirects, joined, sub)
            return
        self.statement(body, chain + redirects, joined, piped=piped, sub=sub)

    def _last_gets(
        self,
        body: Node,
        chain: tuple[Redirect, ...],
        redirects: tuple[Redirect, ...],
        joined: str,
        sub: bool,
    ) -> None:
        parts = [c for c in body.children if c.is_named and c.type != "comment"]
        if body.type == "pipeline":
            pipes = _pipe_ops(body)
            for i, part in enumerate(parts):
                last = i == len(parts) - 1
                extra = redirects if last else ()
                inner = chain if last else (*chain, pipes[i])
                self._element(part, inner, extra, joined if i == 0 else "|", not last, sub)
            return
        ops = [c.type for c in body.children if not c.is_named]
        for i, part in enumerate(parts):
            op = joined if i == 0 else (ops[i - 1] if i - 1 < len(ops) else ";")
            extra = redirects if i == len(parts) - 1 else ()
            self._element(part, chain, extra, op, False, sub)

    def _element(
        self,
        part: Node,
        chain: tuple[Redirect, ...],
        extra: tuple[Redirect, ...],
        joined: str,
        piped: bool,
        sub: bool,
    ) -> None:
        if extra and part.type in ("list", "pipeline"):
            self._last_gets(part, chain, extra, joined, sub)
        elif extra and part.type == "command":
            self.command(part, chain, joined, piped=piped, sub=sub, after=extra)
        elif extra and part.type == "redirected_statement":
            before = len(self.calls)
            self.redirected(part, chain, joined, piped=piped, sub=sub)
            for i in range(before, len(self.calls)):
                call = self.calls[i]
                if not call.substituted:
                    self.calls[i] = _with(call, chain=call.chain + extra)
        else:
            self.statement(part, chain + extra, joined, piped=piped, sub=sub)

    def list_(self, node: Node, chain: tuple[Redirect, ...], joined: str, *, sub: bool) -> None:
        op = joined
        for child in node.children:
            if not child.is_named:
                op = child.type
                continue
            if child.type == "comment":
                continue
            self.statement(child, chain, op, sub=sub)

    def pipeline(self, node: Node, chain: tuple[Redirect, ...], joined: str, *, sub: bool) -> None:
        parts = [c for c in node.children if c.is_named and c.type != "comment"]
        pipes = _pipe_ops(node)
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            self.statement(
                part,
                chain if last else (*chain, pipes[i]),
                joined if i == 0 else "|",
                piped=not last,
                sub=sub,
            )

    # -- simple commands ----------------------------------------------------------------

    def command(
        self,
        node: Node,
        chain: tuple[Redirect, ...],
        joined: str,
        *,
        piped: bool = False,
        sub: bool = False,
        negated: bool = False,
        after: tuple[Redirect, ...] = (),
    ) -> None:
        words: list[Word] = []
        assignments: list[tuple[str, str]] = []
        own: list[Redirect] = []
        for child in node.children:
            kind = child.type
            if kind == "variable_assignment":
                assignments.extend(self._assign_pairs(child))
                self._expansions(child)
            elif kind.endswith("redirect"):
                own.append(self.redirect(child))
                self._expansions(child)
            elif kind == "command_name":
                for part in child.named_children:
                    words.append(self.word(part))
                self._expansions(child)
            elif child.is_named and kind != "comment":
                words.append(self.word(child))
                self._expansions(child)
        name = words[0].value if words else ""
        if name == "read":
            self.assigned.update(w.value for w in words[1:] if not w.value.startswith("-"))
        self.calls.append(
            Call(
                tuple(words),
                tuple(assignments),
                chain + tuple(own) + after,
                piped,
                joined,
                substituted=sub,
                negated=negated,
                text=self.text(node),
                span=(node.start_byte, node.end_byte),
            )
        )

    def _declaration(self, node: Node, chain: tuple[Redirect, ...], joined: str, sub: bool) -> None:
        words = [Word(self.text(node.children[0]), self.text(node.children[0]), True)]
        pairs: list[tuple[str, str]] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                pairs.extend(self._assign_pairs(child))
                self._expansions(child)
            elif child.type == "variable_name":
                self.assigned.add(self.text(child))
                words.append(self.word(child))
            else:
                words.append(self.word(child))
                self._expansions(child)
        self.calls.append(
            Call(
                tuple(words),
                tuple(pairs),
                chain,
                False,
                joined,
                substituted=sub,
                text=self.text(node),
                span=(node.start_byte, node.end_byte),
            )
        )

    def _assignments(self, node: Node) -> None:
        self._assign_pairs(node)
        self._expansions(node)

    def _assign_pairs(self, node: Node) -> tuple[tuple[str, str], ...]:
        nodes = (
            [node]
            if node.type == "variable_assignment"
            else [c for c in node.named_children if c.type == "variable_assignment"]
        )
        pairs = []
        for item in nodes:
            name = item.child_by_field_name("name")
            value = item.child_by_field_name("value")
            if name is None:
                continue
            key = self.text(name)
            self.assigned.add(key)
            pairs.append((key, self.word(value).value if value is not None else ""))
        return tuple(pairs)

    def redirect(self, node: Node) -> Redirect:
        fd: int | None = None
        op = ""
        target = ""
        for child in node.children:
            if child.type == "file_descriptor":
                text = self.text(child)
                fd = int(text) if text.isdigit() else None
            elif not child.is_named:
                op = child.type
            elif child.type not in ("heredoc_body", "heredoc_end", "heredoc_start"):
                target = self.word(child).value
        if node.type == "herestring_redirect":
            op = "<<<"
        elif node.type == "heredoc_redirect":
            op = "<<"
        self.redirect_ops.append((op, self._digits_before(node.start_byte)))
        return Redirect(fd, op, target, self.text(node), (node.start_byte, node.end_byte))

    def _digits_before(self, start: int) -> str:
        """The word glued to an operator's left, when it is a number (``2&>``: dash reads
        ``2`` as an argument, then ``&``)."""
        end = start
        while start > 0 and self.data[start - 1 : start].isdigit():
            start -= 1
        if start == end or (start > 0 and self.data[start - 1 : start] not in (b" ", b"\t")):
            return ""
        return self.data[start:end].decode()

    # -- words --------------------------------------------------------------------------

    def word(self, node: Node) -> Word:
        raw = self.text(node)
        kind = node.type
        if kind in ("word", "number"):
            if "\\" in raw:
                return Word(_unescape(raw), raw, True)
            return Word(raw, raw, True)
        if kind == "raw_string":
            return Word(raw[1:-1], raw, True)
        if kind == "string":
            parts = node.named_children
            if all(p.type == "string_content" for p in parts):
                inner = "".join(self.text(p) for p in parts)
                return Word(_unescape_double(inner), raw, True)
            return Word(raw, raw, False)
        if kind == "concatenation":
            pieces = [self.word(p) for p in node.named_children]
            # A concatenation may skip unnamed text between named parts: re-read it.
            if all(p.literal for p in pieces) and len(raw) == sum(len(p.raw) for p in pieces):
                return Word("".join(p.value for p in pieces), raw, True)
            return Word(raw, raw, False)
        return Word(raw, raw, False)

    def _expansions(self, node: Node) -> None:
        """Variables read and commands substituted anywhere below ``node``."""
        stack = [node]
        while stack:
            item = stack.pop()
            kind = item.type
            if kind == "simple_expansion":
                for child in item.named_children:
                    if child.type in ("variable_name", "special_variable_name"):
                        self.expanded.append((self.text(child), False))
                continue
            if kind == "expansion":
                name = next((c for c in item.named_children if c.type == "variable_name"), None)
                if name is not None:
                    op = item.child_by_field_name("operator")
                    has_default = op is not None and self.text(op) in _DEFAULT_OPS
                    self.expanded.append((self.text(name), has_default))
                stack.extend(item.named_children)
                continue
            if kind in ("command_substitution", "process_substitution"):
                self.statements(item, (), sub=True)
                continue
            if kind == "raw_string":
                continue
            stack.extend(reversed(item.named_children))


def _pipe_ops(node: Node) -> list[Redirect]:
    """The pipe after each element of a pipeline: ``|`` or ``|&``."""
    ops = [PIPE_BOTH if c.type == "|&" else PIPE for c in node.children if c.type in ("|", "|&")]
    return [*ops, PIPE]


def _unescape(raw: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            out.append(raw[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _unescape_double(inner: str) -> str:
    if "\\" not in inner:
        return inner
    out: list[str] = []
    i = 0
    while i < len(inner):
        ch = inner[i]
        if ch == "\\" and i + 1 < len(inner) and inner[i + 1] in '\\"$`':
            out.append(inner[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)
