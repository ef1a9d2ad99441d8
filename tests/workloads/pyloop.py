# SPDX-License-Identifier: GPL-2.0
"""pyloop.py ROUNDS: a fixed amount of CPU-bound work in the interpreter, for
tools/bench/unwind (Debian's python3 is built without frame pointers: only
unwind tables walk its C stack). Each round: a recursive Fibonacci (Python
calls), a sort with a key function (C calling back into Python) and string
and dict work. Every sample's C stack runs from python3's main through
_PyEval_EvalFrameDefault."""
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def sort_round(seed):
    xs = [(seed * 7919 + i * 104729) % 100003 for i in range(2000)]
    return sorted(xs, key=lambda x: (x % 97, x))[0]


def text_round(seed):
    words = {}
    for i in range(2000):
        w = "w%d" % ((seed + i * 31) % 257)
        words[w] = words.get(w, 0) + len(w)
    return len(",".join(sorted(words)))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    acc = 0
    for r in range(rounds):
        acc += fib(18) + sort_round(r) + text_round(r)
    return acc


if __name__ == "__main__":
    main()
