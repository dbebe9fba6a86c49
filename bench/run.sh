#!/usr/bin/env bash
# Runs every benchmark script in bench/ (each prints its numbers and updates its own section of
# docs/benchmarks.md). Needs the PostgreSQL and MariaDB servers for the backend benchmarks.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
for script in bench/bench_*.py; do
  echo "== $script"
  python "$script" || status=1
done
exit $status
