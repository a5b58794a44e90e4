#!/usr/bin/env bash
# accel-nodesim --metrics-port serves the Prometheus text on 127.0.0.1
# while its accel phase runs: fetch it (bash's /dev/tcp, no curl needed)
# until a scrape shows the 17 chain sessions, then check the reply.
# Usage: check_nodesim_metrics.sh path/to/accel-nodesim
set -u
sim=$1
reply="" pid=""
trap '[ -n "$pid" ] && { kill $pid 2>/dev/null; wait $pid 2>/dev/null; }' EXIT
# A port taken by another program makes the simulation exit at once: try
# another one (3 in all). Scrape while it runs (its calibration comes
# first, longer on a busy machine), until a reply shows the 17 sessions,
# the run ends, or 100 s pass.
for attempt in 1 2 3; do
  port=$(( 20000 + ($$ + attempt * 7919) % 20000 ))
  "$sim" --duration 4 --format quiet --metrics-port "$port" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 2000); do
    kill -0 $pid 2>/dev/null || break
    if exec 3<>"/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
      printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
      reply=$(cat <&3)
      exec 3<&-
      case "$reply" in *"accel_runtime_sessions 17"*) break 2;; esac
    fi
    sleep 0.05
  done
  kill $pid 2>/dev/null; wait $pid 2>/dev/null
  [ -n "$reply" ] && break # it served (though not all 17): no other port helps
done
case "$reply" in
  "HTTP/1.0 200 OK"*) ;;
  *) echo "no HTTP 200 from 127.0.0.1:$port: ${reply:0:200}"; exit 1;;
esac
for want in 'Content-Type: text/plain; version=0.0.4' 'accel_runtime_sessions 17' \
            '# TYPE accel_session_ops_submitted_total counter' \
            'accel_session_queue_depth{session="dex-orderbook"'; do
  grep -qF "$want" <<<"$reply" || { echo "missing: $want"; exit 1; }
done
echo "nodesim metrics: ok ($(grep -c '^accel_' <<<"$reply") samples)"
