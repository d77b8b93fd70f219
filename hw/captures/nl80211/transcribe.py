#!/usr/bin/env python3
"""Transcribes captured nl80211 messages from public test suites into this folder's data files, by script (never by
hand), so each vector can be traced to its repository, commit and file. Run it against local clones (the search
tool's `fetch` snapshots) to regenerate:

    hw/captures/nl80211/transcribe.py /work/.mirror

Data file format (*.nlmsgs): '#' lines are provenance; every other line is `NAME FRAMING HEX`, where FRAMING is
`nlmsg` (a whole netlink message, nlmsghdr included, as the kernel sent it) or `genl` (only the generic netlink
header and attributes, as some suites store them).
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def show(mirror, repo, commit, path):
    git = os.path.join(mirror, repo.replace("/", "+"), "repo")
    rev = subprocess.run(["git", "-C", git, "rev-parse", commit], check=True, capture_output=True, text=True).stdout
    text = subprocess.run(["git", "-C", git, "show", f"{commit}:{path}"], check=True, capture_output=True, text=True)
    return rev.strip(), text.stdout


def numbers(body):
    out = []
    for tok in re.findall(r"0x[0-9a-fA-F]+|\b\d+\b", body):
        v = int(tok, 16) if tok.lower().startswith("0x") else int(tok)
        if not 0 <= v <= 255:
            raise ValueError(f"not a byte: {tok}")
        out.append(v)
    return bytes(out)


def after(text, marker, opener, closer):
    """The bytes of the first array literal (opener ... closer) after `marker`."""
    start = text.index(marker)
    i = text.index(opener, start) + len(opener)
    j = text.index(closer, i)
    return numbers(text[i:j])


def pyroute2_samples(text):
    """pyroute2 .dump files: hex byte groups, optionally split into '# sample N' sections, before '#:' / '# parsed'."""
    body = re.split(r"^#( parsed|:)", text, maxsplit=1, flags=re.M)[0]
    samples, current = [], []
    for line in body.splitlines():
        if line.startswith("# sample"):
            if current:
                samples.append(bytes(current))
            current = []
            continue
        if line.startswith("#") or not line.strip():
            continue
        current += [int(b, 16) for b in re.findall(r"(?:\\x)?([0-9a-fA-F]{2})(?=[:\s\\]|$)", line)]
    if current:
        samples.append(bytes(current))
    return samples


def write(name, header, rows):
    path = os.path.join(HERE, name)
    with open(path, "w") as f:
        for line in header:
            f.write(f"# {line}\n")
        for row_name, framing, data in rows:
            if framing == "nlmsg":
                length = int.from_bytes(data[:4], "little")
                assert length == len(data), f"{name}/{row_name}: nlmsg_len {length} != {len(data)} bytes"
            f.write(f"{row_name} {framing} {data.hex()}\n")
    print(f"wrote {path} ({len(rows)} messages)")


def main():
    mirror = sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror"

    # pyroute2: real hardware (wlo1; scan results from PR #182).
    rev, info = show(mirror, "svinota/pyroute2", "HEAD", "tests/test_unit/test_nlmsg/iw_info_rsp.dump")
    _, scan = show(mirror, "svinota/pyroute2", "HEAD", "tests/test_unit/test_nlmsg/iw_scan_rsp.dump")
    rows = [("get-interface-reply", "nlmsg", pyroute2_samples(info)[0])]
    rows += [(f"scan-dump-part-{i + 1}", "nlmsg", s) for i, s in enumerate(pyroute2_samples(scan))]
    write("pyroute2.nlmsgs", [
        "origin: https://github.com/svinota/pyroute2 (tests/test_unit/test_nlmsg/iw_info_rsp.dump, iw_scan_rsp.dump)",
        f"commit: {rev}",
        "licence: GPL-2.0-or-later OR Apache-2.0 (pyroute2's dual licence); the bytes are kernel output, kept as data",
        "captured: real hardware (interface wlo1, Intel); scan parts from pyroute2 PR #182 (5180 MHz BSSes)",
        "family id in these captures: 0x1c (28)",
    ], rows)

    # shill (Chromium OS): raw kernel messages from a real device, cross-checked against iw.
    rev, shill = show(mirror, "ArthurSonzogni/chromiumos-platform2", "HEAD", "shill/wifi/nl80211_message_test.cc")
    names = ["TRIGGER_SCAN", "NEW_SCAN_RESULTS", "NEW_STATION", "AUTHENTICATE", "ASSOCIATE", "CONNECT",
             "DEAUTHENTICATE", "DISCONNECT", "NOTIFY_CQM", "DISASSOCIATE"]
    rows = [(n.lower().replace("_", "-") + "-event", "nlmsg",
             after(shill, f"const unsigned char kNL80211_CMD_{n}[] = {{", "{", "}")) for n in names]
    write("shill.nlmsgs", [
        "origin: https://github.com/ArthurSonzogni/chromiumos-platform2 (a mirror of Chromium OS platform2),",
        "        shill/wifi/nl80211_message_test.cc, arrays kNL80211_CMD_*",
        f"commit: {rev}",
        "licence: BSD-3-Clause (Chromium OS); the bytes are kernel output, kept as data",
        "captured: real hardware ('raw packet data coming from the kernel'), multicast events, family id 0x13",
        "notify-cqm-event is a packet-loss CQM event (peer c0:3f:0e:77:e8:7f did not ACK 50 packets)",
    ], rows)

    # wl-nl80211 (rust-netlink): nlmon captures on mac80211_hwsim with hostapd + wpa_supplicant.
    rev, event = show(mirror, "rust-netlink/wl-nl80211", "HEAD", "src/tests/event.rs")
    _, cqm = show(mirror, "rust-netlink/wl-nl80211", "HEAD", "src/tests/cqm.rs")
    _, scanrs = show(mirror, "rust-netlink/wl-nl80211", "HEAD", "src/tests/scan.rs")
    rows = [
        ("connect-event", "nlmsg", after(event, "fn test_captured_connect_result_event", "vec![", "]")),
        ("disconnect-event", "nlmsg", after(event, "fn test_captured_disconnect_event", "vec![", "]")),
        ("new-scan-results-event", "nlmsg", after(event, "fn test_captured_new_scan_results_event", "vec![", "]")),
        ("unknown-event", "nlmsg", after(event, "fn test_captured_unknown_event", "vec![", "]")),
        ("notify-cqm-rssi-event", "nlmsg", after(cqm, "fn test_captured_notify_cqm_event", "vec![", "]")),
        ("set-cqm-request", "nlmsg", after(cqm, "fn test_captured_set_cqm_message", "vec![", "]")),
        ("scan-dump-reply", "genl", after(scanrs, "fn test_get_scan_reply", "vec![", "]")),
    ]
    write("wl-nl80211.nlmsgs", [
        "origin: https://github.com/rust-netlink/wl-nl80211 (src/tests/event.rs, cqm.rs, scan.rs)",
        f"commit: {rev}",
        "licence: MIT; the bytes are kernel output, kept as data",
        "captured: nlmon on mac80211_hwsim (hostapd + wpa_supplicant); scan-dump-reply from an MT7925E laptop",
        "family ids in these captures: 0x32 (event.rs), 0x2c (cqm.rs); scan-dump-reply has no nlmsghdr (genl)",
    ], rows)

    # PureSwift/WLAN: a real USB dongle (wlx74da3826382c); the tests were removed after this commit.
    commit = "0e9fa66b"
    rev, netlink = show(mirror, "PureSwift/WLAN", commit, "Tests/NetlinkTests/NetlinkTests.swift")
    _, nl80211 = show(mirror, "PureSwift/WLAN", commit, "Tests/NetlinkTests/NL80211Tests.swift")
    rows = [
        ("getfamily-request", "nlmsg", after(netlink, "func testResolveGenericFamilyCommand", "Data([", "])")),
        ("newfamily-reply", "nlmsg", after(netlink, "func testResolveGenericFamilyResponse", "Data([", "])")),
        ("error-reply", "nlmsg", after(netlink, "func testErrorMessage", "Data([", "])")),
        ("scan-dump-part", "nlmsg", after(nl80211, "func testScanData", "Data([", "])")),
    ]
    write("pureswift-wlan.nlmsgs", [
        "origin: https://github.com/PureSwift/WLAN (Tests/NetlinkTests/NetlinkTests.swift, NL80211Tests.swift)",
        f"commit: {rev} (the tests were removed after it)",
        "licence: MIT; the bytes are kernel output, kept as data",
        "captured: real USB dongle (wlx74da3826382c); newfamily-reply is the controller's answer for \"nl80211\"",
        "(family id 28, with the config/scan/regulatory/mlme/vendor/nan multicast groups)",
    ], rows)


if __name__ == "__main__":
    main()
