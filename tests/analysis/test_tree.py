"""The shell tree of a crontab command, with the meaning of every redirection taken from bash.

The table below is why the parser can be trusted: each command is RUN by ``bash -c`` in a
temporary directory, and where each word it prints ends up (file F or G, the process's
stdout/stderr that cron captures, nowhere) is compared with what our Script says through
:func:`migrate_cron.analysis.streams.fate` on each call. Producers are ``echo W`` (W on stdout)
and ``./both W [STATUS]`` (``W.out`` on stdout, ``W.err`` on stderr, then exits STATUS); a pipe's
reader is ``tr A-Z a-z``, so a word that went through a pipe arrives lowercased.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from migrate_cron.analysis.streams import CLOSED, CRON, NULL, PIPE, fate
from migrate_cron.analysis.tree import Call, Script, parse

BOTH = '#!/bin/sh\necho "$1.out"\necho "$1.err" >&2\nexit "${2:-0}"\n'
_WORD = re.compile(r"[A-Za-z](?:\.(?:out|err))?")

TABLE = [
    # tree-sitter hangs these trailing redirections on the whole list or pipeline; bash gives
    # them to the last command only.
    "echo A && echo B >F",
    "echo A; false || echo B >F",
    "echo A && echo B && echo C >F",
    "echo A | tr A-Z a-z >F",
    "echo A | tr A-Z a-z | tr A-Z a-z >F",
    "echo A; echo B | tr A-Z a-z >F",
    "echo A && echo B | tr A-Z a-z >F",
    "echo A | tr A-Z a-z >F && echo B",
    "echo A && ./both B 1 2>/dev/null || echo C",
    "echo A >F 2>&1 && ./both B 1 >G || echo C",
    "echo A && echo B >G >F",
    # groups and subshells: their redirections first, the command's own after
    "{ echo A; echo B; } >F",
    "(echo A; echo B) >F",
    "echo A; false || (echo B; echo C) >F && echo D",
    "{ echo A; echo E >&2; } 2>&1 >F",
    "echo A && { echo B; echo E >&2; } >F 2>&1",
    "echo A; { echo B && echo E >&2; } >F 2>/dev/null",
    "{ echo A && echo B >G; } >F",
    "if true; then echo A; fi >F",
    "for i in 1; do echo A; done >F",
    # a pipe inside a redirected group: the pipe is set up after the group's redirection
    "{ echo A | tr A-Z a-z; } >F",
    "echo A && { ./both B | tr A-Z a-z; } 2>&1 >F",
    # order of one command's redirections
    "echo A >F && echo B",
    "./both A 2>&1 >F",
    "./both A >F 2>&1",
    "2>&1 >F ./both A",
    "./both A 2>F >&2",
    "./both A &>F",
    "./both A >&F",
    "./both A 2>&1 | tr A-Z a-z >F",
    "./both A |& tr A-Z a-z >F",
    "echo A >F | tr A-Z a-z",
    "echo A >/dev/stderr; echo B >/dev/null",
    "echo A 1>&-; echo B",
    # commands in $(...) print into a value, not the job's output (their stderr is the job's)
    "x=$(echo A | tr A-Z a-z) echo B >F",
    "echo B $(echo E >&2) 2>G >F",
    # a redirection alone after & applies to nothing
    "cd . && ./both A &2>/dev/null",
    # exec with only redirections moves the shell's own output for every command after it
    "exec >F; echo A",
]


def _place(destination: str) -> str | None:
    if destination in (NULL, CLOSED):
        return None
    if destination == CRON:
        return CRON
    assert destination.startswith("file:"), destination
    return destination[len("file:") :]


def _ours(script: Script) -> set[tuple[str, str]]:
    """(where, text) for each word the calls print, as our tree and fates say."""
    calls = list(script.calls)
    expected: set[tuple[str, str]] = set()
    for i, call in enumerate(calls):
        streams = _printed(call)
        out, err = fate(call)
        for text, destination, fd in ((streams[0], out, 1), (streams[1], err, 2)):
            if text is None:
                continue
            where = _follow(calls, i, destination, fd)
            if where is not None:
                expected.add((where[0], text.lower() if where[1] else text))
    return expected


def _printed(call: Call) -> tuple[str | None, str | None]:
    argv = call.argv
    if argv[:1] == ("echo",) and len(argv) > 1 and _WORD.fullmatch(argv[1]):
        return argv[1], None
    if argv[:1] == ("./both",):
        return f"{argv[1]}.out", f"{argv[1]}.err"
    return None, None


def _follow(calls: list[Call], i: int, destination: str, fd: int) -> tuple[str, bool] | None:
    """Where a stream ends up: through pipes (lowercased by the reader), out of ``$(…)``."""
    call = calls[i]
    if destination == PIPE:
        reader = calls[i + 1]
        assert reader.argv[:1] == ("tr",), reader
        found = _follow(calls, i + 1, fate(reader)[0], 1)
        return (found[0], True) if found is not None else None
    untouched = not any(r.is_output and r.fd in (None, fd) for r in call.chain)
    if call.substituted and fd == 1 and untouched:
        return None  # the value of the substitution
    place = _place(destination)
    return (place, False) if place is not None else None


def _bash(command: str, tmp: Path) -> set[tuple[str, str]]:
    """(where, text) for each word ``bash -c command`` really printed."""
    bash = shutil.which("bash")
    assert bash is not None
    helper = tmp / "both"
    helper.write_text(BOTH)
    helper.chmod(0o755)
    done = subprocess.run(
        [bash, "-c", command], cwd=tmp, capture_output=True, text=True, timeout=10, check=False
    )
    seen: set[tuple[str, str]] = set()
    outputs = [(CRON, done.stdout), (CRON, done.stderr)]
    outputs += [(p.name, p.read_text()) for p in tmp.iterdir() if p.name != "both"]
    for where, text in outputs:
        seen.update((where, line) for line in text.splitlines() if _WORD.fullmatch(line))
    return seen


@pytest.mark.parametrize("command", TABLE)
def test_where_each_word_goes_is_what_bash_does(command: str, tmp_path: Path) -> None:
    observed = _bash(command, tmp_path)
    assert observed, f"{command}: bash printed none of the words"
    assert _ours(parse(command)) == observed, command


def test_the_table_covers_every_stream_kind() -> None:
    """The table is not vacuous: it sends words to files, to cron, through pipes and away."""
    kinds = {d for command in TABLE for c in parse(command).calls for d in fate(c)}
    assert {CRON, NULL, PIPE, "file:F", "file:G"} <= kinds


# -- what else the tree says ------------------------------------------------------------


def test_a_command_that_starts_with_a_hash_is_only_a_comment() -> None:
    script = parse("#TOKEN#/bin/run x")
    assert script.comment_only and script.calls == ()
    after = parse("/bin/run x # nightly")
    assert not after.comment_only
    assert [c.argv for c in after.calls] == [("/bin/run", "x")]


def test_a_trailing_ampersand_backgrounds_the_last_command() -> None:
    script = parse("sleep 5 &")
    assert script.ends_background
    assert script.calls[0].background and script.calls[0].last


def test_an_ampersand_between_commands_does_not_end_the_line_in_background() -> None:
    script = parse("./a & ./b")
    assert not script.ends_background
    first, second = script.calls
    assert first.background and not second.background
    assert second.joined == "&" and second.last


def test_a_redirection_after_ampersand_is_a_statement_of_its_own() -> None:
    """``&2>/dev/null`` is ``&`` then ``2>/dev/null``: ./y runs in background, unredirected."""
    script = parse("cd /x && ./y &2>/dev/null")
    cd, y, alone = script.calls
    assert cd.argv == ("cd", "/x") and not cd.background
    assert y.argv == ("./y",) and y.background and y.joined == "&&"
    assert y.chain == ()
    assert alone.words == () and alone.joined == "&"
    assert [r.raw for r in alone.chain] == ["2>/dev/null"]
    assert fate(y) == (CRON, CRON)


def test_commands_in_substitutions_are_marked() -> None:
    script = parse("echo $(date +%F) $(hostname | tr a-z A-Z) `id -u` >/tmp/x")
    by_name = {c.argv[0]: c for c in script.calls}
    assert all(by_name[n].substituted for n in ("date", "hostname", "tr", "id"))
    assert not by_name["echo"].substituted and by_name["echo"].last
    assert [c.argv[0] for c in script.top] == ["echo"]
    # the substitution's commands do not get the outer command's redirection
    assert by_name["date"].chain == () and fate(by_name["date"]) == (CRON, CRON)


def test_process_substitution_runs_commands_too() -> None:
    script = parse("diff <(ls /a) <(ls /b)")
    assert [(c.argv, c.substituted) for c in script.calls] == [
        (("ls", "/a"), True),
        (("ls", "/b"), True),
        (("diff", "<(ls /a)", "<(ls /b)"), False),
    ]


def test_expanded_variables_say_whether_they_have_a_default() -> None:
    script = parse("echo ${A:-x} $B \"$C/d\" '$D' ${E} ${F:=y} ${G#x} ${H-z}")
    assert script.expanded == (
        ("A", True),
        ("B", False),
        ("C", False),
        ("E", False),
        ("F", True),
        ("G", False),
        ("H", True),
    )


def test_nothing_inside_single_quotes_or_comments_is_expanded() -> None:
    assert parse("echo '$HOME ${X:-y}' # $Z").expanded == ()


def test_variables_in_substitutions_and_assignments_are_expanded() -> None:
    script = parse('OUT="$BASE/out" /bin/x "$(cat $CONF)"')
    assert dict(script.expanded) == {"BASE": False, "CONF": False}


@pytest.mark.parametrize(
    ("command", "names"),
    [
        ("A=1 cmd", {"A"}),
        ("A=1 B=2", {"A", "B"}),
        ("export B=2 && cmd", {"B"}),
        ("for i in 1 2; do echo $i; done", {"i"}),
        ("read X Y < /etc/x", {"X", "Y"}),
        ("read -r Z < /etc/x", {"Z"}),
        ("local Q=1; declare -r R=2; readonly S", {"Q", "R", "S"}),
        ("cmd A=1", set()),  # an argument, not an assignment
    ],
)
def test_names_the_command_assigns(command: str, names: set[str]) -> None:
    assert parse(command).assigned == names


def test_assignments_stay_on_their_command() -> None:
    call = parse("LANG=C TZ=UTC /bin/x").calls[0]
    assert call.assignments == (("LANG", "C"), ("TZ", "UTC"))
    assert call.argv == ("/bin/x",)


@pytest.mark.parametrize("command", ["x $(date +'%Y", 'echo "unclosed', "a &&", "a | | b"])
def test_broken_commands_are_marked(command: str) -> None:
    assert parse(command).broken


@pytest.mark.parametrize(
    "command", ["/bin/x --flag", "a && b || c", "x $(date +'%Y')", 'echo "it\'s"']
)
def test_well_formed_commands_are_not_broken(command: str) -> None:
    assert not parse(command).broken


def test_joins_pipes_and_the_last_command() -> None:
    script = parse("a | b && c || d; e & f")
    rows = [(c.argv[0], c.joined, c.piped, c.background, c.last) for c in script.calls]
    assert rows == [
        ("a", "", True, False, False),
        ("b", "|", False, False, False),
        ("c", "&&", False, False, False),
        ("d", "||", False, False, False),
        ("e", ";", False, True, False),
        ("f", "&", False, False, True),
    ]


def test_the_last_command_is_never_one_in_a_substitution() -> None:
    script = parse("/bin/x $(date)")
    assert [c.argv[0] for c in script.calls if c.last] == ["/bin/x"]


def test_literal_words_lose_their_quotes_and_expansions_keep_their_text() -> None:
    call = parse('\'/opt/my app/run.sh\' "--name=x y" a\\ b $HOME/x "$USER"').calls[0]
    assert [(w.value, w.literal) for w in call.words] == [
        ("/opt/my app/run.sh", True),
        ("--name=x y", True),
        ("a b", True),
        ("$HOME/x", False),
        ('"$USER"', False),
    ]


def test_redirections_as_written() -> None:
    call = parse("/bin/x 2>>/var/log/e.log >&2 <in").calls[0]
    assert [(r.fd, r.op, r.target, r.is_output) for r in call.chain] == [
        (2, ">>", "/var/log/e.log", True),
        (None, ">&", "2", True),
        (None, "<", "in", False),
    ]


def test_negation_is_kept() -> None:
    assert parse("! /bin/check").calls[0].negated
    assert not parse("/bin/check").calls[0].negated
