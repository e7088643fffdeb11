#!/bin/bash
cd /work/main/scratch
pgrep -f "nats-server -p 4334" >/dev/null || { nats-server -p 4334 -a 127.0.0.1 >/dev/null 2>&1 & sleep 0.5; }
node $CALLEE_FLAGS sh-sched.mjs callee > /tmp/s19/callee.log 2>&1 & CP=$!
for i in $(seq 50); do grep -q "callee up" /tmp/s19/callee.log 2>/dev/null && break; sleep 0.1; done
CALLEE_PID=$CP node $CALLER_FLAGS sh-sched.mjs caller 2>&1 | grep -v "^\[tensorbus\]"
kill -TERM $CP; wait $CP 2>/dev/null
