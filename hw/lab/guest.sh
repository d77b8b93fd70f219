#!/bin/bash
# The lab scenario, run inside the VM (chroot of the build machine's root, read-only; /tmp/out is the output share).
# Arguments: MODE (check|bench|capture) BINDIR (the swift build's bin path).
# Every wait is bounded; every result goes to /tmp/out for hw/lab/check.py to judge on the host.
set -u
mode=$1
bin=$2
out=/tmp/out
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
log() { echo "LAB: $* (t=$(cut -d' ' -f1 /proc/uptime))"; }
now_ms() { "$bin/reach-wifi-lab" now; }  # the monitor's clock; taken before the action, so latencies err long
# wait_for SECONDS COMMAND...: polls COMMAND every 0.1 s until it succeeds; fails after SECONDS.
wait_for() {
  local limit=$(( $1 * 10 )); shift
  for ((i = 0; i < limit; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}
associated() { iw dev wlan1 link | grep -q '^Connected to'; }
disassociated() { iw dev wlan1 link | grep -q '^Not connected'; }
fail() { echo "LAB-FAIL: $*"; cleanup; exit 1; }
cleanup() {
  [ -n "${monitor_pid:-}" ] && kill "$monitor_pid" 2>/dev/null
  [ -n "${agent_pid:-}" ] && kill "$agent_pid" 2>/dev/null
  [ -f /run/hostapd.pid ] && kill "$(cat /run/hostapd.pid)" 2>/dev/null
  [ -f /run/wpa_supplicant.pid ] && kill "$(cat /run/wpa_supplicant.pid)" 2>/dev/null
  [ -n "${medium_pid:-}" ] && kill "$medium_pid" 2>/dev/null
  wait 2>/dev/null
}

ip link set lo up
ls /sys/class/net > $out/netdevs.txt
[ -e /sys/class/net/wlan1/phy80211 ] || fail "wlan1 has no phy80211 (mac80211_hwsim not loaded?)"
uname -r > $out/kernel.txt

# The access point on wlan0 (open network, channel 6) and the station on wlan1.
mkdir -p /run/hostapd /run/wpa_supplicant
cat > /run/hostapd.conf <<CONF
interface=wlan0
driver=nl80211
ssid=lab-ap
hw_mode=g
channel=6
ctrl_interface=/run/hostapd
CONF
cat > /run/wpa_supplicant.conf <<CONF
ctrl_interface=/run/wpa_supplicant
network={
    ssid="lab-ap"
    key_mgmt=NONE
    scan_freq=2437
}
CONF
start_ap() {
  hostapd -B -P /run/hostapd.pid /run/hostapd.conf > $out/hostapd.log 2>&1 || fail "hostapd did not start"
}
start_ap
wpa_supplicant -B -P /run/wpa_supplicant.pid -i wlan1 -D nl80211 -c /run/wpa_supplicant.conf \
  > $out/wpa_supplicant.log 2>&1 || fail "wpa_supplicant did not start"
wait_for 30 associated || fail "wlan1 did not associate within 30 s"
log "associated"
ip addr add 192.0.2.1/24 dev wlan0
ip addr add 192.0.2.2/24 dev wlan1
ip route add default via 192.0.2.1 dev wlan1
ip link set wlan0 up; ip link set wlan1 up
# hwsim's signal is the AP's tx power - 50 dBm; let the station's average settle on it.
sleep 2

run_reach_status() {  # NAME [extra args]: `reach status --json`, stdout and exit code kept apart
  local name=$1; shift
  "$bin/reach" status --json "$@" > $out/$name.json 2> $out/$name.err
  echo $? > $out/$name.rc
}

# Underlays (hw/lab/README.md, "What the check stage asserts" 6): GRE and WireGuard over an interface named wwan0,
# which this VM's kernel has and the build machine's lacks. A namespace of their own keeps the WiFi routes as they
# are; wwan0 and eth1 are dummies (carrier on, no peer: nothing is sent, only routes are asked).
tunnels() {
  local ns=lab-tunnels t=$out/tunnels
  mkdir -p $t
  echo "start $(cut -d' ' -f1 /proc/uptime)" > $t/marks.txt
  nx() { ip netns exec $ns "$@"; }
  reach_ns() {  # NAME [reach status args]: the JSON and exit code under $t
    local name=$1; shift
    nx "$bin/reach" status --no-modems --no-wifi --json "$@" > $t/$name.json 2> $t/$name.err
    echo $? > $t/$name.rc
  }
  reach_text() {  # NAME [reach status args]: the text (and the exit code, when no JSON run gave it)
    local name=$1; shift
    nx "$bin/reach" status --no-modems --no-wifi "$@" > $t/$name.txt 2>> $t/$name.err
    local rc=$?
    [ -f $t/$name.rc ] || echo $rc > $t/$name.rc
  }
  ip netns add $ns || { echo "ip netns add failed" > $t/error.txt; return; }
  nx ip link set lo up
  nx ip link add wwan0 type dummy && nx ip link add eth1 type dummy || { echo "no dummy links" > $t/error.txt; ip netns del $ns; return; }
  nx ip addr add 10.20.0.2/24 dev wwan0
  nx ip addr add 192.0.2.2/24 dev eth1
  nx ip link set wwan0 up
  nx ip link set eth1 up
  nx ip route add default via 10.20.0.1 dev wwan0
  nx ip route add 203.0.113.0/24 via 192.0.2.1 dev eth1
  # GRE with a fixed local address over wwan0; a second one bound to eth1 (`dev eth1`) although the main table
  # would send its remote over wwan0.
  nx ip link add gre1 type gre remote 198.18.0.7 local 10.20.0.2 ttl 64
  nx ip addr add 10.77.0.2/30 dev gre1
  nx ip link set gre1 up
  nx ip route add 100.64.0.0/16 dev gre1
  nx ip link add gre2 type gre remote 198.18.0.8 dev eth1 ttl 64
  nx ip addr add 10.78.0.2/30 dev gre2
  nx ip link set gre2 up
  nx ip route add 100.65.0.0/16 dev gre2
  reach_ns gre --address 100.64.1.1
  reach_text gre --address 100.64.1.1
  reach_ns gre-bound --address 100.65.1.1
  # WireGuard in wg-quick's layout: fwmark 51820; unmarked packets go to table 51820 (default dev wg0), WireGuard's
  # own (marked) to main. Two peers: the VPN server holding 0.0.0.0/0 behind wwan0, a site behind eth1.
  (umask 077; wg genkey > /run/wg0.key)
  local p1 p2
  p1=$(wg genkey | wg pubkey); p2=$(wg genkey | wg pubkey)
  nx ip link add wg0 type wireguard || { echo "no wireguard link" > $t/error.txt; ip netns del $ns; return; }
  nx wg set wg0 private-key /run/wg0.key listen-port 51820 fwmark 51820 \
    peer "$p1" endpoint 198.18.0.1:51820 allowed-ips 0.0.0.0/0 \
    peer "$p2" endpoint 203.0.113.9:51821 allowed-ips 10.200.0.0/16
  nx ip addr add 10.66.0.2/32 dev wg0
  nx ip link set wg0 up
  nx ip route add default dev wg0 table 51820
  nx ip rule add not fwmark 51820 table 51820
  nx ip rule add table main suppress_prefixlength 0
  nx wg show wg0 > $t/wg-show.txt 2>&1
  reach_ns wg --address 198.51.100.10
  reach_text wg --address 198.51.100.10
  reach_ns wg-peer2 --address 10.200.0.5
  # Without the fwmark WireGuard's own packets would enter wg0 again: a loop the kernel refuses.
  nx wg set wg0 fwmark 0
  reach_ns wg-nomark --address 198.51.100.10
  nx wg set wg0 fwmark 51820
  # Without CAP_NET_ADMIN the peers cannot be read: the answer stands and says why.
  nx setpriv --reuid=65534 --regid=65534 --clear-groups "$bin/reach" status --no-modems --no-wifi --json \
    --address 198.51.100.10 > $t/wg-nobody.json 2> $t/wg-nobody.err
  echo $? > $t/wg-nobody.rc
  # The modem's link loses carrier under the tunnel (the routes stay, linkdown).
  nx ip link set wwan0 carrier off
  reach_text wg-nocarrier --address 198.51.100.10
  ip netns del $ns
  echo "end $(cut -d' ' -f1 /proc/uptime)" >> $t/marks.txt
}

case "$mode" in
capture)
  ip link add nlmon0 type nlmon && ip link set nlmon0 up || fail "nlmon"
  python3 "$(dirname "$0")/nlcapture.py" record nlmon0 $out/station-capture.jsonl 4 &
  cap_pid=$!
  sleep 1.5
  iw dev > $out/iw-dev.txt
  iw dev wlan1 scan dump > $out/iw-scan-dump.txt
  iw dev wlan1 station get 02:00:00:00:00:00 > $out/iw-station-get.txt
  iw dev wlan1 survey dump > $out/iw-survey-dump.txt
  iw dev wlan1 link > $out/iw-link.txt
  wait $cap_pid
  ;;
bench)
  runs=25
  for ((r = 0; r < runs; r++)); do
    a=$(date +%s%N); "$bin/reach-wifi-lab" read wlan1 > /dev/null; b=$(date +%s%N)
    echo $(( (b - a) / 1000 )) >> $out/bench-reach-process-us.txt
    a=$(date +%s%N); iw dev wlan1 link > /dev/null; b=$(date +%s%N)
    echo $(( (b - a) / 1000 )) >> $out/bench-iw-process-us.txt
    # Baselines: what starting a process costs here, and starting the Swift binary without reading anything.
    a=$(date +%s%N); /bin/true; b=$(date +%s%N)
    echo $(( (b - a) / 1000 )) >> $out/bench-true-process-us.txt
    a=$(date +%s%N); "$bin/reach-wifi-lab" now > /dev/null; b=$(date +%s%N)
    echo $(( (b - a) / 1000 )) >> $out/bench-reach-start-us.txt
  done
  "$bin/reach-wifi-lab" time-read $runs wlan1 > $out/bench-reach-inprocess-us.txt
  if "$bin/reach" status --help >/dev/null 2>&1; then
    for ((r = 0; r < runs; r++)); do
      a=$(date +%s%N); "$bin/reach" status --json --wifi wlan1 > /dev/null; b=$(date +%s%N)
      echo $(( (b - a) / 1000 )) >> $out/bench-reach-status-us.txt
    done
  fi
  ;;
