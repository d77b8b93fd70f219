#!/usr/bin/env python3
# `scripts/bench scale` (issue 30): what `reach` costs as the box grows — big routing tables, route churn, many
# uplinks, modems and API clients — each row beside its peer from the same run, in network namespaces made and
# deleted here. Wall times are hyperfine medians (-N, warm-ups first); CPU and memory come from /proc.
#
# Usage: scale-bench.py REACH SIM [ROUTE_COUNTS]
#   REACH         the reach binary to measure (the shipped form, or an older one for an A/B)
#   SIM           reach-modem-sim (the modem rows)
#   ROUTE_COUNTS  comma-separated extra routes per table row (default 0,10000,100000,300000)
# Environment: SCALE_BASELINE names an older reach whose `reach status` is timed in the same hyperfine runs (an A/B
# column in the table and uplink rows); SCALE_SECTIONS (default "routes,churn,uplinks,modems,clients") picks rows; SCALE_CHURN_ROUTES (default
# 100000) sizes the churn row's table; SCALE_MODEM_SECONDS (default 60) the modem rows' window.
import atexit
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

reach, sim = sys.argv[1], sys.argv[2]
baseline = os.environ.get("SCALE_BASELINE")
counts = [int(c) for c in (sys.argv[3] if len(sys.argv) > 3 else "0,10000,100000,300000").split(",")]
sections = os.environ.get("SCALE_SECTIONS", "routes,churn,uplinks,modems,clients").split(",")
tag = f"gr-scale-{os.getpid()}"
made = []
workdir = tempfile.mkdtemp(prefix="gr-bench-scale.")
hz = os.sysconf("SC_CLK_TCK")
results = {}


def sh(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


def namespace(name, v6=False):
    """A namespace with eth0 (veth; its peer stays inside) holding 10.10.0.2/24 and the default route via .1,
    and with v6 fd00:10::2/64 and ::/0 via fd00:10::1."""
    made.append(name)
    sh("ip", "netns", "add", name)
    ns = ["ip", "-n", name]
    sh(*ns, "link", "set", "lo", "up")
    sh(*ns, "link", "add", "eth0", "type", "veth", "peer", "name", "up0")
    sh(*ns, "addr", "add", "10.10.0.2/24", "dev", "eth0")
    if v6:
        sh(*ns, "addr", "add", "fd00:10::2/64", "dev", "eth0", "nodad")
    sh(*ns, "link", "set", "eth0", "up")
    sh(*ns, "link", "set", "up0", "up")
    sh(*ns, "route", "add", "default", "via", "10.10.0.1")
    if v6:
        sh(*ns, "-6", "route", "add", "default", "via", "fd00:10::1", "dev", "eth0")
    return name


def add_routes(ns, family, start, stop, verb="add"):
    """Routes start..<stop: IPv4 /32s in 100.64.0.0/10 and IPv6 /128s in 2001:db8::/64, on eth0 (ip -batch)."""
    path = os.path.join(workdir, "batch")
    with open(path, "w") as f:
        for i in range(start, stop):
            if family == 4:
                f.write(f"route {verb} 100.{64 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}/32 dev eth0\n")
            else:
                f.write(f"route {verb} 2001:db8::{i >> 16:x}:{i & 0xFFFF:x}/128 dev eth0\n")
    sh("ip", "-4" if family == 4 else "-6", "-n", ns, "-batch", path)


def hyperfine(commands, runs):
    """Median wall seconds of each command (shell words), run in turn by hyperfine."""
    out = os.path.join(workdir, "hf.json")
    subprocess.run(["hyperfine", "-N", "--warmup", "2", "--runs", str(runs), "-i", "--export-json", out]
                   + [" ".join(c) for c in commands], check=True, capture_output=True)
    return [r["median"] for r in json.load(open(out))["results"]]


def ms(s):
    return f"{s * 1000:8.2f} ms"


def in_ns(ns, *cmd):
    return ["ip", "netns", "exec", ns] + list(cmd)


def status_cmd(ns, binary=None):
    return in_ns(ns, binary or reach, "status", "--json", "--no-modems", "--no-wifi")


def with_baseline(ns, commands, runs):
    """hyperfine over `commands`, plus the baseline's `reach status` when there is one: (medians, baseline's)."""
    if not baseline:
        return hyperfine(commands, runs), None
    *medians, old = hyperfine(commands + [status_cmd(ns, baseline)], runs)
    return medians, old


def old_column(old, new):
    return f"  baseline {ms(old).strip()} (new/old {new / old:.2f}x)" if old else ""


def proc_cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / hz


def proc_status(pid):
    return {l.split(":")[0]: l.split(":", 1)[1].strip() for l in open(f"/proc/{pid}/status") if ":" in l}


def kib(pid, key="VmRSS"):
    return int(proc_status(pid)[key].split()[0])


def settle(pid, quiet=1.0, limit=120):
    """Waits until the process used no CPU for `quiet` seconds; returns its CPU seconds then."""
    end = time.time() + limit
    last = proc_cpu(pid)
    while time.time() < end:
        time.sleep(quiet)
        now = proc_cpu(pid)
        if now == last:
            return now
        last = now
    return last


def start_agent(ns, config, name):
    path = os.path.join(workdir, name + ".json")
    with open(path, "w") as f:
        json.dump(config, f)
    p = subprocess.Popen(in_ns(ns, reach, "agent", "--config", path), stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(workdir, name + ".err"), "w"))
    report = config["report"]["path"]
    end = time.time() + 30
    while time.time() < end and not (os.path.exists(report) and os.path.getsize(report) > 0):
        time.sleep(0.05)
    if not os.path.exists(report):
        raise SystemExit(f"bench: the agent ({name}) wrote no start line: {open(os.path.join(workdir, name + '.err')).read()}")
    return p


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def lines(path):
    try:
        return [json.loads(l) for l in open(path) if l.strip()]
    except FileNotFoundError:
        return []


