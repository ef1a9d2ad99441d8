# SPDX-License-Identifier: GPL-2.0
"""pyshares.py SECONDS [json]: a known answer for Python frames
(tests/integration/python.sh). outer() calls leaf_a(n) and leaf_b(2n),
whose bodies are the same loop: leaf_a takes 1/3 of the time, leaf_b 2/3,
both under outer. The loop keeps its value in one digit (xor, never a
sum that outgrows 2**30 in leaf_b only and slows its rounds), and n varies
at random from round to round, so no round's length can lock in phase
with the sampling period and favour one leaf. With "json": encode() calls json.dumps on a big object,
so the C encoder (native code called from Python) runs under encode.
Runs for SECONDS of its own CPU time (a busy machine stretches the wall
time, not the samples), 0: until killed; with $PYSHARES_READY set, creates
that file once start-up is over; with $PYSHARES_TRUTH set, writes the CPU
time it measured in each leaf (write_truth). Any CPython 3.7+."""
import json
import os
import random
import sys
import time


def leaf_a(n):
    x = 0
    for i in range(n):
        x ^= i * i
    return x


def leaf_b(n):
    x = 0
    for i in range(n):
        x ^= i * i
    return x


def outer(deadline):
    # the clock is a system call (CPU time has no vDSO): read it every
    # tenth round, so outer's own time stays small beside the leaves'.
    # spent: the thread's CPU time in each leaf, as the process measures
    # it (a leaf may run slower than its twin in one process: where the
    # heap put its code object, say), for the test to compare with.
    rounds = random.Random(1)
    clock = time.thread_time_ns
    spent = [0, 0]
    while time.process_time() < deadline:
        for _ in range(10):
            n = 800 + rounds.randrange(400)
            t0 = clock()
            leaf_a(n)
            t1 = clock()
            leaf_b(2 * n)
            t2 = clock()
            spent[0] += t1 - t0
            spent[1] += t2 - t1
    return spent


def write_truth(spent):
    """With $PYSHARES_TRUTH set: the CPU ns spent in leaf_a and leaf_b,
    into PREFIX.COMM.PID."""
    prefix = os.environ.get("PYSHARES_TRUTH")
    if not prefix:
        return
    with open("/proc/self/comm") as f:
        comm = f.read().strip()
    with open("%s.%s.%d" % (prefix, comm, os.getpid()), "w") as f:
        f.write("%d %d\n" % (spent[0], spent[1]))


def encode(deadline):
    data = [{"k%d" % i: [i, str(i), float(i)] for i in range(50)} for _ in range(200)]
    while time.process_time() < deadline:
        json.dumps(data)


def main():
    time.sleep(float(os.environ.get("PYSHARES_DELAY", "0")))
    if os.environ.get("PYSHARES_READY"):
        open(os.environ["PYSHARES_READY"], "w").close()
    while os.environ.get("PYSHARES_GO") and not os.path.exists(os.environ["PYSHARES_GO"]):
        time.sleep(0.01)
    seconds = float(sys.argv[1])
    deadline = time.process_time() + seconds if seconds > 0 else float("inf")
    if len(sys.argv) > 2 and sys.argv[2] == "json":
        encode(deadline)
    else:
        write_truth(outer(deadline))
    time.sleep(float(os.environ.get("PYSHARES_LINGER", "0")))


main()
