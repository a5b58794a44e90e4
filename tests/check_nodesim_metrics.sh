#!/usr/bin/env bash
# accel-nodesim --metrics-port serves the Prometheus text on 127.0.0.1
# while its accel phase runs: fetch it (bash's /dev/tcp, no curl needed)
# until a scrape shows the 17 chain sessions, then check the reply.
# Usage: check_nodesim_metrics.sh path/to/accel-nodesim
set -u
sim=$1
port=$(( 20000 + $$ % 20000 ))
"$sim" --duration 4 --format quiet --metrics-port "$port" >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
reply=""
for _ in $(seq 200); do
  if exec 3<>"/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
    printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
    reply=$(cat <&3)
    exec 3<&-
    case "$reply" in *"accel_runtime_sessions 17"*) break;; esac
  fi
  sleep 0.05
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