def netlink_drops(ns, pid):
    """The receive drops (overruns) the kernel counted on the NETLINK_ROUTE sockets of `pid` (/proc/net/netlink:
    the port of a process's first socket is its pid; libnl gives later ones pid + (n << 22))."""
    drops = 0
    for l in sh("ip", "netns", "exec", ns, "cat", "/proc/net/netlink").splitlines()[1:]:
        f = l.split()
        if f[1] == "0" and int(f[2]) & 0x3FFFFF == pid:
            drops += int(f[8])
    return drops


targets = []


@atexit.register
def clean_up():
    for ns in made:
        subprocess.run(["ip", "netns", "delete", ns], stderr=subprocess.DEVNULL)
    shutil.rmtree(workdir, ignore_errors=True)


# 1. Tables of N extra routes, IPv4 and IPv6: `reach status` against `ip route get` and a full dump of every table's
# default routes (`ip route show table all default`: one dump, filtered in the reader, as reach's is).
if "routes" in sections:
    for family in (4, 6):
        ns = namespace(f"{tag}-r{family}", v6=family == 6)
        ipf = ["ip"] if family == 4 else ["ip", "-6"]
        target = "1.1.1.1" if family == 4 else "2001:4860:4860::8888"
        print(f"IPv{family}: N extra /{32 if family == 4 else 128} routes in the main table besides the default")
        print(f"  {'routes':>8}  {'reach status':>11}  {'ip route get':>12}  {'ip route show table all default':>31}"
              f"  {'reach / show':>12}  {'reach / get':>11}")
        have = 0
        rows = []
        for n in counts:
            add_routes(ns, family, have, n)
            have = n
            runs = 30 if n <= 10000 else (10 if n <= 100000 else 5)
            (r, g, d), old = with_baseline(ns, [status_cmd(ns), in_ns(ns, *ipf, "route", "get", target),
                                                in_ns(ns, *ipf, "route", "show", "table", "all", "default")], runs)
            rows.append((n, r, g, d))
            print(f"  {n:8}  {ms(r)}  {ms(g):>12}  {ms(d):>31}  {r / d:11.2f}x  {r / g:10.2f}x{old_column(old, r)}")
        results[f"routes{family}"] = rows
        big = [row for row in rows if row[0] >= 10000]
        if len(big) >= 2:
            (n0, r0, _, d0), (n1, r1, _, d1) = big[0], big[-1]
            per = 10000 / (n1 - n0)
            print(f"  growth per 10k routes ({n0}..{n1}): reach {(r1 - r0) * per * 1000:.2f} ms, "
                  f"ip route show table all default {(d1 - d0) * per * 1000:.2f} ms")
        for n, r, g, d in rows:
            if n == 100000:
                targets.append((f"IPv{family}: reach status at 100k routes <= ip route show table all default",
                                r <= d, f"{r / d:.2f}x ({ms(r).strip()} vs {ms(d).strip()})"))
            if n == 0:
                targets.append((f"IPv{family}: start-up on a small table <= 2.0 x ip route get",
                                r <= 2.0 * g, f"{r / g:.2f}x ({ms(r).strip()} vs {ms(g).strip()})"))
        subprocess.run(["ip", "netns", "delete", ns])
        made.remove(ns)

