#!/usr/bin/env bash
# Finds nats-server (NATS_SERVER_BIN, PATH, /usr/sbin, /usr/bin, /usr/local/bin)
# and installs Debian's package when it is missing and we are root.
set -u
for candidate in "${NATS_SERVER_BIN:-}" "$(command -v nats-server 2>/dev/null)" /usr/sbin/nats-server /usr/bin/nats-server /usr/local/bin/nats-server; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then
    echo "[tensorbus] nats-server: $candidate ($("$candidate" --version 2>/dev/null))"
    exit 0
  fi
done
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "[tensorbus] nats-server not found: installing Debian's package (apt-get install -y nats-server)"
  export DEBIAN_FRONTEND=noninteractive
  (apt-get update -qq && apt-get install -y -qq nats-server) >/tmp/tensorbus-apt.log 2>&1 || {
    echo "[tensorbus] apt-get failed; see /tmp/tensorbus-apt.log" >&2
    exit 1
  }
  echo "[tensorbus] nats-server: $(command -v nats-server || echo /usr/sbin/nats-server) ($(/usr/sbin/nats-server --version 2>/dev/null || nats-server --version))"
  exit 0
fi
cat >&2 <<'MSG'
[tensorbus] nats-server is not installed, and this script cannot install it (it needs root and apt-get).
  Debian/Ubuntu:  sudo apt-get install -y nats-server
  Elsewhere:      download a release from the NATS project (nats-server-vX.Y.Z-<os>-<arch>)
                  and put it on PATH, or set NATS_SERVER_BIN=/path/to/nats-server
MSG
exit 1
