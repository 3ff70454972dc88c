#!/usr/bin/env bash
# Installs, from Debian's packages and only when missing, the system programs the test suite runs
# for real: a PostgreSQL server (initdb/postgres, started throwaway by the tests) and Chromium
# (driven by Playwright in the dashboard tests).
set -euo pipefail
need=()
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  need+=(postgresql)
fi
if ! command -v chromium >/dev/null 2>&1; then
  need+=(chromium)
fi
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != "0" ]; then
  SUDO=sudo
else
  SUDO=
fi
echo "installing system packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
