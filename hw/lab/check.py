#!/usr/bin/env python3
"""Judges what the WiFi lab's guest scenario (hw/lab/guest.sh) wrote. Every check prints PASS or FAIL with what was
seen; the exit code is 1 when any check failed.

Usage: check.py OUT_DIR | --bench OUT_DIR | --capture OUT_DIR CAPTURE_DIR
"""
import json
import os
import re
import statistics
import sys

results = []


def check(name, ok, seen):
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {seen}")


def load(out, name):
    path = os.path.join(out, name)
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        return None, f"missing ({e.strerror})"
    try:
        return json.loads(text), None
    except ValueError as e:
        return None, f"not JSON ({e}): {text[:200]!r}"


def entry(doc, iface):
    for w in (doc or {}).get("wifi", []):
        if w.get("interface") == iface:
            return w
    return None


def iw_field(out, name, pattern):
    try:
        text = open(os.path.join(out, name)).read()
    except OSError:
        return None
    m = re.search(pattern, text, re.M)
    return m.group(1) if m else None


def check_station(label, w, signal):
    if w is None:
        check(f"{label}: wlan1 entry", False, "absent")
        return
    expect = {
        "mode": "station", "associated": True, "ssid": "lab-ap", "frequency_mhz": 2437, "channel": 6,
        "band": "2.4GHz", "signal_dbm": signal,
    }
    for key, want in expect.items():
        check(f"{label}: {key} == {want!r}", w.get(key) == want, w.get(key))


