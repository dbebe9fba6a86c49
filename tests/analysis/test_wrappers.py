"""Wrappers stepped over by their manual pages' synopses: what really runs, as which user, under
which lock, in which container; ``-c`` bodies parsed again."""

from __future__ import annotations

import shlex

import pytest

from migrate_cron.analysis.tree import MAX_DEPTH, parse
from migrate_cron.analysis.work_calls import main_call, work_calls
from migrate_cron.analysis.wrappers import Unwrapped, unwrap


def _unwrap(command: str) -> Unwrapped:
    return unwrap(parse(command).calls[0])


@pytest.mark.parametrize(
    ("command", "wrappers", "argv"),
    [
        ("nice /bin/x", ("nice",), ("/bin/x",)),
        ("nice -n 10 /bin/x a", ("nice",), ("/bin/x", "a")),
        ("nice -n10 /bin/x", ("nice",), ("/bin/x",)),
        ("nice -10 /bin/x", ("nice",), ("/bin/x",)),
        ("nice --adjustment=5 /bin/x", ("nice",), ("/bin/x",)),
        ("nice -n 19 -- /bin/x", ("nice",), ("/bin/x",)),
        ("ionice -c3 /bin/x", ("ionice",), ("/bin/x",)),
        ("ionice -c 2 -n 7 rsync -a /a /b", ("ionice",), ("rsync", "-a", "/a", "/b")),
        ("ionice -c2 -n7 -t nice /bin/x", ("ionice", "nice"), ("/bin/x",)),
        ("timeout 30m /bin/x", ("timeout",), ("/bin/x",)),
        ("timeout 5 /bin/x --y", ("timeout",), ("/bin/x", "--y")),
        ("timeout -s KILL 1h /bin/x", ("timeout",), ("/bin/x",)),
        ("timeout -k 10 5m /bin/x", ("timeout",), ("/bin/x",)),
        ("timeout --signal=TERM 5 /bin/x", ("timeout",), ("/bin/x",)),
        ("timeout --preserve-status 2h /bin/x", ("timeout",), ("/bin/x",)),
        ("chronic /bin/x", ("chronic",), ("/bin/x",)),
        ("cronic /bin/x -v", ("cronic",), ("/bin/x", "-v")),
        ("nohup /bin/x", ("nohup",), ("/bin/x",)),
        ("exec /bin/x", ("exec",), ("/bin/x",)),
        ("stdbuf -oL /bin/x", ("stdbuf",), ("/bin/x",)),
        ("env A=1 B=2 /bin/x", ("env",), ("/bin/x",)),
        ("env -i PATH=/bin /bin/x", ("env",), ("/bin/x",)),
        ("env -u LANG /bin/x", ("env",), ("/bin/x",)),
        # `env -` is `env -i` (coreutils env(1)): the words after it are assignments, then the
        # command
        ("env - A=1 /bin/x", ("env",), ("/bin/x",)),
        ("envdir /etc/app/env /bin/x", ("envdir",), ("/bin/x",)),
        ("cronitor exec d3x0c1 /usr/local/bin/sync.sh", ("cronitor",), ("/usr/local/bin/sync.sh",)),
        ("A=1 /bin/x", (), ("/bin/x",)),
        ("/bin/x", (), ("/bin/x",)),
        ("sh /opt/run.sh", (), ("sh", "/opt/run.sh")),
        ("docker ps -q", (), ("docker", "ps", "-q")),
        (
            "flock -w 5 /tmp/x.lock nice -n 10 ionice -c3 php artisan a:b",
            ("flock", "nice", "ionice"),
            ("php", "artisan", "a:b"),
        ),
        (
            "ionice -c3 nice -n 19 chronic timeout 3h /usr/local/bin/backup-site blog",
            ("ionice", "nice", "chronic", "timeout"),
            ("/usr/local/bin/backup-site", "blog"),
        ),
    ],
)
def test_wrappers_are_stepped_over(
    command: str, wrappers: tuple[str, ...], argv: tuple[str, ...]
) -> None:
    found = _unwrap(command)
    assert found.wrappers == wrappers
    assert found.argv == argv
    assert found.body is None


