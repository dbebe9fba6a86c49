"""The rules job names follow, with examples of our own: a framework's sub-command, a script's
basename, what a generic script or a tool acts on; lines of one base told apart by what differs
(an argument, an option, a directory, the schedule), never by a counter; over every crontab the
repository holds, no wrapper or shell word as a name, unique and stable names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from migrate_cron.analysis.naming import Naming, naming, slug
from migrate_cron.analysis.unique_names import name_lines
from migrate_cron.migration.planning import analyze_files

from .helpers import report_for

ROOT = Path(__file__).resolve().parents[2]
# Every crontab-like file: the samples and the fixtures' *.cron/*.crontab (as test_naming.py).
CRONTABS = sorted(
    p
    for p in [
        *(ROOT / "samples").iterdir(),
        *(ROOT / "tests" / "fixtures").rglob("*.cron"),
        *(ROOT / "tests" / "fixtures").rglob("*.crontab"),
    ]
    if p.is_file() and p.suffix not in (".sh", ".csv", ".md") and not p.name.startswith(".")
)
NEVER = frozenset(
    (
        *("sh", "bash", "cd", "sudo", "nice", "flock", "env", "timeout", "exec", "cron"),
        *("php", "python", "python3", "node", "docker", "run", "main", "job", "cmd", "c"),
        *("true", "null", "date"),
    )
)


def _base(command: str, env: dict[str, str] | None = None) -> str:
    found = naming(command, env or {})
    assert found is not None, command
    return found.base


def _names(text: str) -> list[str]:
    return [r.job.name for r in report_for(text).jobs]


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("php /srv/shop/artisan invoices:export", "invoices-export"),
        ("cd /srv/shop && php artisan queue:prune-failed --hours=48", "queue-prune-failed"),
        ("php artisan --env=production reports:send", "reports-send"),
        ("php /srv/shop/bin/console app:sync-orders", "app-sync-orders"),
        ("/srv/shop/bin/console cache:pool:prune --env=prod", "cache-pool-prune"),
        ("drush -y search-api:index", "search-api-index"),
        ("/usr/local/bin/drush -r /var/www/site/web cron", "drush-cron"),
        ("python manage.py clearsessions", "clearsessions"),
        ("/srv/venv/bin/python /srv/site/manage.py send_reminders", "send-reminders"),
        ("wp --path=/var/www/blog cron event run --due-now", "wp-cron"),
        ("cd /srv/app && bundle exec rake reports:weekly", "reports-weekly"),
        ("bundle exec rake -f /srv/app/Rakefile search:reindex", "search-reindex"),
    ],
)
def test_frameworks_are_named_by_their_sub_command(command: str, name: str) -> None:
    assert _base(command) == name


@pytest.mark.parametrize(
    ("command", "name"),
    [
        # an option's value is not the sub-command (bin/console -e ENV, drush -r ROOT)
        ("php bin/console -e prod app:purge-carts", "app-purge-carts"),
        ("php bin/console --env prod app:purge-carts", "app-purge-carts"),
        ("cd /srv/site && drush -r web search-api:index", "search-api-index"),
        # a drush site alias says where, not what
        ("drush @live cron", "drush-cron"),
    ],
)
def test_framework_option_values_are_not_sub_commands(command: str, name: str) -> None:
    assert _base(command) == name


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("/usr/local/bin/rotate_logs.sh", "rotate-logs"),
        ("/opt/tools/PurgeSessions.py", "purge-sessions"),
        ("flock -n /tmp/x.lock /opt/app/bin/sync-stock.sh", "sync-stock"),
        ("sleep 30; /opt/mon/poll-queue.sh >/dev/null", "poll-queue"),
        (
            'echo "$(date) start" >> /var/log/x.log; /opt/etl/extract.sh >> /var/log/x.log',
            "extract",
        ),
        ("/usr/local/bin/backup.sh mysql", "backup-mysql"),
    ],
)
def test_scripts_are_named_by_their_basename(command: str, name: str) -> None:
    assert _base(command) == name


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("/opt/app/bin/run.sh cleanup-cache", "cleanup-cache"),
        ("/x/job.sh RebuildIndexJob", "rebuild-index-job"),
        ("/srv/tools/cron.php prune_exports", "prune-exports"),
        ("/opt/billing/bin/run.sh", "billing"),
    ],
)
def test_generic_scripts_are_named_by_their_argument_or_directory(command: str, name: str) -> None:
    assert _base(command) == name


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("python3 -m app.tasks.sync", "app-tasks-sync"),
        ("/srv/venv/bin/python -u -m reports.weekly --send", "reports-weekly"),
        ("php -d memory_limit=1G /srv/x/import_feed.php", "import-feed"),
        ("ruby /srv/x/send_mail.rb", "send-mail"),
        ("perl /opt/mon/check-disk.pl", "check-disk"),
        ("node /srv/app/scripts/refresh-tokens.js", "refresh-tokens"),
        ("sh /opt/etl/load_dwh.sh", "load-dwh"),
        ("bash -c 'cd /opt/etl && ./transform.sh'", "transform"),
    ],
)
def test_interpreters_are_named_by_what_they_run(command: str, name: str) -> None:
    assert _base(command) == name


def test_variables_are_resolved_from_the_env_lines() -> None:
    env = {"APP": "/srv/shop", "PHP": "/usr/bin/php8.2", "TASK": "send-digest"}
    assert _base("$PHP $APP/artisan mail:flush", env) == "mail-flush"
    assert _base("/opt/jobs/$TASK.sh", env) == "send-digest"
    found = naming('"$APP/bin/backup.sh"', env)
    assert found is not None and found.base == "backup" and "shop" in found.tokens
    # an unknown variable is not a name
    assert "unknown" not in _base("$UNKNOWN/bin/rebuild.sh", env)


def test_the_same_command_with_other_env_values_is_named_by_them() -> None:
    text = (
        "TASK=export-feeds\n0 1 * * * /opt/jobs/$TASK.sh\n"
        "TASK=prune-carts\n0 2 * * * /opt/jobs/$TASK.sh\n"
    )
    assert _names(text) == ["export-feeds", "prune-carts"]


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("curl -fsS https://shop.example/api/feeds/google/rebuild > /dev/null", "rebuild"),
        ("wget -q -O /dev/null https://blog.example/wp-cron.php", "wp-cron"),
        ("curl -s -m 30 https://intranet.example/tasks/send-digest?lang=en", "send-digest"),
        ("systemctl restart nginx", "restart-nginx"),
        ("/bin/systemctl reload php8.2-fpm.service", "reload-php8-2-fpm"),
        ("service apache2 graceful", "graceful-apache2"),
        ("find /var/www/shop/tmp -type f -mtime +7 -delete", "clean-tmp"),
        ("find /srv/media/cache -mindepth 1 -mtime +3 -exec rm -rf {} +", "clean-cache"),
        ("rsync -a /srv/uploads/ backup@vault:/b/uploads/", "copy-uploads"),
        ("rsync -az --delete /var/lib/reports /mnt/b", "copy-reports"),
        ("run-parts /etc/cron.daily", "cron-daily"),
        ("run-parts --report /etc/cron.weekly", "cron-weekly"),
        ("date > /var/run/app-alive", "app-alive"),
        ("touch /var/run/app.heartbeat", "app-heartbeat"),
    ],
)
def test_tools_are_named_by_what_they_act_on(command: str, name: str) -> None:
    assert _base(command) == name


def test_a_monitor_key_in_a_url_is_never_a_name() -> None:
    key = "5f0c2d1e-8a7b-4c3d-9e2f-1a2b3c4d5e6f"
    name = _base(f"curl -fsS -m 10 https://hc-ping.example/{key} > /dev/null")
    assert key.split("-")[0] not in name


@pytest.mark.parametrize(
    ("text", "names"),
    [
        (
            "0 1 * * * /usr/local/bin/backup.sh mysql\n0 2 * * * /usr/local/bin/backup.sh files",
            ["backup-mysql", "backup-files"],
        ),
        (
            "0 1 * * * /opt/app/bin/report.sh\n0 2 * * 0 /opt/app/bin/report.sh",
            ["report-daily", "report-weekly"],
        ),
        (
            "0 1 * * * php /srv/shop/artisan cache:prune --store=redis\n"
            "0 2 * * * php /srv/shop/artisan cache:prune --store=file",
            ["cache-prune-redis", "cache-prune-file"],
        ),
        (
            "*/5 * * * * /opt/x/poll.sh\n0 * * * * /opt/x/poll.sh\n0 3 * * * /opt/x/poll.sh\n"
            "0 3 * * 1 /opt/x/poll.sh\n0 3 1 * * /opt/x/poll.sh",
            ["poll-every-5min", "poll-hourly", "poll-daily", "poll-weekly", "poll-monthly"],
        ),
        (
            "0 1 * * * rsync -a /srv/media/ /b/media-a/\n"
            "0 2 * * * rsync -a /srv/media/ /b/media-b/",
            ["copy-media-media-a", "copy-media-media-b"],
        ),
    ],
)
def test_collisions_are_told_apart_by_what_differs(text: str, names: list[str]) -> None:
    assert _names(text) == names


def test_the_same_framework_command_in_two_apps_is_told_apart_by_the_app() -> None:
    names = _names(
        "0 1 * * * php /srv/shop/artisan orders:sync\n0 2 * * * php /srv/blog/artisan orders:sync"
    )
    assert len(set(names)) == 2
    assert "shop" in names[0] and "blog" in names[1]


def test_the_same_command_twice_a_day_is_told_apart_by_the_time() -> None:
    names = _names("0 1 * * * /opt/x/report.sh\n0 13 * * * /opt/x/report.sh")
    assert len(set(names)) == 2
    assert all(n.startswith("report") for n in names)
    assert "0100" in names[0] and "1300" in names[1]


def test_name_lines_never_counts() -> None:
    same = Naming("sync", ())
    names = name_lines([(same, "0 1 * * *"), (same, "0 1 * * *"), (same, "0 1 * * *")])
    assert len(set(names)) == 3
    assert not any(re.search(r"\d$", n) for n in names)


def test_slug_keeps_a_trailing_number_on_its_word() -> None:
    assert slug("HandleBackupRequestsJob") == "handle-backup-requests-job"
    assert slug("app:sync") == "app-sync"
    assert slug("weekly.0") == "weekly0"


# -- over every crontab the repository holds ----------------------------------------------


def _appended(path: Path, tmp_path: Path, system: bool) -> Path:
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        data += b"\n"
    user = b"root " if system else b""
    copy = tmp_path / path.name  # the same name: the same format is detected
    copy.write_bytes(data + b"17 4 * * * " + user + b"/usr/local/bin/unrelated-report.sh\n")
    return copy


@pytest.mark.parametrize("path", CRONTABS, ids=lambda p: str(p.relative_to(ROOT)))
def test_names_over_every_crontab(path: Path, tmp_path: Path) -> None:
    report = analyze_files([path], default_tz="UTC")
    names = [r.job.name for r in report.jobs]
    for r in report.jobs:
        name, command = r.job.name, r.job.line.command or ""
        counter = re.search(r"-(\d+)$", name)
        assert counter is None or counter.group(1) in command, f"{path}: {name} counts"
        assert name not in NEVER, f"{path}: {name} for {command!r}"
    assert len(set(names)) == len(names), f"{path}: {names}"
    # Stable: analysed again, the same names.
    assert names == [r.job.name for r in analyze_files([path], default_tz="UTC").jobs]
    # An unrelated line appended at the end changes none of them.
    system = any(r.job.line.user for r in report.jobs)
    longer = analyze_files([_appended(path, tmp_path, system)], default_tz="UTC")
    assert [r.job.name for r in longer.jobs] == [*names, "unrelated-report"]


def test_the_crontabs_are_found() -> None:
    assert any(p.parent.name == "samples" for p in CRONTABS)
    assert any(p.suffix == ".cron" for p in CRONTABS)