def check_lab(out):
    iw_bssid = iw_field(out, "iw-link-associated.txt", r"^Connected to ([0-9a-f:]{17})")
    iw_signal = iw_field(out, "iw-link-associated.txt", r"signal: (-?\d+) dBm")
    check("iw sees wlan1 associated", iw_bssid is not None, iw_bssid)

    read, err = load(out, "read-associated.json")
    check("adapter read is JSON", read is not None, err or "ok")
    w1 = entry(read, "wlan1")
    check_station("adapter read", w1, -30)
    if w1:
        check("adapter read: bssid == iw's", w1.get("bssid") == iw_bssid, (w1.get("bssid"), iw_bssid))
        check("adapter read: signal == iw's", str(w1.get("signal_dbm")) == iw_signal, (w1.get("signal_dbm"), iw_signal))
        check("adapter read: -30 dBm -> 4 bars", w1.get("bars") == 4, w1.get("bars"))
        check("adapter read: tx bitrate present", (w1.get("tx_bitrate_mbps") or 0) > 0, w1.get("tx_bitrate_mbps"))
        check("adapter read: noise from GET_SURVEY (hwsim reports -92 dBm)", w1.get("noise_dbm") == -92,
              w1.get("noise_dbm"))
    w0 = entry(read, "wlan0")
    check("adapter read: wlan0 is an AP with 1 client", bool(w0) and w0.get("mode") == "ap" and w0.get("clients") == 1,
          w0 and (w0.get("mode"), w0.get("clients")))

    status, err = load(out, "status-associated.json")
    check("reach status --json is JSON", status is not None, err or "ok")
    if status is not None:
        check("reach status: status == wifi", status.get("status") == "wifi", status.get("status"))
        check("reach status: medium == wifi", status.get("medium") == "wifi", status.get("medium"))
        route = status.get("route") or {}
        check("reach status: route leaves through wlan1 (kind wifi)",
              route.get("interface") == "wlan1" and route.get("kind") == "wifi", (route.get("interface"), route.get("kind")))
        s1 = entry(status, "wlan1")
        check_station("reach status", s1, -30)
        if s1:
            check("reach status: bssid == iw's", s1.get("bssid") == iw_bssid, s1.get("bssid"))
            check("reach status: 4 bars", s1.get("bars") == 4, s1.get("bars"))
    only, err = load(out, "status-wifi-only.json")
    check("reach status --wifi wlan1 is JSON", only is not None, err or "ok")
    if only is not None:
        names = [w.get("interface") for w in only.get("wifi", [])]
        check("reach status --wifi wlan1: only wlan1", names == ["wlan1"], names)

    iw_tx = iw_field(out, "iw-link-txpower.txt", r"signal: (-?\d+) dBm")
    tx, err = load(out, "read-txpower.json")
    t1 = entry(tx, "wlan1")
    check("tx power 10 dBm: iw sees -40 dBm", iw_tx == "-40", iw_tx)
    check("tx power 10 dBm: adapter sees -40 dBm", bool(t1) and t1.get("signal_dbm") == -40, t1 and t1.get("signal_dbm"))

    marks = {}
    try:
        for line in open(os.path.join(out, "marks.txt")):
            k, v = line.split()
            marks[k] = int(v)
    except OSError:
        pass
    updates = []
    try:
        for line in open(os.path.join(out, "monitor.jsonl")):
            updates.append(json.loads(line))
    except (OSError, ValueError) as e:
        check("monitor output readable", False, e)
    check("monitor: initial update", bool(updates) and updates[0].get("cause") == "initial",
          updates[0].get("cause") if updates else None)

    def assoc(u):
        w = entry(u, "wlan1")
        return w.get("associated") if w else None

    stop = marks.get("stop")
    lost = next((u for u in updates if stop and u["t_ms"] >= stop and assoc(u) is False), None)
    check("hostapd stopped: the monitor reported wlan1 not associated", lost is not None,
          lost and (lost.get("cause"), lost.get("events")))
    if lost and stop:
        delay = lost["t_ms"] - stop
        check("hostapd stopped: noticed within 2 s through an event", delay <= 2000 and lost.get("cause") == "event",
              f"{delay} ms, cause {lost.get('cause')}")

    bars = [(u["t_ms"], entry(u, "wlan1").get("bars"), entry(u, "wlan1").get("signal_avg_dbm"), u.get("cause"),
             u.get("events")) for u in updates if entry(u, "wlan1")]
    sweep = marks.get("sweep")
    check("medium sweep ran (hw/lab/hwsim-medium.py)", sweep is not None, "mark found" if sweep else "no sweep mark")
    if sweep:
        seen = sorted({b for t, b, *_ in bars if t >= sweep and b is not None})
        check("medium sweep: every bar 0-4 seen by the monitor", seen == [0, 1, 2, 3, 4], seen)
        cqm = [e for u in updates if u["t_ms"] >= sweep for e in u.get("events", []) if e.startswith("signalThreshold")]
        check("medium sweep: bar changes pushed by CQM events", len(cqm) >= 4, f"{len(cqm)} CQM events")
        try:
            levels = [line.split() for line in open(os.path.join(out, "sweep-levels.txt"))]
        except OSError:
            levels = []
        check("medium sweep: levels were set", len(levels) >= 5, len(levels))
        previous = 4
        for i, level in levels:
            level = int(level)
            want = 4 if level >= -55 else 3 if level >= -66 else 2 if level >= -77 else 1 if level >= -88 else 0
            t_set = marks.get(f"level{i}")
            if t_set is not None and want != previous:
                pushed = next((u for u in updates if t_set <= u["t_ms"] <= t_set + 4000 and u.get("cause") == "event"
                               and any(e.startswith("signalThreshold") for e in u.get("events", []))
                               and (entry(u, "wlan1") or {}).get("bars") == want), None)
                check(f"medium {level} dBm: bar change to {want} pushed by a CQM event within 4 s", pushed is not None,
                      f"after {pushed['t_ms'] - t_set} ms" if pushed else "no such event update")
            previous = want
            doc, err = load(out, f"sweep-{i}.json")
            w = entry(doc, "wlan1")
            raw = entry(load(out, f"sweep-read-{i}.json")[0], "wlan1")
            seen = f"reach status: {w and w.get('bars')} bars at avg {w and w.get('signal_avg_dbm')} dBm" if w else err
            check(f"medium {level} dBm -> {want} bars (reach status --wifi wlan1)", bool(w) and w.get("bars") == want,
                  seen + (f"; adapter read: {raw.get('bars')} bars" if raw else ""))

    single = []
    try:
        single = [json.loads(line) for line in open(os.path.join(out, "monitor-single.jsonl"))]
        steps = [line.split() for line in open(os.path.join(out, "marks-single.txt"))]
    except (OSError, ValueError) as e:
        steps = []
        check("single-threshold monitor output readable", False, e)
    check("single-threshold sweep ran", len(steps) >= 5, len(steps))
    previous = 4
    for _, t_set, level in steps:
        t_set, level = int(t_set), int(level)
        want = 4 if level >= -55 else 3 if level >= -66 else 2 if level >= -77 else 1 if level >= -88 else 0
        pushed = next((u for u in single if t_set <= u["t_ms"] <= t_set + 4000 and u.get("cause") == "event"
                       and any(e.startswith("signalThreshold") for e in u.get("events", []))
                       and (entry(u, "wlan1") or {}).get("bars") == want), None)
        check(f"single threshold: {level} dBm, bar {previous} -> {want} pushed by a CQM event within 4 s",
              pushed is not None, f"after {pushed['t_ms'] - t_set} ms" if pushed else "no such event update")
        previous = want

    deleted = marks.get("delete")
    gone = next((u for u in updates if deleted and u["t_ms"] >= deleted and "wlan1" in u.get("gone", [])), None)
    check("wlan1 deleted: the monitor reported it gone through an event", gone is not None and
          gone.get("cause") == "event", gone and (gone["t_ms"] - deleted, gone.get("events")))

    after, err = load(out, "read-stopped.json")
    a1 = entry(after, "wlan1")
    check("hostapd stopped: adapter read says not associated", bool(a1) and a1.get("associated") is False,
          a1 and a1.get("associated"))
    stopped, err = load(out, "status-stopped.json")
    check("hostapd stopped: reach status is no longer wifi", stopped is not None and stopped.get("status") != "wifi",
          (stopped or {}).get("status", err))
    check("hostapd stopped: reach status medium is no longer wifi",
          stopped is not None and stopped.get("medium") != "wifi", (stopped or {}).get("medium", err))
    s1 = entry(stopped, "wlan1")
    check("hostapd stopped: reach status says wlan1 not associated, 0 bars",
          bool(s1) and s1.get("associated") is False and s1.get("bars") == 0, s1 and (s1.get("associated"), s1.get("bars")))

    regained, err = load(out, "status-regained.json")
    check("hostapd back: reach status is wifi again", regained is not None and regained.get("status") == "wifi" and
          regained.get("medium") == "wifi", regained and (regained.get("status"), regained.get("medium")) or err)
    check_agent(out)
    check_tunnels(out)
    check_sharing(out)


