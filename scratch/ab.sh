#!/bin/bash
# alternate base and new builds: ab.sh ROUNDS N
for r in $(seq ${1:-3}); do
  for v in base new; do
    if [ $v = base ]; then export TB_NT=/tmp/s17/base/packages/nats-transport/dist/src/index.js; else unset TB_NT; fi
    echo "$v $(./sh-rpc.sh ${2:-400} | tail -1)"
  done
done
