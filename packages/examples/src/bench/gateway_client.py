"""The Python client of the gateway case: N calls of callee.bench.echo through
the gateway with xmlrpc.client (one kept-alive connection); prints the
latency of each, in microseconds, as JSON.

usage: python3 gateway_client.py URL N WARMUP
"""
import json
import sys
import time
import xmlrpc.client

url, n, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
proxy = xmlrpc.client.ServerProxy(url)
echo = getattr(proxy, "callee.bench.echo")
for i in range(warmup):
    echo(i)
samples = []
for i in range(n):
    start = time.perf_counter()
    if echo(i) != i:
        sys.exit("wrong answer")
    samples.append((time.perf_counter() - start) * 1e6)
print(json.dumps(samples))
