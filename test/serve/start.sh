#!/usr/bin/env bash
# `start.sh LOG fbt serve ...`: starts the server in the background on a
# free port (--port 0), waits until /health answers, and prints its base URL
# (http://127.0.0.1:PORT). The server's pid goes to LOG.pid.
set -euo pipefail
log=$1
shift
# A time limit, so that a failed test never leaves a server behind (timeout
# passes SIGTERM on to it).
timeout -s TERM 300 "$@" --port 0 > "$log" 2>&1 &
echo $! > "$log.pid"
for _ in $(seq 100); do
  port=$(grep -o 'http://127.0.0.1:[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  if [[ -n $port ]] && curl -sf "http://127.0.0.1:$port/health" > /dev/null; then
    echo "http://127.0.0.1:$port"
    exit 0
  fi
  sleep 0.1
done
echo "the server did not start:" >&2
cat "$log" >&2
exit 1
