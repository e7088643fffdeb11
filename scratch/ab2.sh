#!/bin/bash
for r in $(seq ${1:-3}); do
  for v in off on; do
    if [ $v = on ]; then export POLL_AFTER_FILL=1; else unset POLL_AFTER_FILL; fi
    echo "$v $(./sh-rpc.sh ${2:-200} | tail -1)"
  done
done
