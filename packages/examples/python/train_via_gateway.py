#!/usr/bin/env python3
"""A legacy orchestrator: trains a model on tensorbus workers through the
XML-RPC gateway, with Python's standard library only.

usage: python3 train_via_gateway.py URL [--epochs N] [--lr X]

The parameter server `ps` holds the model (demo.LinearModel, used through an
RRef handle); the trainers `trainer0` and `trainer1` each compute the loss and
gradient on their own shard (demo.gradient). Each epoch: read the weights,
ask both trainers at once (system.multicall), average, apply on `ps`. Tensors
cross as {dtype, shape, data} structs, data being the little-endian float32
values in base64. Prints one line per epoch: "epoch N loss X w [a, b]".
"""
import argparse
import struct
import sys
import xmlrpc.client

TRAINERS = ["trainer0", "trainer1"]


def to_tensor(values):
    return {"dtype": "float32", "shape": [len(values)], "data": xmlrpc.client.Binary(struct.pack("<%df" % len(values), *values))}


def from_tensor(tensor):
    if tensor["dtype"] != "float32":
        raise ValueError("expected float32, got " + tensor["dtype"])
    data = tensor["data"].data
    return list(struct.unpack("<%df" % (len(data) // 4), data))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.3)
    args = parser.parse_args()

    proxy = xmlrpc.client.ServerProxy(args.url, allow_none=True)
    methods = proxy.system.listMethods()
    missing = [m for m in ["ps.demo.LinearModel"] + [t + ".demo.gradient" for t in TRAINERS] if m not in methods]
    if missing:
        sys.exit("the gateway does not offer " + ", ".join(missing))
    print("gradient:", proxy.system.methodHelp("trainer0.demo.gradient"))

    model = getattr(proxy, "ps.demo.LinearModel")()
    print("model handle", model[:9] + "...")
    try:
        for epoch in range(1, args.epochs + 1):
            weights = proxy.rref.call(model, "weights", [])
            batch = xmlrpc.client.MultiCall(proxy)
            for index, trainer in enumerate(TRAINERS):
                getattr(batch, trainer + ".demo.gradient")(weights, index)
            results = list(batch())
            loss = sum(r["loss"] for r in results) / len(results)
            grads = [from_tensor(r["grad"]) for r in results]
            mean = [sum(g[i] for g in grads) / len(grads) for i in range(2)]
            proxy.rref.call(model, "apply", [to_tensor(mean), args.lr])
            w = from_tensor(proxy.rref.call(model, "weights", []))
            print("epoch %d loss %.6f w [%.4f, %.4f]" % (epoch, loss, w[0], w[1]), flush=True)
    except xmlrpc.client.Fault as fault:
        sys.exit("fault %d: %s" % (fault.faultCode, fault.faultString))
    finally:
        proxy.rref.release(model)


if __name__ == "__main__":
    main()