@pytest.mark.parametrize(
    ("command", "lock", "argv"),
    [
        ("flock -w 5 /tmp/x.lock nice -n 10 ionice -c3 php artisan a:b", "/tmp/x.lock", "php"),
        ("flock -n /tmp/a.lock /bin/x", "/tmp/a.lock", "/bin/x"),
        ("flock -w5 /var/lock/b /bin/x", "/var/lock/b", "/bin/x"),
        ("flock --timeout=5 /var/lock/b /bin/x", "/var/lock/b", "/bin/x"),
        ("flock -E 0 -n /var/lock/b /bin/x", "/var/lock/b", "/bin/x"),
        ("/usr/bin/flock -xn /run/c.lock /bin/x", "/run/c.lock", "/bin/x"),
        ("setlock /tmp/l /bin/x", "/tmp/l", "/bin/x"),
        ("setlock -nX /tmp/l /bin/x", "/tmp/l", "/bin/x"),
        ("solo -port=3801 /bin/x", "3801", "/bin/x"),
        ("timeout 1h flock -n /l /bin/x", "/l", "/bin/x"),
    ],
)
def test_the_lock_a_wrapper_takes(command: str, lock: str, argv: str) -> None:
    found = _unwrap(command)
    assert found.lock == lock
    assert found.argv[0] == argv


@pytest.mark.parametrize(
    ("command", "body"),
    [
        ('flock -xn /tmp/a.lock -c "cd /srv && ./x"', [("cd", "/srv"), ("./x",)]),
        ('flock /tmp/a.lock -c "./x y"', [("./x", "y")]),
        ("flock -n /tmp/a.lock --command './x y'", [("./x", "y")]),
    ],
)
def test_flock_with_a_command_string_opens_it(command: str, body: list[tuple[str, ...]]) -> None:
    found = _unwrap(command)
    assert found.lock == "/tmp/a.lock"
    assert found.argv == ()
    assert found.body is not None
    assert [c.argv for c in found.body.calls] == body


@pytest.mark.parametrize(
    ("command", "user", "wrappers", "argv"),
    [
        ("sudo -u www-data php /srv/x.php", "www-data", ("sudo",), ("php", "/srv/x.php")),
        ("sudo -H -u deploy /bin/x", "deploy", ("sudo",), ("/bin/x",)),
        ("sudo -uapp /bin/x", "app", ("sudo",), ("/bin/x",)),
        ("sudo --user=app /bin/x", "app", ("sudo",), ("/bin/x",)),
        ("sudo -u app -- /bin/x", "app", ("sudo",), ("/bin/x",)),
        ("sudo -i -u app /bin/x", "app", ("sudo",), ("/bin/x",)),
        ("sudo /bin/x", None, ("sudo",), ("/bin/x",)),
        ("sudo -u app APP_ENV=prod /bin/x", "app", ("sudo",), ("/bin/x",)),
        ("runuser -u app -- /bin/x --y", "app", ("runuser",), ("/bin/x", "--y")),
    ],
)
def test_the_user_a_wrapper_switches_to(
    command: str, user: str | None, wrappers: tuple[str, ...], argv: tuple[str, ...]
) -> None:
    found = _unwrap(command)
    assert (found.user, found.wrappers, found.argv) == (user, wrappers, argv)


@pytest.mark.parametrize(
    ("command", "user", "body"),
    [
        ('su - app -c "/bin/x --y"', "app", [("/bin/x", "--y")]),
        ("su app -c /bin/x", "app", [("/bin/x",)]),
        ('su -s /bin/bash -c "/bin/x" app', "app", [("/bin/x",)]),
        ('su -l app -c "cd /a && ./b"', "app", [("cd", "/a"), ("./b",)]),
        ("su --command='/bin/x' - app", "app", [("/bin/x",)]),
        ('runuser -l app -c "/bin/x"', "app", [("/bin/x",)]),
        ('sudo -E -u app bash -c "cd /a && php b"', "app", [("cd", "/a"), ("php", "b")]),
    ],
)
def test_su_bodies_are_parsed_as_the_user(
    command: str, user: str, body: list[tuple[str, ...]]
) -> None:
    found = _unwrap(command)
    assert found.user == user
    assert found.body is not None
    assert [c.argv for c in found.body.calls] == body


