cd /work/main/scratch
pkill -f "nats-server -c /tmp/s13/nats.conf" ; pkill -f "ns-rpc.mjs" ; sleep 0.2
ip netns exec s13a nats-server -c /tmp/s13/nats.conf >/dev/null 2>&1 &
sleep 0.5
ip netns exec s13b node $CALLEE_FLAGS ns-rpc.mjs callee > /tmp/s13/callee.log 2>&1 &
sleep 2.5
for i in 1 2 3; do BLOCK=50 ip netns exec s13a node $CALLER_FLAGS ns-rpc.mjs caller ${1:-300} 2>/tmp/s13/caller.err | head -1; done
pkill -f "ns-rpc.mjs callee"; pkill -f "nats-server -c /tmp/s13/nats.conf"; wait 2>/dev/null