check)
  # 1. Associated at -30 dBm (tx power 20 dBm).
  iw dev wlan1 link > $out/iw-link-associated.txt
  "$bin/reach-wifi-lab" read > $out/read-associated.json 2> $out/read-associated.err
  run_reach_status status-associated
  run_reach_status status-wifi-only --wifi wlan1

  # 2. The event monitor runs from here on; its lines carry CLOCK_MONOTONIC ms (the same clock as /proc/uptime).
  "$bin/reach-wifi-lab" monitor 120 > $out/monitor.jsonl 2> $out/monitor.err &
  monitor_pid=$!
  wait_for 10 grep -q '"cause":"initial"' $out/monitor.jsonl || fail "the monitor did not report its initial state"

  # 3. The AP's tx power lowered to 10 dBm: the station should see -40 dBm.
  echo "txpower $(now_ms)" >> $out/marks.txt
  iw dev wlan0 set txpower fixed 1000
  sleep 3
  iw dev wlan1 link > $out/iw-link-txpower.txt
  "$bin/reach-wifi-lab" read wlan1 > $out/read-txpower.json 2> $out/read-txpower.err
  iw dev wlan0 set txpower fixed 2000
  sleep 2

  # 4. Every bar, through the hwsim medium (hw/lab/hwsim-medium.py): the station's signal set to chosen levels,
  #    each held long enough for the kernel's signal average to settle; the monitor sees CQM events meanwhile.
  echo -30 > /run/medium-signal
  python3 "$(dirname "$0")/hwsim-medium.py" /run/medium-signal $out/medium.log > $out/medium.out 2>&1 &
  medium_pid=$!
  sleep 2
  associated || fail "wlan1 lost its association when the medium took over"
  echo "sweep $(now_ms)" >> $out/marks.txt
  i=0
  for level in -45 -60 -71 -82 -94 -82 -71 -60 -45; do
    i=$((i + 1))
    echo "level$i $(now_ms)" >> $out/marks.txt
    echo "$level" > /run/medium-signal
    sleep 4
    run_reach_status "sweep-$i" --wifi wlan1
    "$bin/reach-wifi-lab" read wlan1 > $out/sweep-read-$i.json 2>/dev/null
    echo "$i $level" >> $out/sweep-levels.txt
  done
  # 4b. The single-threshold fallback (for wiphys without CQM_RSSI_LIST), forced: one moving threshold.
  kill "$monitor_pid"; wait "$monitor_pid" 2>/dev/null
  "$bin/reach-wifi-lab" monitor 60 wlan1 --single-threshold > $out/monitor-single.jsonl 2> $out/monitor-single.err &
  monitor_pid=$!
  wait_for 10 grep -q '"cause":"initial"' $out/monitor-single.jsonl || fail "the single-threshold monitor did not start"
  sleep 1
  i=0
  for level in -60 -82 -94 -71 -45; do
    i=$((i + 1))
    echo "single$i $(now_ms) $level" >> $out/marks-single.txt
    echo "$level" > /run/medium-signal
    sleep 4
  done
  kill "$monitor_pid"; wait "$monitor_pid" 2>/dev/null
  "$bin/reach-wifi-lab" monitor 120 >> $out/monitor.jsonl 2>> $out/monitor.err &
  monitor_pid=$!
  sleep 2
  kill "$medium_pid"; wait "$medium_pid" 2>/dev/null; medium_pid=
  wait_for 10 associated || fail "wlan1 lost its association after the medium stopped"
  sleep 2

  # 5. The agent runs from here on (hold-down 0, so a loss is reported at once); its report log is on the share.
  cat > /run/agent.json <<CONF
{"report": {"path": "$out/agent.jsonl", "interval_seconds": 3600},
 "changes": {"hold_down_seconds": 0},
 "modems": {"enabled": false},
 "log_level": "warning"}