def check_sharing(out):
    """reachability-probe: 1 and 3 Reachability instances hold one nl80211 and one rtnetlink monitor; none after stop."""
    try:
        rows = [json.loads(l) for l in open(os.path.join(out, "probe-sharing.jsonl")) if l.strip()]
    except (OSError, ValueError) as e:
        check("sharing: the probe's figures", False, e)
        return
    def phase(name, n=None):
        return next((r["holdings"] for r in rows if r["phase"] == name and r.get("instances") == n), None)
    one, three = phase("running", 1), phase("running", 3)
    check("sharing: the probe ran both phases", one is not None and three is not None, [r["phase"] for r in rows])
    if one is None or three is None:
        return
    check("sharing: one nl80211 event socket for 1 instance", one["generic_monitors"] == 1, one)
    check("sharing: one nl80211 event socket for 3 instances", three["generic_monitors"] == 1, three)
    check("sharing: one rtnetlink monitor for 3 instances", three["route_monitors"] == 1, three)
    check("sharing: 3 instances hold the fds and threads of 1", (three["fds"], three["threads"]) == (one["fds"], one["threads"]),
          ((one["fds"], one["threads"]), (three["fds"], three["threads"])))
    base = phase("baseline")
    for r in rows:
        if r["phase"] == "stopped":
            h = r["holdings"]
            check(f"sharing: after {r['instances']} stopped, no netlink monitor and the baseline fds",
                  h["generic_monitors"] == 0 and h["route_monitors"] == 0 and base is not None and h["fds"] == base["fds"],
                  (h, base))


