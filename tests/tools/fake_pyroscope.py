#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A loopback stand-in for Grafana Pyroscope's /ingest, for push tests.

Checks what Pyroscope's ingest handler checks for format=pprof: POST to
/ingest, name/from/until in the query, format=pprof, the auth header, and a
body that gunzips into a protobuf whose field 1 (sample_type) is present.
Answers like Pyroscope: 200 empty, or JSON {code, message} with 400/401.

  fake_pyroscope.py --port 0 --port-file F --record R.json --token T
      [--tenant ID] [--fail N [--fail-status 503] [--retry-after S]]

--fail N answers the next N valid requests with --fail-status. Every
request is appended to R.json as {"name", "from", "until", "status"}; the
accepted ones have status 200. Only 127.0.0.1 is bound.
"""
import argparse
import gzip
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


def varint(buf, i):
    shift = value = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def top_fields(buf):
    """Field numbers at the top level of a protobuf message; raises
    ValueError when the bytes are not a well-formed message."""
    seen = set()
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ValueError("field number 0")
        if wire == 0:
            _, i = varint(buf, i)
        elif wire == 1:
            i += 8
        elif wire == 2:
            n, i = varint(buf, i)
            i += n
        elif wire == 5:
            i += 4
        else:
            raise ValueError("wire type %d" % wire)
        if i > len(buf):
            raise ValueError("field %d runs past the end" % field)
        seen.add((field, wire))
    return seen


class State:
    def __init__(self, args):
        self.args = args
        self.fail_left = args.fail
        self.lock = threading.Lock()
        self.log = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):  # quiet: the test reads the record
        pass

    def answer(self, status, message=None, headers=()):
        body = b""
        if message is not None:
            code = {400: "invalid_argument", 401: "unauthenticated", 404: "not_found",
                    429: "resource_exhausted", 503: "unavailable"}.get(status, "unknown")
            body = json.dumps({"code": code, "message": message}).encode()
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        if body:
            self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def record(self, q, status):
        st = self.server.state
        with st.lock:
            st.log.append({
                "name": q.get("name", [""])[0],
                "from": int(q.get("from", ["0"])[0] or 0),
                "until": int(q.get("until", ["0"])[0] or 0),
                "status": status,
            })
            tmp = st.args.record + ".tmp"
            with open(tmp, "w") as f:
                json.dump(st.log, f)
            os.rename(tmp, st.args.record)

    def do_GET(self):
        self.answer(405, "method not allowed")

    def do_POST(self):
        st = self.server.state
        url = urlsplit(self.path)
        q = parse_qs(url.query)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if url.path != "/ingest":
            return self.answer(404, "not found")
        if st.args.token and self.headers.get("Authorization") != "Bearer " + st.args.token:
            return self.answer(401, "no or wrong token")
        if st.args.tenant and self.headers.get("X-Scope-OrgID") != st.args.tenant:
            return self.answer(401, "no or wrong tenant")
        status, why = 200, None
        try:
            for k in ("name", "from", "until", "format", "spyName"):
                if not q.get(k, [""])[0]:
                    raise ValueError("missing query parameter " + k)
            int(q["from"][0]), int(q["until"][0])
            if q["format"][0] != "pprof":
                raise ValueError("format is not pprof")
            fields = top_fields(gzip.decompress(body))
            if (1, 2) not in fields:
                raise ValueError("no sample_type (field 1)")
        except (ValueError, OSError, EOFError) as e:
            status, why = 400, "failed to parse pprof: %s" % e
        if status == 200:
            with st.lock:
                failing = st.fail_left > 0
                if failing:
                    st.fail_left -= 1
            if failing:
                self.record(q, st.args.fail_status)
                hdrs = [("Retry-After", str(st.args.retry_after))] if st.args.retry_after else []
                return self.answer(st.args.fail_status, "try later", hdrs)
        self.record(q, status)
        self.answer(status, why)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--record", required=True)
    ap.add_argument("--token")
    ap.add_argument("--tenant")
    ap.add_argument("--fail", type=int, default=0)
    ap.add_argument("--fail-status", type=int, default=503)
    ap.add_argument("--retry-after", type=int, default=0)
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.state = State(args)
    with open(args.record, "w") as f:
        json.dump([], f)
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % srv.server_address[1])
        os.rename(tmp, args.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
