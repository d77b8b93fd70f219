#!/bin/bash
# Inside the USB modem lab's VM (chroot of the build machine's root; /tmp/out is the output share), run by
# hw/lab/init. Arguments: PROTOCOL (qmi|mbim) BINDIR. Reads /tmp/out/lab.env and /tmp/out/command (NUL-separated
# arguments) written by scripts/lab-usb-modem; leaves command.stdout, command.stderr and command.rc there.
# Exits non-zero only when the lab could not be set up. Every wait is bounded.
set -u
protocol=$1
bin=$2
out=/tmp/out
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
run=/run/reach-usb-modem
export PATH=$bin:$here:/usr/sbin:/usr/bin:/sbin:/bin
. $out/lab.env
log() { echo "LAB: $* (t=$(cut -d' ' -f1 /proc/uptime))"; }
wait_for() {  # SECONDS COMMAND...: polls every 0.1 s
  local limit=$(( $1 * 10 )); shift
  for ((i = 0; i < limit; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}
pids=()
cleanup() {
  local pid
  [ -f $run/device.pid ] && kill -TERM "$(cat $run/device.pid)" 2>/dev/null
  wait_for 10 test ! -e $run/device.pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
}
setup_failed=""
fail() { echo "LAB-FAIL: $*"; setup_failed=$*; }

mkdir -p $run
ip link set lo up
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
# The simulator's pty: hw/lab/init mounts devtmpfs, which has /dev/ptmx but no devpts behind it.
mountpoint -q /dev/pts || { mkdir -p /dev/pts; mount -t devpts -o ptmxmode=0666 devpts /dev/pts; }
uname -r > $out/kernel.txt

case $protocol in
  qmi) udc=dummy_udc.0 device=$here/qmi-device tun=opnet0 ;;
  mbim) udc=dummy_udc.1 device=$here/mbim-device tun=opnet1 ;;
esac
# Both device programs follow the simulator's sessions (--control): traffic stops while a session is down.
device_args=(--control $run/sim.sock)
peer=192.0.2.1 session=192.0.2.2
[ -n "${vid_pid:-}" ] && device_args+=(--vid-pid "$vid_pid")

setup() {
  if [ "$with_mm" = 1 ]; then start_modemmanager_stack || return 1; fi
  reach-modem-sim --scenario "$scenario" --link $run/modem --control $run/sim.sock --log $out/sim.log \
    > $out/sim.out 2> $out/sim.err &
  pids+=($!)
  wait_for 10 test -S $run/sim.sock || { fail "reach-modem-sim did not start: $(cat $out/sim.err)"; return 1; }
  [ -x "$device" ] || { fail "$device is missing (not built or not merged yet)"; return 1; }
  "$device" --pty $run/modem --udc $udc --tun $tun "${device_args[@]}" --pid-file $run/device.pid \
    > $out/device.out 2> $out/device.err &
  pids+=($!)
  wait_for 30 grep -q '^ready' $out/device.out || { fail "the device program did not say ready: $(tail -5 $out/device.err)"; return 1; }
  log "device ready"
  wait_for 30 eval 'ls /dev/cdc-wdm* && ls /sys/class/net/wwan0' ||
    { fail "no /dev/cdc-wdm* and wwan0 within 30 s (net: $(ls /sys/class/net | tr '\n' ' '))"; return 1; }
  log "cdc-wdm and wwan0 up"
  # What a connection manager does after the session starts: raw IP (qmi_wwan's default is 802.3 framing), the
  # session's address, and routes over wwan0 (the peer on the operator's side, and the default).
  if [ -e /sys/class/net/wwan0/qmi/raw_ip ]; then
    ip link set wwan0 down
    echo Y > /sys/class/net/wwan0/qmi/raw_ip
  fi
  ip addr add $session/32 dev wwan0
  ip link set wwan0 up
  ip route add $peer/32 dev wwan0
  ip route add default dev wwan0
  export REACH_SIM_CONTROL=$run/sim.sock REACH_USB_PEER=$peer REACH_USB_PROTOCOL=$protocol
  REACH_USB_MODEM=$(cd "$(readlink -f /sys/class/net/wwan0/device)/.." && pwd)
  export REACH_USB_MODEM
  log "setup done: $REACH_USB_MODEM"
}

# As on a Debian gateway: the system bus, udev (with GatewayReach's rule from config/, as the package installs it)
# and ModemManager, started before the modem is plugged in so that each sees it arrive.
start_modemmanager_stack() {
  mkdir -p /run/dbus /run/udev/rules.d
  cp "$repo/config/70-reach.rules" /run/udev/rules.d/
  # The package's sysusers entry makes the group the rule names; the shared root is read-only, so a copy of
  # /etc/group with it is mounted over the original inside the VM.
  if ! getent group reach > /dev/null; then
    { cat /etc/group; echo "reach:x:991:"; } > $run/group
    mount --bind $run/group /etc/group
  fi
  dbus-daemon --system --fork --nopidfile > $out/dbus.log 2>&1 || { fail "dbus-daemon did not start: $(cat $out/dbus.log)"; return 1; }
  /lib/systemd/systemd-udevd --daemon > $out/udevd.log 2>&1 || { fail "systemd-udevd did not start: $(cat $out/udevd.log)"; return 1; }
  udevadm trigger --action=add > /dev/null 2>&1
  timeout 30 udevadm settle
  ModemManager --debug > $out/modemmanager.log 2>&1 &
  pids+=($!)
  wait_for 20 mmcli -L || { fail "ModemManager did not answer mmcli -L within 20 s: $(tail -5 $out/modemmanager.log)"; return 1; }
  log "dbus, udevd and ModemManager up"
}

setup || true
if [ "$shell" = 1 ]; then
  log "shell: serving $out/inbox"
  for ((n = 0; n < 36000; n++)); do
    [ -e $out/inbox/quit ] && break
    for f in $out/inbox/*.sh; do
      [ -e "$f" ] || continue
      mv "$f" "$f.running"
      (cd "$repo" && bash "$f.running") > "${f%.sh}.out" 2>&1
      echo $? > "${f%.sh}.rc"
    done
    sleep 0.2
  done
  echo 0 > $out/command.rc; : > $out/command.stdout; : > $out/command.stderr
elif [ -n "$setup_failed" ]; then
  echo "lab-usb-modem: lab setup failed: $setup_failed" > $out/command.stderr
  : > $out/command.stdout
  echo 1 > $out/command.rc
else
  mapfile -d '' cmd < $out/command
  (cd "$repo" && "${cmd[@]}") > $out/command.stdout 2> $out/command.stderr
  echo $? > $out/command.rc
fi
cleanup
dmesg > $out/dmesg.txt
exit 0