def check_agent(out):
    """The agent across the WiFi loss and regain: start, one change to not-wifi, one change back, stop."""
    wall = {}
    try:
        for line in open(os.path.join(out, "marks-wall.txt")):
            name, ms = line.split()
            wall[name] = int(ms)
    except OSError as e:
        check("agent: wall-clock marks", False, e.strerror)
        return
    lines = []
    try:
        for raw in open(os.path.join(out, "agent.jsonl")):
            lines.append(json.loads(raw))
    except (OSError, ValueError) as e:
        check("agent: report lines parse", False, e)
        return
    check("agent: every report line parses", True, f"{len(lines)} lines")

    def ms(line):  # RFC 3339 UTC with milliseconds -> epoch ms
        import datetime
        t = datetime.datetime.strptime(line["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        return int(t.timestamp() * 1000)

    events = [l.get("event", {}) for l in lines]
    types = [e.get("type") for e in events]
    check("agent: the log starts with a start line", types[:1] == ["start"], types[:3])
    check("agent: started on wifi", bool(lines) and lines[0].get("status") == "wifi" and lines[0].get("medium") == "wifi",
          lines and (lines[0].get("status"), lines[0].get("medium")))
    seqs = [e.get("seq") for e in events]
    check("agent: seq has no gaps", seqs == list(range(seqs[0], seqs[0] + len(seqs))) if seqs else False, seqs)
    status_changes = [(i, l) for i, l in enumerate(lines)
                      if l.get("event", {}).get("type") == "change" and "status" in l["event"].get("changed", [])]
    lost = next((l for _, l in status_changes if l.get("status") != "wifi" and ms(l) >= wall.get("stop", 0)), None)
    check("agent: hostapd stopped gives one change line to a status other than wifi", lost is not None,
          lost and (lost.get("status"), lost["event"].get("reason")))
    if lost:
        delay = ms(lost) - wall["stop"]
        check("agent: the loss line was written within 2 s", delay <= 2000, f"{delay} ms")
    back = next((l for _, l in status_changes if l.get("status") == "wifi" and ms(l) >= wall.get("regain", 0)), None)
    check("agent: hostapd back gives one change line back to wifi", back is not None,
          back and back["event"].get("reason"))
    check("agent: exactly two status changes (no duplicates, no flapping)", len(status_changes) == 2,
          [(l.get("status"), l["event"].get("reason")) for _, l in status_changes])
    check("agent: SIGTERM wrote a last stop line", types[-1:] == ["stop"], types[-3:])
    try:
        rc = open(os.path.join(out, "agent.rc")).read().strip()
    except OSError:
        rc = "missing"
    check("agent: exited 0 on SIGTERM", rc == "0", rc)


def check_tunnels(out):
    """GRE and WireGuard over wwan0 (guest.sh `tunnels`): each answer's chain, medium and text."""
    t = os.path.join(out, "tunnels")
    try:
        error = open(os.path.join(t, "error.txt")).read().strip()
    except OSError:
        error = None
    check("underlays: the tunnels were set up", error is None, error or "ok")

    def run(name):
        doc, err = load(t, f"{name}.json")
        try:
            rc = open(os.path.join(t, f"{name}.rc")).read().strip()
        except OSError:
            rc = None
        try:
            text = open(os.path.join(t, f"{name}.txt")).read()
        except OSError:
            text = ""
        return doc or {}, rc, text, err

    def chain(doc):
        return [h.get("interface") for h in (doc.get("route") or {}).get("chain", [])]

    def hop(doc, i):
        hops = (doc.get("route") or {}).get("chain", [])
        return hops[i] if len(hops) > i else {}

    gre, rc, text, err = run("gre")
    check("gre1 (remote 198.18.0.7, local 10.20.0.2): exit 0", rc == "0", rc or err)
    check("gre1: chain gre1 → wwan0", chain(gre) == ["gre1", "wwan0"], chain(gre))
    check("gre1: via tunnel to its remote", hop(gre, 1).get("via") == "tunnel" and hop(gre, 1).get("remote") == "198.18.0.7",
          (hop(gre, 1).get("via"), hop(gre, 1).get("remote")))
    check("gre1: link_kind gre", hop(gre, 0).get("link_kind") == "gre", hop(gre, 0).get("link_kind"))
    check("gre1: medium and status wwan", (gre.get("medium"), gre.get("status")) == ("wwan", "wwan"),
          (gre.get("medium"), gre.get("status")))
    check("gre1: text", text.startswith("reachable over wwan via gre1 → wwan0 (on-link)"), text.splitlines()[:1])

    bound, rc, text, err = run("gre-bound")
    check("gre2 bound to eth1 (`dev eth1`): chain gre2 → eth1", chain(bound) == ["gre2", "eth1"], chain(bound) or err)
    check("gre2: medium ethernet", bound.get("medium") == "ethernet", bound.get("medium"))

    wg, rc, text, err = run("wg")
    check("wg0 (fwmark 51820, two peers): exit 0", rc == "0", rc or err)
    check("wg0: chain wg0 → wwan0", chain(wg) == ["wg0", "wwan0"], chain(wg))
    check("wg0: via wireguard to the peer holding 0.0.0.0/0, with the fwmark",
          (hop(wg, 1).get("via"), hop(wg, 1).get("remote"), hop(wg, 1).get("fwmark")) == ("wireguard", "198.18.0.1:51820", 51820),
          (hop(wg, 1).get("via"), hop(wg, 1).get("remote"), hop(wg, 1).get("fwmark")))
    peers = hop(wg, 0).get("peers", [])
    check("wg0: both peers listed with their underlays",
          [(p.get("endpoint"), p.get("underlay"), p.get("carries")) for p in peers]
          == [("198.18.0.1:51820", "wwan0", True), ("203.0.113.9:51821", "eth1", False)],
          [(p.get("endpoint"), p.get("underlay"), p.get("carries")) for p in peers])
    check("wg0: medium and status wwan", (wg.get("medium"), wg.get("status")) == ("wwan", "wwan"), (wg.get("medium"), wg.get("status")))
    check("wg0: text", text.startswith("reachable over wwan via wg0 → wwan0 (on-link)")
          and "wg0 peers: 198.18.0.1:51820 → wwan0 (carries the route), 203.0.113.9:51821 → eth1" in text, text.splitlines()[:4])

    site, rc, text, err = run("wg-peer2")
    check("wg0 to the site peer's 10.200.0.0/16: chain wg0 → eth1", chain(site) == ["wg0", "eth1"], chain(site) or err)
    check("wg0 site: medium ethernet", site.get("medium") == "ethernet", site.get("medium"))

    nomark, rc, text, err = run("wg-nomark")
    check("wg0 without its fwmark: exit 1 (its packets would loop into wg0)", rc == "1", rc or err)
    check("wg0 without its fwmark: the reason names the loop",
          "goes back through wg0 (a loop)" in ((nomark.get("route") or {}).get("underlay_error") or ""),
          (nomark.get("route") or {}).get("underlay_error"))

    nobody, err = load(t, "wg-nobody.json")
    problem = ((nobody or {}).get("route") or {}).get("underlay_error") or ""
    check("wg0 read without CAP_NET_ADMIN: the answer stands and says why",
          bool(nobody) and nobody.get("reachable") is True and "CAP_NET_ADMIN" in problem, problem or err)

    lost, rc, text, err = run("wg-nocarrier")
    check("wwan0 without carrier under wg0: exit 1", rc == "1", rc or err)
    check("wwan0 without carrier under wg0: text", text.startswith("not reachable: wg0: its underlay wwan0 has no carrier"),
          text.splitlines()[:1])

    try:
        marks = dict(line.split() for line in open(os.path.join(t, "marks.txt")))
        print(f"underlays: the tunnel checks took {float(marks['end']) - float(marks['start']):.1f} s in the VM")
    except (OSError, KeyError, ValueError):
        pass
    for name in ("gre", "wg", "wg-nocarrier"):
        try:
            print(f"--- reach status ({name})\n" + open(os.path.join(t, f"{name}.txt")).read().rstrip())
        except OSError:
            pass


def check_bench(out):
    def figures(name):
        try:
            return [int(x) for x in open(os.path.join(out, name)) if x.strip()]
        except OSError:
            return []

    rows = [
        ("reach-wifi-lab read wlan1 (process)", figures("bench-reach-process-us.txt")),
        ("reach status --json --wifi wlan1 (process)", figures("bench-reach-status-us.txt")),
        ("WiFiReader.readNow(wlan1) (in process)", figures("bench-reach-inprocess-us.txt")),
        ("iw dev wlan1 link (process)", figures("bench-iw-process-us.txt")),
        ("baseline: /bin/true (process)", figures("bench-true-process-us.txt")),
        ("baseline: reach-wifi-lab now (process, no read)", figures("bench-reach-start-us.txt")),
    ]
    iw = statistics.median(rows[3][1]) if rows[3][1] else None
    print("WiFi read in the lab VM (TCG, 1 vCPU, binaries over 9p), median wall time over the runs:")
    for label, xs in rows:
        if not xs:
            print(f"  {label:50s} not measured")
            continue
        med = statistics.median(xs)
        ratio = f"  ratio to iw {med / iw:.2f}" if iw else ""
        print(f"  {label:50s} {med / 1000:9.2f} ms  (n={len(xs)}, min {min(xs) / 1000:.2f} ms){ratio}")
    true_med = statistics.median(rows[4][1]) if rows[4][1] else None
    start_med = statistics.median(rows[5][1]) if rows[5][1] else None
    if iw and true_med and start_med and rows[0][1]:
        ours = statistics.median(rows[0][1]) - start_med
        theirs = iw - true_med
        print(f"  net of process start-up: reach read {ours / 1000:.2f} ms vs iw {theirs / 1000:.2f} ms"
              f" (ratio {ours / theirs:.2f})")
    check("bench: every runner measured ≥ 20 times", all(len(xs) >= 20 for _, xs in (rows[0], rows[2], rows[3])),
          [len(xs) for _, xs in rows])


def main():
    args = sys.argv[1:]
    if args[:1] == ["--bench"]:
        check_bench(args[1])
    elif args[:1] == ["--capture"]:
        import nlcapture
        nlcapture.store(args[1], args[2])
        results.append(True)
    else:
        check_lab(args[0])
    failed = results.count(False)
    print(f"lab: {len(results) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
