"""The user field of a system crontab: which words no ``/etc/crontab`` line means as its user."""

from __future__ import annotations

#: Words that are surely not a user name: the shell's own words and the programs a command
#: starts with. A name in this set that is a user on this host is taken as one.
_NOT_USERS = frozenset(
    (
        "cd",
        "test",
        "[",
        "echo",
        "export",
        "source",
        ".",
        "exec",
        "if",
        "for",
        "while",
        "set",
        "sleep",
        "php",
        "python",
        "python3",
        "python2",
        "perl",
        "ruby",
        "node",
        "bash",
        "sh",
        "curl",
        "wget",
        "sudo",
        "nice",
        "ionice",
        "flock",
        "timeout",
        "find",
        "rm",
        "cp",
        "mv",
        "rsync",
        "docker",
        "tar",
        "gzip",
        "mysql",
        "mysqldump",
        "psql",
        "pg_dump",
        "run-parts",
        "env",
        "touch",
        "date",
        "true",
        "false",
        "cat",
        "chmod",
        "chown",
        "git",
        "make",
        "java",
        "systemctl",
        "service",
        "kill",
        "pkill",
        "killall",
        "su",
        "nohup",
        "/usr/bin/env",
    )
)


def can_be_user(word: str) -> bool:
    """False for a word no system crontab means as its user: a path, an assignment, a shell
    word or a program — unless this host has a user of that name."""
    if not ("/" in word or "=" in word or "$" in word or word in _NOT_USERS):
        return True
    try:
        import pwd

        pwd.getpwnam(word)
    except (KeyError, ImportError):
        return False
    return True
