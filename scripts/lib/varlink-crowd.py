#!/usr/bin/env python3
# A crowd of Varlink clients that hold the agent's connections, for the API abuse test (Tests/ReachAgentTests/
# APIAbuseTests.swift) and `scripts/bench api`: COUNT connections to SOCKET, each calling
# org.gatewayreach.Reach.Subscribe with "more"; of those admitted, a third never read, a third read 512 bytes every
# 2 s, a third read all. Plain sockets (varlink.org's wire format: JSON, each message ending in NUL), no client
# library: a hostile client would not use one either.
#
# Prints one JSON line once every connection was admitted or refused:
#   {"admitted": N, "refused": M, "refused_uids": [...], "limits": [...], "other_errors": [...]}
# then keeps its connections until SIGTERM. On SIGUSR1 it closes one admitted reader and connects again at once,
# CHURN times (the close-then-connect case): each new connection calls GetStatus and must get its reply; it prints
#   {"churned": N, "refused": M, "errors": [...]}
# On SIGUSR2 it closes every connection it holds at once and connects (and subscribes) as many again at once:
#   {"reconnected": N, "refused": M, "errors": [...]}
# Usage: varlink-crowd.py SOCKET COUNT [CHURN]
import json
import os
import select
import signal
import socket
import sys
import time

path, count = sys.argv[1], int(sys.argv[2])
churn = int(sys.argv[3]) if len(sys.argv) > 3 else 100
SUBSCRIBE = b'{"method":"org.gatewayreach.Reach.Subscribe","more":true}\0'
GET_STATUS = b'{"method":"org.gatewayreach.Reach.GetStatus"}\0'


def first_message(s, timeout=5.0):
    """The first NUL-terminated message on s as JSON, or None at end of file or after timeout."""
    data = b""
    end = time.monotonic() + timeout
    while b"\0" not in data:
        left = end - time.monotonic()
        if left <= 0 or not select.select([s], [], [], left)[0]:
            return None
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        data += chunk
    return json.loads(data.split(b"\0", 1)[0])


def call(request):
    """A new connection with `request` sent: (socket, first reply). A refused connection may be closed before the
    request arrives (EPIPE): its error is still read."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    try:
        s.sendall(request)
    except (BrokenPipeError, ConnectionResetError):
        pass
    return s, first_message(s)


admitted = []  # (socket, role): role 0 never reads, 1 reads slowly, 2 reads all
refused, uids, limits, other = 0, set(), set(), []
for i in range(count):
    s, m = call(SUBSCRIBE)
    if m is not None and m.get("error") == "org.gatewayreach.Reach.TooManyClients":
        refused += 1
        uids.add(m["parameters"]["uid"])
        limits.add(m["parameters"]["limit"])
        s.close()
    elif m is not None and "parameters" in m and m.get("continues"):
        s.setblocking(False)
        admitted.append((s, len(admitted) % 3))
    else:
        other.append(repr(m))
        s.close()
print(json.dumps({"admitted": len(admitted), "refused": refused, "refused_uids": sorted(uids),
                  "limits": sorted(limits), "other_errors": other}), flush=True)

churn_asked = False
reconnect_asked = False


def on_usr1(_signum, _frame):
    global churn_asked
    churn_asked = True


def on_usr2(_signum, _frame):
    global reconnect_asked
    reconnect_asked = True


def get_status():
    """A GetStatus call on a new connection: "ok", "refused" (TooManyClients) or what came instead."""
    s, m = call(GET_STATUS)
    s.close()
    if m is not None and m.get("error") == "org.gatewayreach.Reach.TooManyClients":
        return "refused"
    if m is None or "status" not in m.get("parameters", {}):
        return repr(m)
    return "ok"


signal.signal(signal.SIGUSR1, on_usr1)
signal.signal(signal.SIGUSR2, on_usr2)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
last_slow = time.monotonic()
while True:
    if reconnect_asked:
        reconnect_asked = False
        n = len(admitted)
        for s, _ in admitted:
            s.close()
        admitted = []
        again, again_refused, errors = 0, 0, []
        for _ in range(n):
            s, m = call(SUBSCRIBE)
            if m is not None and m.get("continues"):
                s.setblocking(False)
                admitted.append((s, 2))
                again += 1
            else:
                if m is not None and m.get("error") == "org.gatewayreach.Reach.TooManyClients":
                    again_refused += 1
                else:
                    errors.append(repr(m))
                s.close()
        print(json.dumps({"reconnected": again, "refused": again_refused, "errors": errors}), flush=True)
    if churn_asked:
        churn_asked = False
        done, churn_refused, errors = 0, 0, []
        for _ in range(churn):
            readers = [a for a in admitted if a[1] != 0]
            if not readers:
                errors.append("no admitted connection left to close")
                break
            admitted.remove(readers[0])
            readers[0][0].close()
            result = get_status()
            if result == "refused":
                churn_refused += 1
            elif result != "ok":
                errors.append(result)
            else:
                done += 1
            # Held again, as a reader, so that the next round closes one of ours too.
            s, m = call(SUBSCRIBE)
            if m is not None and m.get("continues"):
                s.setblocking(False)
                admitted.append((s, 2))
            else:
                errors.append("resubscribe: " + repr(m))
                s.close()
        print(json.dumps({"churned": done, "refused": churn_refused, "errors": errors}), flush=True)
    now = time.monotonic()
    slow_turn = now - last_slow >= 2
    if slow_turn:
        last_slow = now
    for s, role in list(admitted):
        if role == 0 or (role == 1 and not slow_turn):
            continue
        try:
            while True:
                if not s.recv(512 if role == 1 else 65536):
                    raise ConnectionResetError  # the agent closed it
                if role == 1:
                    break
        except BlockingIOError:
            pass
        except OSError:
            admitted.remove((s, role))
            s.close()
    time.sleep(0.05)
