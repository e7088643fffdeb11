cd /work/main/scratch
ip netns exec s13b /usr/bin/python3 torch2h.py 1 10.213.9.1 29500 4194304 s13vb > /tmp/s18/t1.log 2>&1 &
ip netns exec s13a /usr/bin/python3 torch2h.py 0 10.213.9.1 29500 4194304 s13va 2>/tmp/s18/t0.err | grep blocks
wait
