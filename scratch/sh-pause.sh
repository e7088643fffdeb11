#!/bin/bash
# usage: N [caller node flags] ; env CALLEE_FLAGS
cd /work/main/scratch
pgrep -f "nats-server -p 4334" >/dev/null || { nats-server -p 4334 -a 127.0.0.1 >/dev/null 2>&1 & sleep 0.5; }
node $CALLEE_FLAGS sh-pause.mjs callee > /tmp/s17/callee.log 2>&1 & CP=$!
for i in $(seq 50); do grep -q "callee up" /tmp/s17/callee.log 2>/dev/null && break; sleep 0.1; done
node $CALLER_FLAGS sh-pause.mjs caller 2>&1 | grep -v "^\[tensorbus\]"
kill -TERM $CP; wait $CP 2>/dev/null