CONF
  "$bin/reach" agent --config /run/agent.json 2> $out/agent.err &
  agent_pid=$!
  wait_for 15 grep -q '"type":"start"' $out/agent.jsonl || fail "the agent wrote no start line"

  # 6. hostapd stopped: the monitor must notice within 2 s, and the status must leave `wifi`.
  echo "stop $(now_ms)" >> $out/marks.txt
  echo "stop $(date +%s%3N)" >> $out/marks-wall.txt
  kill "$(cat /run/hostapd.pid)"
  wait_for 10 disassociated || log "wlan1 still associated 10 s after hostapd stopped"
  sleep 2
  "$bin/reach-wifi-lab" read wlan1 > $out/read-stopped.json 2> $out/read-stopped.err
  run_reach_status status-stopped

  # 7. hostapd back: wpa_supplicant associates again; the status and the agent must return to `wifi`.
  echo "regain $(date +%s%3N)" >> $out/marks-wall.txt
  start_ap
  wait_for 30 associated || log "wlan1 did not associate again within 30 s"
  sleep 2
  run_reach_status status-regained
  # Several Reachability instances in one process share one nl80211 monitor (and one rtnetlink monitor); the last
  # stop closes them. Counted by the probe in its own process, against this kernel's real nl80211.
  timeout 60 "$bin/reachability-probe" sharing --instances 3 > $out/probe-sharing.jsonl 2> $out/probe-sharing.err
  kill -TERM "$agent_pid"
  wait "$agent_pid"; echo $? > $out/agent.rc
  agent_pid=
  kill "$(cat /run/hostapd.pid)"; sleep 1

  # 8. The station interface deleted: the monitor must report it gone.
  echo "delete $(now_ms)" >> $out/marks.txt
  iw dev wlan1 del
  sleep 2
  kill "$monitor_pid"; wait "$monitor_pid" 2>/dev/null; monitor_pid=

  # 9. Underlays: GRE and WireGuard over wwan0.
  tunnels
  ;;
esac
cleanup
log "scenario done"
exit 0
