#!/usr/bin/env python3
"""A minimal wireless medium for mac80211_hwsim, so the lab can set the signal a radio receives to any level.

Once a process sends HWSIM_CMD_REGISTER on the MAC80211_HWSIM generic netlink family, the kernel stops passing
frames between its simulated radios and hands every transmitted frame to that process instead (HWSIM_CMD_FRAME).
This medium delivers each frame to every other radio it has heard from (HWSIM_CMD_FRAME with HWSIM_ATTR_SIGNAL set
to the level read from SIGNAL_FILE, in dBm) and reports the transmission back to the sender
(HWSIM_CMD_TX_INFO_FRAME, acknowledged when the frame was unicast and delivered). This is what the wmediumd project
does with a full path-loss model; here one level, changed at run time, is all the lab needs.

Written in Python (not Swift) because it is a test fixture that runs inside the lab VM from the build machine's
root: no build step, no shipped code, and the standard library's AF_NETLINK sockets are enough.

Usage: hwsim-medium.py SIGNAL_FILE [LOG_FILE]     (SIGNAL_FILE holds one integer, e.g. -70)
"""
import os
import socket
import struct
import sys
import time

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NLM_F_REQUEST = 1
NLM_F_ACK = 4
NLMSG_ERROR = 2

# include/uapi/linux/mac80211_hwsim.h (drivers/net/wireless/mac80211_hwsim.h in 6.1)
HWSIM_CMD_REGISTER = 1
HWSIM_CMD_FRAME = 2
HWSIM_CMD_TX_INFO_FRAME = 3
HWSIM_ATTR_ADDR_RECEIVER = 1
HWSIM_ATTR_ADDR_TRANSMITTER = 2
HWSIM_ATTR_FRAME = 3
HWSIM_ATTR_FLAGS = 4
HWSIM_ATTR_RX_RATE = 5
HWSIM_ATTR_SIGNAL = 6
HWSIM_ATTR_TX_INFO = 7
HWSIM_ATTR_COOKIE = 8
HWSIM_ATTR_FREQ = 19
HWSIM_TX_CTL_NO_ACK = 1 << 1
HWSIM_TX_STAT_ACK = 1 << 2


def attr(kind, payload):
    data = struct.pack("=HH", 4 + len(payload), kind) + payload
    return data + b"\0" * ((4 - len(data) % 4) % 4)


def attrs(data):
    out, i = {}, 0
    while i + 4 <= len(data):
        length, kind = struct.unpack_from("=HH", data, i)
        if length < 4 or i + length > len(data):
            break
        out.setdefault(kind & 0x3FFF, data[i + 4:i + length])
        i += (length + 3) & ~3
    return out


class Genl:
    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.bind((0, 0))
        self.seq = 1

    def send(self, family, cmd, payload, flags=NLM_F_REQUEST):
        self.seq += 1
        body = struct.pack("=BBH", cmd, 1, 0) + payload
        self.sock.send(struct.pack("=IHHII", 16 + len(body), family, flags, self.seq, 0) + body)

    def messages(self):
        data = self.sock.recv(65536)
        i = 0
        while i + 16 <= len(data):
            length, kind, flags, seq, pid = struct.unpack_from("=IHHII", data, i)
            if length < 16 or i + length > len(data):
                break
            yield kind, data[i + 16:i + length]
            i += (length + 3) & ~3

    def resolve(self, name):
        self.send(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, attr(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0"))
        for kind, body in self.messages():
            if kind == NLMSG_ERROR:
                sys.exit(f"hwsim-medium: no {name} family (errno {-struct.unpack_from('=i', body)[0]})")
            return struct.unpack("=H", attrs(body[4:])[CTRL_ATTR_FAMILY_ID][:2])[0]
        sys.exit("hwsim-medium: no reply to CTRL_CMD_GETFAMILY")


def main():
    signal_file = sys.argv[1]
    log = open(sys.argv[2], "a", buffering=1) if len(sys.argv) > 2 else None
    nl = Genl()
    family = nl.resolve("MAC80211_HWSIM")
    nl.send(family, HWSIM_CMD_REGISTER, b"", NLM_F_REQUEST | NLM_F_ACK)
    # Each radio's medium address is its wiphy's second address: the permanent one with 0x40 set in byte 0
    # (mac80211_hwsim: data->addresses[1].addr[0] |= 0x40). Radios heard from later are added as they transmit.
    radios = []
    for phy in sorted(os.listdir("/sys/class/ieee80211")):
        try:
            perm = bytes.fromhex(open(f"/sys/class/ieee80211/{phy}/macaddress").read().strip().replace(":", ""))
            radios.append(bytes([perm[0] | 0x40]) + perm[1:])
        except (OSError, ValueError):
            pass
    level, stamp, frames = -30, None, 0
    print(f"hwsim-medium: registered on family {family}", flush=True)
    while True:
        for kind, body in nl.messages():
            if kind == NLMSG_ERROR:
                err = struct.unpack_from("=i", body)[0]
                if err:
                    sys.exit(f"hwsim-medium: kernel error {err}")
                continue
            if kind != family or body[0] != HWSIM_CMD_FRAME:
                continue
            a = attrs(body[4:])
            sender = a.get(HWSIM_ATTR_ADDR_TRANSMITTER)
            frame = a.get(HWSIM_ATTR_FRAME)
            if sender is None or frame is None or HWSIM_ATTR_COOKIE not in a:
                continue
            if sender not in radios:
                radios.append(sender)
                if log:
                    log.write(f"{time.monotonic():.3f} radio {sender.hex(':')}\n")
            try:
                st = os.stat(signal_file)
                if st.st_mtime_ns != stamp:
                    stamp = st.st_mtime_ns
                    level = int(open(signal_file).read().strip())
                    if log:
                        log.write(f"{time.monotonic():.3f} level {level}\n")
            except (OSError, ValueError):
                pass
            flags = struct.unpack("=I", a.get(HWSIM_ATTR_FLAGS, b"\0\0\0\0")[:4])[0]
            tx_info = a.get(HWSIM_ATTR_TX_INFO, b"")
            rate = struct.unpack_from("=b", tx_info)[0] if tx_info else 0
            signal = struct.pack("=i", level)
            extra = attr(HWSIM_ATTR_FREQ, a[HWSIM_ATTR_FREQ]) if HWSIM_ATTR_FREQ in a else b""
            delivered = False
            for receiver in radios:
                if receiver == sender:
                    continue
                nl.send(family, HWSIM_CMD_FRAME,
                        attr(HWSIM_ATTR_ADDR_RECEIVER, receiver) + attr(HWSIM_ATTR_FRAME, frame)
                        + attr(HWSIM_ATTR_RX_RATE, struct.pack("=I", max(rate, 0)))
                        + attr(HWSIM_ATTR_SIGNAL, signal) + extra)
                delivered = True
            status = flags | (HWSIM_TX_STAT_ACK if delivered and not flags & HWSIM_TX_CTL_NO_ACK else 0)
            nl.send(family, HWSIM_CMD_TX_INFO_FRAME,
                    attr(HWSIM_ATTR_ADDR_TRANSMITTER, sender) + attr(HWSIM_ATTR_FLAGS, struct.pack("=I", status))
                    + attr(HWSIM_ATTR_COOKIE, a[HWSIM_ATTR_COOKIE]) + attr(HWSIM_ATTR_SIGNAL, signal)
                    + attr(HWSIM_ATTR_TX_INFO, tx_info))
            frames += 1


if __name__ == "__main__":
    main()
