#!/usr/bin/env bash
# `make demo`: the whole journey of one crontab line, on SQLite, in a temporary directory.
#
#   analyze → plan → generate registry + Alembic revision → db upgrade → migrate the first job
#   → fire it as cron would (twice, two hosts) → a worker runs it once → status → verify
#   → rollback restores the crontab byte for byte.
#
# Needs only the installed `migrate-cron` on PATH (the Makefile puts .venv/bin first).
# KEEP=1 keeps the directory for a look around afterwards.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MC=$(command -v migrate-cron || true)
[ -n "$MC" ] || { echo "migrate-cron is not on PATH (run: make demo)" >&2; exit 1; }
BIN=$(cd "$(dirname "$MC")" && pwd)
export PATH="$BIN:$PATH"   # absolute, so it still holds after the cd below
PY=python3
[ -x "$BIN/python3" ] && PY="$BIN/python3"
DEMO=$(mktemp -d "${TMPDIR:-/tmp}/migrate-cron-demo.XXXXXX")
if [ "${KEEP:-}" = 1 ]; then
    trap 'echo; echo "kept: $DEMO"' EXIT
else
    trap 'rm -rf "$DEMO"' EXIT
fi
cd "$DEMO"
export MIGRATE_CRON_DATABASE_URL="sqlite:///$DEMO/migrate-cron.db"
export MIGRATE_CRON_REGISTRY="$DEMO/migrate-cron.toml"
unset MIGRATE_CRON_TABLE_PREFIX

bold=$'\033[1m' dim=$'\033[2m' off=$'\033[0m'
[ -t 1 ] || { bold='' dim='' off=''; }
chapter() { printf '\n%s== %s ==%s\n' "$bold" "$*" "$off"; }
say() { printf '%s\n' "$*" | fold -s -w 100; }
run() { printf '%s$ %s%s\n' "$dim" "$*" "$off"; "$@"; }

command -v flock >/dev/null || { echo "the demo's crontab uses flock (util-linux): install it" >&2; exit 1; }

chapter "0. The shop's crontab"
say "samples/shop.crontab is the crontab of a Laravel shop: an invoice export for the \
accountant, a 5-minute ERP poller, env lines, a mail with its body after '%'. Its paths point \
into this temporary directory, and 'php' is a 3-line stand-in that writes each run to runs.log, \
so the commands really run here. Everything else is the file as it is."
mkdir -p shop/storage bin
sed -e "s#/var/www/shop#$DEMO/shop#g" \
    -e "s#/tmp/erp-sync.lock#$DEMO/erp-sync.lock#g" \
    -e "s#^PATH=#PATH=$DEMO/bin:#" \
    "$HERE/shop.crontab" > shop.crontab
cat > bin/php <<EOF
#!/bin/sh
# Stands in for PHP in the demo: one line per run, with the slot migrate-cron passes.
echo "ran: php \$* (slot \${MIGRATE_CRON_SCHEDULED_FOR:-none})" >> "$DEMO/shop/storage/runs.log"
EOF
chmod +x bin/php
cp shop.crontab shop.crontab.orig
run grep -n -e 'orders:push-erp' -e 'invoices:export' shop.crontab

chapter "1. Analyze: what every line is, and what is wrong with it"
run migrate-cron analyze shop.crontab && rc=0 || rc=$?
say "analyze exited $rc: 1 means a finding to act on (an error: here line 24's unescaped %, \
which cuts the mail command), as in CI; --fail-on never always exits 0."

