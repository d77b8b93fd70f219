# The lab VM, shared by scripts/lab-wifi and scripts/lab-usb-modem (sourced, not run): Debian's 6.1 kernel from
# apt, a busybox initramfs with the modules a lab needs (in dependency order, hw/lab/modorder.py), and qemu under
# TCG with the build machine's root, the repository and an output folder shared over 9p (hw/lab/init mounts them
# and runs the lab's guest script in a chroot of the root). Every function exits the calling script on failure,
# naming the lab in LAB_NAME.

# lab_need TOOL...: each on PATH, or a pointer to scripts/setup.
lab_need() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$LAB_NAME: $tool is missing: run scripts/setup" >&2; exit 1; }
  done
  [ -x /bin/busybox ] || { echo "$LAB_NAME: /bin/busybox is missing: run scripts/setup (busybox-static)" >&2; exit 1; }
}

# lab_kernel CACHE: whatever linux-image-6.1.0-N-amd64 apt offers, downloaded once into CACHE and unpacked there.
# Sets kver and kdir.
lab_kernel() {
  local cache=$1 deb pkg
  mkdir -p "$cache"
  deb=$(ls -1 "$cache"/linux-image-6.1.0-*-amd64_*.deb 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$deb" ]; then
    find_kernel() { apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' | awk '{print $1}' | sort -V | tail -1; }
    pkg=$(find_kernel)
    if [ -z "$pkg" ]; then apt-get update -q >/dev/null 2>&1 || true; pkg=$(find_kernel); fi
    [ -n "$pkg" ] || { echo "$LAB_NAME: apt offers no linux-image-6.1.0-*-amd64 (run apt-get update)" >&2; exit 1; }
    (cd "$cache" && apt-get download "$pkg" >/dev/null 2>&1) || { echo "$LAB_NAME: apt-get download $pkg failed" >&2; exit 1; }
    deb=$(ls -1 "$cache"/linux-image-6.1.0-*-amd64_*.deb | sort -V | tail -1)
  fi
  kver=$(basename "$deb" | sed -E 's/^linux-image-([^_]+)_.*/\1/')
  kdir=$cache/kernel-$kver
  if [ ! -f "$kdir/boot/vmlinuz-$kver" ]; then
    rm -rf "$kdir.tmp"; mkdir -p "$kdir.tmp"
    dpkg-deb -x "$deb" "$kdir.tmp"
    rm -rf "$kdir"; mv "$kdir.tmp" "$kdir"
  fi
}

# lab_initrd FILE MODULE[=ARGS]...: the initramfs at FILE (rebuilt when hw/lab/init, modorder.py, this file or the
# calling script is newer): static busybox, /init, and the modules with everything they depend on. ARGS are the
# module's parameters, commas for spaces (mac80211_hwsim=radios=2, dummy_hcd=num=2).
lab_initrd() {
  local initrd=$1; shift
  local spec name ko args root
  local -A params=()
  local -a names=()
  for spec in "$@"; do
    name=${spec%%=*}; names+=("$name")
    [ "$spec" != "$name" ] && params[$name]=${spec#*=}
  done
  if [ -f "$initrd" ] && [ ! hw/lab/init -nt "$initrd" ] && [ ! hw/lab/modorder.py -nt "$initrd" ] &&
    [ ! scripts/lib/lab-vm.sh -nt "$initrd" ] && [ ! "$0" -nt "$initrd" ]; then
    return 0
  fi
  root=$(mktemp -d)
  mkdir -p "$root"/{bin,proc,sys,dev,modules,host}
  cp /bin/busybox "$root/bin/busybox"
  cp hw/lab/init "$root/init"
  : > "$root/modules/order"
  while read -r ko; do
    name=$(basename "$ko" .ko)
    cp "$ko" "$root/modules/$name.ko"
    args=${params[${name//-/_}]:-}
    echo "$name.ko ${args//,/ }" >> "$root/modules/order"
  done < <(python3 hw/lab/modorder.py "$kdir/lib/modules/$kver" "${names[@]}")
  (cd "$root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1 > "$initrd.tmp")
  mv "$initrd.tmp" "$initrd"
  rm -rf "$root"
}

# lab_boot INITRD OUT SCRIPT MODE BINDIR TIMEOUT: boots the VM; the guest runs `SCRIPT MODE BINDIR` (hw/lab/init)
# with OUT as its writable /tmp/out. Leaves the console in OUT/console.log; exits the caller when the VM outlives
# TIMEOUT seconds or the guest script did not end with status 0 (LAB-EXIT), showing the console's tail.
lab_boot() {
  local initrd=$1 out=$2 script=$3 mode=$4 bindir=$5 limit=$6 rc
  local console=$out/console.log
  set +e
  timeout --kill-after=10 "$limit" qemu-system-x86_64 -accel tcg -m "${LAB_MEMORY:-1024}" -smp 1 -nographic -no-reboot \
    -nic none -kernel "$kdir/boot/vmlinuz-$kver" -initrd "$initrd" \
    -append "console=ttyS0 quiet panic=-1 labscript=$script labmode=$mode labbin=$bindir labrepo=$repo" \
    -virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$repo,mount_tag=repo,security_model=none,readonly=on,multidevs=remap" \
    -virtfs "local,path=$out,mount_tag=out,security_model=none,multidevs=remap" \
    < /dev/null > "$console" 2>&1
  rc=$?
  set -e
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "$LAB_NAME: the VM did not finish within $limit s; console tail:" >&2
    tail -30 "$console" >&2
    exit 1
  fi
  if ! grep -q '^LAB-EXIT: 0' "$console"; then
    echo "$LAB_NAME: the guest script failed; console tail:" >&2
    tail -40 "$console" >&2
    exit 1
  fi
}
