"""The words job naming knows about programs and paths: which programs run a framework's
sub-commands, which sub-commands and script names say nothing of the job, which programs need
what they act on to name it, which directory names are noise, which options take a value.

Kept apart from the naming algorithm (``naming.py``) because they grow with every crontab seen
in the wild, while the algorithm does not.
"""

from __future__ import annotations

import re

#: Framework runners: the job is their first positional argument (the sub-command).
FRAMEWORK_RUNNERS = frozenset(
    (
        "artisan",
        "console",
        "drush",
        "wp",
        "occ",
        "rake",
        "manage",
        "symfony",
        "magento",
        "yii",
        "cake",
        "spark",
        "n98-magerun",
        "n98-magerun2",
        "rails",
        "flask",
        "django-admin",
        "bench",
        "php-cli",
        "craft",
        "typo3",
        "typo3cms",
        "cli",
        "nova",
        "invoke",
        "thor",
        "mix",
        "sbt",
        "gradle",
        "npm",
        "yarn",
        "pnpm",
        "composer",
        "make",
        "just",
        "task",
    )
)


#: Sub-commands that name a mechanism, not the work: the next argument says what it is.
GENERIC_SUBCOMMANDS = frozenset(
    (
        "run",
        "exec",
        "queue:run",
        "queue:work",
        "queue:listen",
        "messenger:consume",
        "jobs:run",
        "job:run",
        "task:run",
        "tasks:run",
        "process",
        "runscript",
        "runner",
        "execute",
        "command",
        "call",
    )
)


#: Script names that say nothing: the first argument, else the directory, names the job.
GENERIC_SCRIPTS = frozenset(
    (
        "run",
        "main",
        "cron",
        "cronjob",
        "job",
        "jobs",
        "task",
        "tasks",
        "index",
        "start",
        "script",
        "exec",
        "execute",
        "wrapper",
        "go",
        "do",
        "cli",
        "app",
        "runner",
        "worker",
        "launcher",
        "entrypoint",
        "entry",
        "daily",
        "hourly",
        "weekly",
        "monthly",
        "command",
        "cmd",
        "tool",
        "bin",
        "process",
        "handler",
        "crontab",
        "init",
        "default",
    )
)


RUNNER_PREFIX = re.compile(r"^(?:run|exec|do|call|invoke)[-_]")


#: Programs whose own name says nothing of the job: they need what they act on.
TOOLS = frozenset(
    (
        "rsync",
        "scp",
        "rclone",
        "cp",
        "mv",
        "unison",
        "find",
        "du",
        "df",
        "systemctl",
        "service",
        "supervisorctl",
        "curl",
        "wget",
        "lynx",
        "links",
        "get",
        "run-parts",
        "date",
        "echo",
        "printf",
        "touch",
        "true",
        "rm",
        "cat",
        "tee",
        "mysql",
        "psql",
        "mysqldump",
        "pg_dump",
        "redis-cli",
        "git",
        "sh",
        "bash",
        "env",
        "null",
        "docker",
        "podman",
        "kubectl",
        "sudo",
        "nice",
        "php",
        "python",
        "python3",
        "node",
        "ruby",
        "perl",
    )
)


DIR_NOISE = frozenset(
    (
        "var",
        "www",
        "html",
        "srv",
        "opt",
        "home",
        "usr",
        "local",
        "bin",
        "sbin",
        "scripts",
        "script",
        "cron",
        "crons",
        "cronjobs",
        "app",
        "apps",
        "current",
        "etc",
        "lib",
        "src",
        "tmp",
        "data",
        "root",
        "public",
        "web",
        "htdocs",
        "sites",
        "code",
        "git",
        "repos",
        "shared",
        "releases",
        "live",
        "prod",
        "production",
        "user",
        "users",
        "admin",
        "jobs",
        "tools",
        "util",
        "utils",
        "cgi-bin",
        "libexec",
        "share",
        "mnt",
        "backups",
        "docker",
    )
)


#: Framework options whose value is the next word (``-e prod``, ``-r web``, ``--uri x``).
VALUED_OPTIONS = frozenset(
    (
        "-e",
        "--env",
        "-r",
        "--root",
        "-l",
        "--uri",
        "-u",
        "--user",
        "--path",
        "--site",
        "--context",
        "--application",
        "-c",
        "--config",
        "--settings",
        "--pythonpath",
        "-d",
        "--database",
        "--connection",
        "--queue",
        "-p",
        "--project",
    )
)
