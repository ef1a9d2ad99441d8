"""pprof_wire.py: the protobuf wire format as profile.proto's readers in
tests/tools need it (varints and the fields of a message), and nothing
more: no generated code, no package."""


def varint(b, i):
    """The varint at b[i], and the index after it."""
    s = v = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """(field number, wire type, value) of each field of message b: an int
    for varints, bytes for the others."""
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        f, t = k >> 3, k & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif t == 1:
            v, i = b[i:i + 8], i + 8
        elif t == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % t)
        yield f, t, v