@pytest.mark.parametrize(
    ("command", "container", "argv"),
    [
        ("docker exec web php x", "web", ("php", "x")),
        ("docker exec -it -u www-data web php x", "web", ("php", "x")),
        ("docker exec --user=app -e A=1 web /bin/x", "web", ("/bin/x",)),
        ("docker run --rm -v /a:/b img cmd y", "img", ("cmd", "y")),
        ("docker compose exec -T web php x", "web", ("php", "x")),
        ("docker compose -f /srv/dc.yml exec -T web php x", "web", ("php", "x")),
        ("docker compose --project-directory /srv exec web x", "web", ("x",)),
        ("docker compose run --rm web php x", "web", ("php", "x")),
        ("docker-compose exec -T web php x", "web", ("php", "x")),
        ("podman exec db psql -c 'select 1'", "db", ("psql", "-c", "select 1")),
        ("kubectl exec pod -- cmd a", "pod", ("cmd", "a")),
        ("kubectl exec -it web-0 -- cmd a", "web-0", ("cmd", "a")),
        ("kubectl exec --namespace=prod web-0 -- cmd", "web-0", ("cmd",)),
        # -n NAMESPACE and -c CONTAINER take a value (kubectl exec --help): the pod is web-0
        ("kubectl exec -n prod web-0 -c app -- cmd a", "web-0", ("cmd", "a")),
        ("kubectl -n prod exec web-0 -- cmd", "web-0", ("cmd",)),
    ],
)
def test_the_container_a_command_runs_in(
    command: str, container: str, argv: tuple[str, ...]
) -> None:
    found = _unwrap(command)
    assert found.container == container
    assert found.argv == argv


def test_a_shell_inside_a_container_is_opened() -> None:
    found = _unwrap('docker exec web sh -c "php a && php b"')
    assert found.container == "web" and found.wrappers == ("docker", "sh")
    assert found.body is not None
    assert [c.argv for c in found.body.calls] == [("php", "a"), ("php", "b")]


@pytest.mark.parametrize(
    ("command", "body"),
    [
        ('sh -c "cd /a && ./b"', [("cd", "/a"), ("./b",)]),
        ("bash -c './b --x'", [("./b", "--x")]),
        ('bash -lc "source ~/.profile; ./b"', [("source", "~/.profile"), ("./b",)]),
        ('/bin/bash -e -c "./b"', [("./b",)]),
        ('bash -o pipefail -c "./a | ./b"', [("./a",), ("./b",)]),
        ('env A=1 sh -c "./x"', [("./x",)]),
        # busybox runs its applet: `busybox sh -c BODY` is sh -c BODY
        ('busybox sh -c "./x"', [("./x",)]),
    ],
)
def test_shell_bodies_are_parsed_again(command: str, body: list[tuple[str, ...]]) -> None:
    found = _unwrap(command)
    assert found.argv == ()
    assert found.body is not None
    assert [c.argv for c in found.body.calls] == body


def test_bodies_are_parsed_recursively() -> None:
    script = parse('/bin/bash -c "flock -n /tmp/l sh -c \\"./deep arg\\""')
    outer = unwrap(script.calls[0])
    assert outer.body is not None
    assert outer.body.calls[0].argv[:3] == ("flock", "-n", "/tmp/l")
    inner = unwrap(outer.body.calls[0])
    assert inner.lock == "/tmp/l" and inner.body is not None
    assert [c.argv for c in inner.body.calls] == [("./deep", "arg")]
    found = main_call(script)
    assert found is not None and found[1].argv == ("./deep", "arg")


def test_all_wrappers_at_once() -> None:
    found = _unwrap('timeout 1h flock -n /l sudo -u app sh -c "cd /x; php y"')
    assert found.wrappers == ("timeout", "flock", "sudo", "sh")
    assert (found.user, found.lock) == ("app", "/l")
    assert found.body is not None
    assert [c.argv for c in found.body.calls] == [("cd", "/x"), ("php", "y")]


def test_bodies_nested_past_the_limit_are_not_opened() -> None:
    command = "./deep x"
    for _ in range(MAX_DEPTH):
        command = "sh -c " + shlex.quote(command)
    assert [inner.argv for _, inner in work_calls(parse(command))] == [("./deep", "x")]
    deeper = "sh -c " + shlex.quote(command)
    assert work_calls(parse(deeper)) == []


def test_cronitor_runs_its_quoted_command() -> None:
    """``cronitor exec KEY "CMD ARGS"`` runs the string as a command line (cronitor's CLI
    docs): the program is /usr/local/bin/backup-db.sh with --full, not one word with a space."""
    found = main_call(parse('cronitor exec d3x0c1 "/usr/local/bin/backup-db.sh --full"'))
    assert found is not None
    assert found[1].argv == ("/usr/local/bin/backup-db.sh", "--full")
