#!/usr/bin/env bash
# Builds CGLibShims' trampolines (lazy.S, lazy.c) with the fake libraries of this folder and runs every scenario of
# main.c in a fresh process, natively and, when the Debian cross compiler and qemu-user are installed, for aarch64
# under qemu. Usage: Tests/Trampolines/run.sh [native|aarch64]...  (default: both; aarch64 is required when asked)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src="$here/../../Sources/C/CGLibShims"
scenarios=(nine floats printf big opened absent missing abort)

run_arch() {
  local arch=$1 cc run=() out
  case "$arch" in
    native) cc=${CC:-cc} ;;
    aarch64) cc=aarch64-linux-gnu-gcc; run=(qemu-aarch64-static -L /usr/aarch64-linux-gnu) ;;
  esac
  out=$(mktemp -d)
  trap 'rm -rf "$out"' RETURN
  local defs=(-DCGLIBSHIMS_LAZY_DEF="\"$here/fake.def\""
    -DCGLIBSHIMS_LAZY_SONAMES='"libreachfakeA.so.1", "libreachfakeA.so.1", "libreachfake-absent.so.9", "libreachfakeA.so.1", "libreachfakeB.so.1"')
  "$cc" -O2 -fPIC -shared -Wl,-soname,libreachfakeA.so.1 -o "$out/libreachfakeA.so.1" "$here/fake_a.c"
  "$cc" -O2 -fPIC -shared -Wl,-soname,libreachfakeB.so.1 -o "$out/libreachfakeB.so.1" "$here/fake_b.c"
  # The program is linked without the fake libraries, as the shipped reach is without the modem libraries.
  "$cc" -O2 -fPIE -pie -Wall -Werror "${defs[@]}" -I "$src/include" -o "$out/trampolines" \
    "$here/main.c" "$src/lazy.c" "$src/lazy.S" -lpthread -ldl
  if readelf -d "$out/trampolines" | grep -q 'libreachfake'; then
    echo "trampolines ($arch): the program needs a fake library at start" >&2
    return 1
  fi
  local s status text
  for s in "${scenarios[@]}"; do
    set +e
    text=$(LD_LIBRARY_PATH="$out" "${run[@]}" "$out/trampolines" "$s" 2>&1)
    status=$?
    set -e
    if [ "$s" = abort ]; then
      # abort(3): SIGABRT, 134 through the shell; qemu-user reports the guest's signal the same way.
      if [ "$status" -ne 134 ] || ! grep -q 'reach: cannot call b_one: .*b_missing' <<<"$text"; then
        echo "trampolines ($arch) $s: exit $status, want 134 and the reason; it printed: $text" >&2
        return 1
      fi
      echo "trampolines ($arch): ok abort ($(grep -o 'reach: cannot call.*' <<<"$text"))"
      continue
    fi
    if [ "$status" -ne 0 ]; then
      echo "trampolines ($arch) $s: exit $status: $text" >&2
      return 1
    fi
    echo "trampolines ($arch): $text" | tr '\n' ' '
    echo
  done
}

arches=("$@")
if [ ${#arches[@]} -eq 0 ]; then
  arches=(native)
  if command -v aarch64-linux-gnu-gcc >/dev/null && command -v qemu-aarch64-static >/dev/null; then arches+=(aarch64)
  else echo "trampolines: no aarch64-linux-gnu-gcc or qemu-aarch64-static; aarch64 not run" >&2; fi
fi
for a in "${arches[@]}"; do
  case "$a" in native|aarch64) run_arch "$a" ;; *) echo "run.sh: unknown architecture '$a'" >&2; exit 64 ;; esac
done