chapter "2. Plan: by pain, not by effort"
run migrate-cron plan shop.crontab
FIRST=$(migrate-cron plan shop.crontab --json | "$PY" -c '
import json, sys
print(next(r["name"] for r in json.load(sys.stdin)["plan"] if r["step"] < 4))')
say "The first job to move is $FIRST."

chapter "3. The registry (migrate-cron.toml) and the Alembic revision"
ZONE=$("$PY" -c 'from migrate_cron.crontab.timezone import host_timezone; print(host_timezone())')
run migrate-cron generate registry shop.crontab -o migrate-cron.toml --tz "$ZONE" && rc=0 || rc=$?
say "generate exited $rc: it wrote every line but line 24, which never worked as written (the \
unescaped % cuts the mail command; --force would register it with the error as its comment). \
--tz names the zone this host's cron runs in ($ZONE): Debian's cron ignores the file's \
CRON_TZ, so without --tz those lines would be refused too."
say "Its entry, with the original line kept byte for byte for rollback:"
"$PY" - "$FIRST" <<'EOF'
import re, sys
text = open("migrate-cron.toml", encoding="utf-8").read()
start = text.index(f"[jobs.{sys.argv[1]}]")
end = text.find("\n[jobs.", text.index(f"[jobs.{sys.argv[1]}.source]"))
print(text[start:end if end > 0 else None].rstrip())
EOF
say ""
say "The tables: one way per database (README, \"Two ways to the tables\"). With an Alembic \
project of your own, 'migrate-cron generate migration' appends them to your history and \
'alembic upgrade head' creates them. Without one, as here, migrate-cron creates them itself:"
run migrate-cron db upgrade

chapter "4. Migrate $FIRST: cron keeps the schedule, the queue runs the command"
run migrate-cron migrate "$FIRST" --crontab shop.crontab --format user

chapter "5. Fire it as cron would: the same minute on two hosts"
LINE_CMD=$("$PY" - "$FIRST" <<'EOF'
import sys
from migrate_cron.crontab.parser import read_crontab
for line in read_crontab("shop.crontab").jobs:
    if f" enqueue {sys.argv[1]} " in line.shell_command:
        print(line.shell_command)
EOF
)
SLOT=$("$PY" - "$FIRST" <<'EOF'
import sys
from datetime import UTC, datetime
from migrate_cron.crontab.schedule import Schedule
from migrate_cron.registry import load_registry
job = load_registry("migrate-cron.toml").get(sys.argv[1])
slot = Schedule(job.schedule, job.timezone).latest_at_or_before(datetime.now(UTC))
print(slot.strftime("%Y-%m-%dT%H:%M:%SZ"))
EOF
)
say "This is the exact command cron hands to /bin/sh for the new line. We start it twice at \
once, as web1 and web2 would. Cron would start it at $SLOT; it is not that minute now, so we \
append --slot $SLOT to say which minute we stand in for. (From cron, the default --slot auto \
takes the job's latest slot: on both hosts the same one.)"
printf '%s$ sh -c "%s --slot %s"   # web1 and web2, at the same time%s\n' "$dim" "$LINE_CMD" "$SLOT" "$off"
sh -c "$LINE_CMD --slot $SLOT" &
web1=$!
sh -c "$LINE_CMD --slot $SLOT" &
web2=$!
wait "$web1" && wait "$web2"
say "Both exited 0 (quietly, so cron mails nothing). The slot key made it one job:"
run migrate-cron jobs list --kind "$FIRST"

chapter "6. A worker runs it, once"
run migrate-cron worker --once
run cat shop/storage/runs.log

chapter "7. Status: the three numbers to watch"
say "The age of the oldest waiting job, the failed count, and the duration per job kind:"
run migrate-cron status

chapter "8. Verify the switch, and where every line stands"
say "verify says a worker serves the job only while one runs: start one in the background."
migrate-cron worker --heartbeat 1 >worker.log 2>&1 &
worker=$!
for _ in $(seq 1 60); do  # up once it renews the workers' lease (within a heartbeat)
    migrate-cron verify "$FIRST" --crontab shop.crontab >/dev/null 2>&1 && break
    sleep 0.5
done
run migrate-cron verify "$FIRST" --crontab shop.crontab || { kill -TERM "$worker"; exit 1; }
kill -TERM "$worker" && wait "$worker"
run migrate-cron migrations

chapter "9. Roll back: the line comes back, byte for byte"
run migrate-cron rollback "$FIRST"
run cmp shop.crontab shop.crontab.orig
say "shop.crontab is byte for byte the file we started with; $FIRST is back on cron."