# 2. The agent on a 100k-route table under churn: 10,000 /32 routes added and deleted (20,000 changes) by `ip -batch`,
# twice; CPU per 1,000 changes once it is idle again, and its resident set. Peer: `ip monitor route`, hearing the
# same notices in the same namespace.
if "churn" in sections:
    ns = namespace(f"{tag}-churn")
    report = os.path.join(workdir, "churn.jsonl")
    config = {"report": {"path": report, "interval_seconds": 3600}, "changes": {"hold_down_seconds": 0},
              "modems": {"enabled": False}, "wifi": {"enabled": False}}
    # Its resident set on a small table first, for "memory flat in N".
    small = start_agent(ns, config, "small")
    time.sleep(2)
    rss_small = kib(small.pid)
    stop(small)
    os.unlink(report)
    table = int(os.environ.get("SCALE_CHURN_ROUTES", "100000"))
    add_routes(ns, 4, 0, table)
    agent = start_agent(ns, config, "churn")
    # (It overruns too under the flood and says so on standard error.)
    monitor = subprocess.Popen(in_ns(ns, "ip", "monitor", "route"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    a0, m0 = settle(agent.pid), proc_cpu(monitor.pid)
    drops0 = netlink_drops(ns, agent.pid)
    rss0 = kib(agent.pid)
    print(f"agent on a {table}-route table, 20,000 route changes per run (10,000 /32 added, then deleted, by ip -batch):")
    print(f"  {'run':>4}  {'agent CPU / 1,000 changes':>25}  {'ip monitor route CPU / 1,000':>28}  {'agent VmRSS':>11}"
          f"  {'wall':>6}  {'notices dropped (overruns)':>26}")
    per_run = []
    for run in (1, 2, 3):
        t0 = time.time()
        add_routes(ns, 4, 200000, 210000)
        add_routes(ns, 4, 200000, 210000, verb="del")
        wall = time.time() - t0
        a1 = settle(agent.pid)
        m1 = proc_cpu(monitor.pid)
        rss = kib(agent.pid)
        per_run.append((a1 - a0) / 20)
        drops = netlink_drops(ns, agent.pid)
        print(f"  {run:4}  {(a1 - a0) / 20 * 1000:22.1f} ms  {(m1 - m0) / 20 * 1000:25.1f} ms  {rss / 1024:7.1f} MiB"
              f"  {wall:5.1f}s  {drops - drops0:26}")
        drops0 = drops
        a0, m0 = a1, m1
    print(f"  agent VmRSS 2 s after start: {rss_small / 1024:.1f} MiB on a 2-route table, {rss0 / 1024:.1f} MiB on the"
          f" {table}-route one")
    targets.append((f"agent memory flat in N routes (2 -> {table} routes, after start)", rss0 - rss_small <= 1024,
                    f"{rss_small} -> {rss0} KiB"))
    targets.append(("agent CPU per 1,000 changes at 100k routes stated and not rising run to run",
                    per_run[-1] <= per_run[0] * 1.25 + 0.005,
                    " -> ".join(f"{x * 1000:.1f} ms" for x in per_run)))
    results["churn"] = per_run
    stop(agent)
    monitor.terminate()
    monitor.wait()
    subprocess.run(["ip", "netns", "delete", ns])
    made.remove(ns)

# 3. `reach status` with 1, 8 and 32 uplinks (a veth each, a default route each by metric); peer: `ip route show
# default`, which lists the same routes.
if "uplinks" in sections:
    print("reach status --json --no-modems --no-wifi with N uplinks (default routes by metric):")
    print(f"  {'uplinks':>8}  {'reach status':>11}  {'ip route show default':>21}  {'ratio':>6}")
    for n in (1, 8, 32):
        ns = f"{tag}-u{n}"
        made.append(ns)
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        for i in range(n):
            sh("ip", "-n", ns, "link", "add", f"eth{i}", "type", "veth", "peer", "name", f"up{i}")
            sh("ip", "-n", ns, "addr", "add", f"10.{i}.0.2/24", "dev", f"eth{i}")
            sh("ip", "-n", ns, "link", "set", f"eth{i}", "up")
            sh("ip", "-n", ns, "link", "set", f"up{i}", "up")
            sh("ip", "-n", ns, "route", "add", "default", "via", f"10.{i}.0.1", "dev", f"eth{i}", "metric", str(10 + i))
        listed = len(json.loads(sh(*status_cmd(ns)))["uplinks"])
        if listed != n:
            raise SystemExit(f"bench: expected {n} uplinks, reach listed {listed}")
        (r, p), old = with_baseline(ns, [status_cmd(ns), in_ns(ns, "ip", "route", "show", "default")], 20)
        print(f"  {n:8}  {ms(r)}  {ms(p):>21}  {r / p:5.2f}x{old_column(old, r)}")
        subprocess.run(["ip", "netns", "delete", ns])
        made.remove(ns)


def tree_memory(pid):
    """(VmRSS KiB, PSS KiB) of pid and its descendants (the agent and its modem workers)."""
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in open(f"/proc/{p}/task/{t}/children").read().split()]
        except FileNotFoundError:
            pass
    rss = pss = 0
    for p in pids:
        try:
            rss += kib(p)
            pss += sum(int(l.split()[1]) for l in open(f"/proc/{p}/smaps_rollup") if l.startswith("Pss:"))
        except (FileNotFoundError, KeyError):
            pass
    return rss, pss, len(pids)


# 4. The agent with 1 and 4 simulated QMI modems (a worker process each): memory of the agent and its workers, and
# the requests per minute the modems received (the simulators' frame logs) over 60 s after a 10 s settle. No peer
# runs here (ModemManager is not installed); the figures stand alone.
if "modems" in sections:
    ns = namespace(f"{tag}-m")
    window = float(os.environ.get("SCALE_MODEM_SECONDS", "60"))
    print(f"agent with N simulated QMI modems (hw/scenarios/qmi-4g-lte.json), {window:.0f} s window after 10 s:")
    print(f"  {'modems':>6}  {'VmRSS agent+workers':>19}  {'PSS agent+workers':>17}  {'processes':>9}  {'requests/min':>12}")
    for n in (1, 4):
        sims, logs = [], []
        for i in range(n):
            link, log = os.path.join(workdir, f"modem{n}-{i}"), os.path.join(workdir, f"modem{n}-{i}.log")
            sims.append(subprocess.Popen([sim, "--scenario", "hw/scenarios/qmi-4g-lte.json", "--link", link, "--log", log],
                                         stdout=subprocess.DEVNULL))
            logs.append(log)
        for i in range(n):
            end = time.time() + 10
            while not os.path.islink(os.path.join(workdir, f"modem{n}-{i}")) and time.time() < end:
                time.sleep(0.05)
        report = os.path.join(workdir, f"modems{n}.jsonl")
        agent = start_agent(ns, {"report": {"path": report, "interval_seconds": 3600},
                                 "modems": {"ports": [{"path": os.path.join(workdir, f"modem{n}-{i}"), "protocol": "qmi"}
                                                      for i in range(n)]},
                                 "wifi": {"enabled": False}}, f"modems{n}")
        time.sleep(10)

        def requests():
            count = 0
            for log in logs:
                try:
                    # "SECONDS in: HEX | summary": one line per frame the modem received.
                    count += sum(1 for l in open(log, errors="replace") if " in: " in l)
                except FileNotFoundError:
                    pass
            return count
        q0 = requests()
        time.sleep(window)
        q1 = requests()
        rss, pss, procs = tree_memory(agent.pid)
        print(f"  {n:6}  {rss / 1024:15.1f} MiB  {pss / 1024:13.1f} MiB  {procs:9}  {(q1 - q0) * 60 / window:12.1f}")
        results[f"modems{n}"] = (rss, pss)
        stop(agent)
        for s in sims:
            s.terminate()
            s.wait()

# 5. The agent with 1 and 32 API clients subscribed (scripts/lib/varlink-crowd.py: a third never read, a third read
# slowly, a third read all): agent CPU per change line over 100 route flips (200 change lines) and its resident
# set. Peer: `ip monitor route` on the same flips (CPU per notice).
if "clients" in sections:
    ns = f"{tag}-m" if f"{tag}-m" in made else namespace(f"{tag}-c")
    print("agent with N Varlink subscribers, 100 default-route flips (200 change lines):")
    print(f"  {'clients':>7}  {'agent CPU / change line':>23}  {'ip monitor route CPU / notice':>29}  {'agent VmRSS':>11}"
          f"  {'lines':>5}")
    for n in (1, 32):
        report = os.path.join(workdir, f"clients{n}.jsonl")
        state = os.path.join(workdir, f"run{n}")
        agent = start_agent(ns, {"report": {"path": report, "interval_seconds": 3600}, "changes": {"hold_down_seconds": 0},
                                 "modems": {"enabled": False}, "wifi": {"enabled": False},
                                 "api": {"state_directory": state, "hooks_directory": None}}, f"clients{n}")
        sock = os.path.join(state, "org.gatewayreach.Reach")
        end = time.time() + 10
        while not os.path.exists(sock) and time.time() < end:
            time.sleep(0.05)
        crowd = subprocess.Popen(["/usr/bin/python3", "scripts/lib/varlink-crowd.py", sock, str(n)],
                                 stdout=subprocess.PIPE, text=True)
        crowd.stdout.readline()
        monitor = subprocess.Popen(in_ns(ns, "ip", "monitor", "route"), stdout=subprocess.DEVNULL)
        time.sleep(1)
        a0, m0, l0 = settle(agent.pid), proc_cpu(monitor.pid), len(lines(report))
        for _ in range(100):
            sh("ip", "-n", ns, "route", "del", "default")
            sh("ip", "-n", ns, "route", "add", "default", "via", "10.10.0.1")
            time.sleep(0.02)
        a1, m1, l1 = settle(agent.pid), proc_cpu(monitor.pid), len(lines(report))
        changes = max(l1 - l0, 1)
        print(f"  {n:7}  {(a1 - a0) / changes * 1000:20.2f} ms  {(m1 - m0) / 200 * 1000:26.2f} ms"
              f"  {kib(agent.pid) / 1024:7.1f} MiB  {l1 - l0:5}")
        results[f"clients{n}"] = kib(agent.pid)
        crowd.terminate()
        crowd.wait()
        monitor.terminate()
        monitor.wait()
        stop(agent)

if "clients1" in results and "clients32" in results:
    a, b = results["clients1"], results["clients32"]
    targets.append(("agent memory flat in N clients (1 -> 32 subscribers)", b - a <= 1024, f"{a} -> {b} KiB"))

print("targets (issue 30, item 3):")
for what, met, figure in targets:
    print(f"  [{'met' if met else 'NOT met'}] {what}: {figure}")
