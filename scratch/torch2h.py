"""PyTorch RPC (TensorPipe) between two hosts: one rank per process.

The two-host part of `npm run bench` starts rank 0 in one network namespace
and rank 1 in another (joined by a veth pair), so each rank is its own
process here, with the rendezvous address on the command line (the anchor
scripts spawn both ranks in one namespace with mp.spawn, which cannot span
two). Rank 0 calls an identity function on rank 1 with float32 tensors of
each size and prints one JSON line per size: the median round trip, over the
same repetitions as the bench gives tensorbus between the hosts (300 up to
8 MB after 30 of warm-up: TCP windows grow over the first calls; 5 beyond,
after 2).

TensorPipe is limited to what it could use between two machines: the "uv"
(TCP) transport and the channels that go over it. Left to itself it picks
the "cma" channel (process_vm_readv) between two network namespaces of one
kernel, since that channel's domain is the boot id, pid and user namespace,
not the network: a copy between the two processes' memories, which two
machines do not have.

Usage: python3 torch_rpc_two_hosts.py <rank> <master_addr> <master_port> <bytes>[,<bytes>...] <interface>
       [--any-channel]   (let TensorPipe choose among all it registered)
<interface> is the one to listen on (the veth of this rank's namespace): both
TensorPipe and the Gloo group init_rpc makes would otherwise take the address
the host name resolves to, which the other host cannot reach.
"""
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed.rpc as rpc

# What two machines can use: TCP, and the channels carried by its connections.
TWO_HOST_TRANSPORTS = ["uv"]
TWO_HOST_CHANNELS = ["mpt_uv", "basic"]


def identity(x):
    return x


def repetitions(size):
    n = int(os.environ.get("N", "400"))
    return n, int(os.environ.get("W", "0"))


def main(argv):
    rank, master_addr, master_port = int(argv[0]), argv[1], int(argv[2])
    sizes = [int(s) for s in argv[3].split(",") if s]
    os.environ["TP_SOCKET_IFNAME"] = os.environ["GLOO_SOCKET_IFNAME"] = argv[4]
    options = dict(num_worker_threads=4, rpc_timeout=600, init_method=f"tcp://{master_addr}:{master_port}")
    if "--any-channel" not in argv:
        options.update(_transports=TWO_HOST_TRANSPORTS, _channels=TWO_HOST_CHANNELS)
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2,
                 rpc_backend_options=rpc.TensorPipeRpcBackendOptions(**options))
    if rank == 0:
        print(json.dumps({"ready": True}), flush=True)
        for size in sizes:
            x = torch.zeros(size // 4, dtype=torch.float32)
            n, warmup = repetitions(size)
            for _ in range(warmup):
                rpc.rpc_sync("worker1", identity, args=(x,))
            times = []
            for _ in range(n):
                started = time.perf_counter()
                y = rpc.rpc_sync("worker1", identity, args=(x,))
                times.append(time.perf_counter() - started)
                if y.numel() != x.numel():
                    raise RuntimeError(f"identity returned {y.numel()} elements, sent {x.numel()}")
                del y
            print("blocks", " ".join("%.2f" % (statistics.median(times[b:b+50])*1e3) for b in range(0, n, 50)), flush=True)
            print(json.dumps({"system": "pytorch-rpc-tensorpipe-two-hosts", "case": "identity", "bytes": size,
                              "median_us": statistics.median(times) * 1e6}), flush=True)
    rpc.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
