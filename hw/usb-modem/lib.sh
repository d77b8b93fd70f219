# Helpers of the USB modem lab's check scripts (sourced): counters, the VM's clock, bounded waits.
work=$(mktemp -d)
passed=0 failed=0 notrun=0
pass() { echo "PASS $1: $2"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
notrun() { echo "NOT RUN $1: $2"; notrun=$((notrun + 1)); }
now_ms() { awk '{printf "%d\n", $1 * 1000}' /proc/uptime; }
# wait_line FILE PATTERN SECONDS: until a line of FILE matches (extended regex); prints the time it was seen.
wait_line() {
  local limit=$(( $3 * 10 ))
  for ((i = 0; i < limit; i++)); do
    grep -Eq "$2" "$1" 2>/dev/null && { now_ms; return 0; }
    sleep 0.1
  done
  return 1
}
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@" 2>/dev/null; }
# iputils' ping where installed, else busybox's (the lab's initramfs needs busybox-static on the build machine)
ping() { if type -P ping > /dev/null; then command ping "$@"; else busybox ping "$@"; fi; }
cdc_wdm() { ls /dev/cdc-wdm* 2>/dev/null | head -1; }

