# SPDX-License-Identifier: GPL-2.0
"""pyhostile.py MODE SECONDS: a CPython 3.11 that breaks its own frame
chain, for the Python walk's defences (tests/integration/python.sh).
<module> calls victim(), which calls spin(); once spin() runs, victim's
interpreter frame is corrupted through ctypes, and spin() burns CPU for
SECONDS and ends the process with os._exit (no frame returns into the
corrupted one, no GC runs):
  garbage: victim's f_code points at a list, not a code object;
  loop:    victim's `previous` points at victim itself: the chain loops.
Prints "skip REASON" and exits 3 where the layout is not 3.11's (the
offsets are checked against the live frame before anything is written)."""
import ctypes
import gc
import os
import sys
import time

# CPython 3.11: PyFrameObject.f_frame, _PyInterpreterFrame.f_code/previous
F_FRAME, F_CODE, PREVIOUS = 24, 32, 48
JUNK = [0] * 64


def word(addr):
    return ctypes.c_void_p.from_address(addr).value or 0


def set_word(addr, value):
    ctypes.c_void_p.from_address(addr).value = value


def spin(mode, seconds):
    frame_obj = sys._getframe(1)
    victim = word(id(frame_obj) + F_FRAME)
    if sys.version_info[:2] != (3, 11) or word(victim + F_CODE) != id(frame_obj.f_code):
        print("skip not CPython 3.11's frame layout", flush=True)
        os._exit(3)
    gc.disable()
    if mode == "garbage":
        set_word(victim + F_CODE, id(JUNK))
    else:
        set_word(victim + PREVIOUS, victim)
    print("corrupted", flush=True)
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        for i in range(1000):
            x ^= i
    os._exit(0)


def victim(mode, seconds):
    spin(mode, seconds)


victim(sys.argv[1], float(sys.argv[2]))
