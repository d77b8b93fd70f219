#!/usr/bin/env python3
"""Records netlink traffic seen on an nlmon interface, and turns a lab recording into a capture data file.

In the VM (hw/lab/guest.sh, capture mode):  nlcapture.py record nlmon0 OUT.jsonl SECONDS
    Every frame the nlmon device passes (both directions, all netlink families) is written as one JSON line
    {"hex": …}; an AF_PACKET socket on nlmon delivers the netlink messages themselves, no link header.
On the host (scripts/lab-wifi capture):      nlcapture.py store OUT_DIR CAPTURE_DIR
    Picks the kernel's replies to iw's nl80211 requests (GET_INTERFACE, GET_SCAN and GET_SURVEY dumps, GET_STATION) from
    the recording and writes CAPTURE_DIR/lab-hwsim.nlmsgs in the format of hw/captures/nl80211/transcribe.py.
"""
import json
import os
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
NLM_F_REQUEST = 1
NLMSG_MIN_TYPE = 0x10
NL80211_CMD_NEW_INTERFACE = 7
NL80211_CMD_NEW_STATION = 19
NL80211_CMD_NEW_SCAN_RESULTS = 34
NL80211_CMD_NEW_SURVEY_RESULTS = 51


def record(ifname, path, seconds):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((ifname, 0))
    s.settimeout(0.2)
    end = time.monotonic() + seconds
    with open(path, "w") as f:
        while time.monotonic() < end:
            try:
                data = s.recv(1 << 16)
            except socket.timeout:
                continue
            f.write(json.dumps({"hex": data.hex()}) + "\n")


def messages(datagram):
    i = 0
    while i + 16 <= len(datagram):
        length, kind, flags, seq, pid = struct.unpack_from("=IHHII", datagram, i)
        if length < 16 or i + length > len(datagram):
            return
        yield datagram[i:i + length], kind, flags, seq
        i += (length + 3) & ~3


def store(out, dest):
    wanted = {NL80211_CMD_NEW_INTERFACE: "get-interface-dump-part", NL80211_CMD_NEW_SCAN_RESULTS: "scan-dump-part",
              NL80211_CMD_NEW_STATION: "get-station-reply", NL80211_CMD_NEW_SURVEY_RESULTS: "survey-dump-part"}
    rows, counts = [], {}
    for line in open(os.path.join(out, "station-capture.jsonl")):
        for msg, kind, flags, seq in messages(bytes.fromhex(json.loads(line)["hex"])):
            if kind < NLMSG_MIN_TYPE or flags & NLM_F_REQUEST or seq == 0 or len(msg) < 20:
                continue  # requests, control messages and multicast notifications are not replies
            cmd = msg[16]
            if cmd not in wanted:
                continue
            counts[cmd] = counts.get(cmd, 0) + 1
            rows.append((f"{wanted[cmd]}-{counts[cmd]}", msg))
    if not any(name.startswith("get-station-reply") for name, _ in rows):
        sys.exit("nlcapture: no GET_STATION reply in the recording")
    kernel = open(os.path.join(out, "kernel.txt")).read().strip()
    iw = open(os.path.join(out, "iw-station-get.txt")).read()
    path = os.path.join(dest, "lab-hwsim.nlmsgs")
    with open(path, "w") as f:
        f.write("# origin: this project's WiFi lab (scripts/lab-wifi capture): recorded with nlmon inside the VM\n")
        f.write(f"# kernel: Debian {kernel}, mac80211_hwsim radios=2; hostapd on wlan0 (lab-ap, channel 6), "
                "wpa_supplicant on wlan1\n")
        f.write("# requests: iw dev (GET_INTERFACE dump), iw dev wlan1 scan dump (GET_SCAN), "
                "iw dev wlan1 station get 02:00:00:00:00:00 (GET_STATION), iw dev wlan1 survey dump (GET_SURVEY)\n")
        f.write("# licence: project data (no third-party content); the bytes are kernel output\n")
        f.write("# iw's view of the station entry at the time:\n")
        for l in iw.splitlines():
            f.write(f"#   {l}\n")
        for name, msg in rows:
            f.write(f"{name} nlmsg {msg.hex()}\n")
    print(f"wrote {path} ({len(rows)} messages)")


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    elif sys.argv[1] == "store":
        store(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: nlcapture.py record IFACE OUT SECONDS | store OUT_DIR CAPTURE_DIR")
