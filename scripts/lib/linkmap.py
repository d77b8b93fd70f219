#!/usr/bin/env python3
"""Where the bytes of a binary come from, read from lld's link map (-Map): every input section that lands in an
allocated, file-backed output section (what `strip` keeps) is charged to its origin: one of our modules, a package
dependency's module, a Swift runtime library, the C/C++ runtime, or the linker itself (.eh_frame, relocations,
symbol tables it builds). Usage: linkmap.py MAP [STRIPPED_BINARY]"""
import collections, os, re, sys

# Output sections that take no bytes in the stripped file.
SKIP = re.compile(r"^(\.debug|\.comment|\.symtab|\.strtab|\.shstrtab|\.bss|\.tbss|\.note\.gnu\.build-id$)")
# A package dependency's modules, by name: none since swift-log gave way to ReachLog (a module of ours).
PACKAGES = {}


def origin(path):
    m = re.search(r"/release/([^/]+)\.build/", path)
    if m:
        mod = m.group(1)
        return (f"package {PACKAGES[mod]}" if mod in PACKAGES else "ours", mod)
    m = re.search(r"/lib(swift_?\w+|dispatch|BlocksRuntime)\.a\(", path)
    if m:
        return ("Swift runtime", m.group(1))
    if re.search(r"/(libstdc\+\+|libgcc|libgcc_eh|libc_nonshared)\.a\(", path) or re.search(r"/crt\w*\.o$", path):
        return ("C/C++ runtime", os.path.basename(path.split("(")[0]))
    if path == "<internal>":
        return ("linker", None)
    return ("other", os.path.basename(path.split("(")[0]))


def main():
    lines = open(sys.argv[1], errors="replace").read().splitlines()
    header = lines[0]
    in_col, out_col = header.index("In"), header.index("Out")
    by = collections.Counter()
    out = None
    total = 0
    for line in lines[1:]:
        head = line[:out_col].split()
        if len(head) != 4:
            continue
        size = int(head[2], 16)
        rest = line[out_col:]
        if not rest.strip():
            continue
        if not rest.startswith(" "):
            out = rest.split()[0]
            continue
        if SKIP.match(out or "") or len(line) <= in_col or line[in_col] == " ":
            continue
        m = re.match(r"(.*):\(([^)]*)\)$", line[in_col:])
        if not m:
            continue
        kind, name = origin(m.group(1))
        if kind == "linker":
            name = out
        by[(kind, name)] += size
        total += size
    kinds = collections.Counter()
    for (kind, _), n in by.items():
        kinds[kind] += n
    print(f"  {'origin':42} {'KiB':>8} {'share':>6}")
    for kind, n in kinds.most_common():
        print(f"  {kind:42} {n/1024:8.0f} {100*n/total:5.1f}%")
        for (k, name), m in sorted(by.items(), key=lambda x: -x[1]):
            if k == kind and m >= 8 * 1024:
                print(f"    {name:40} {m/1024:8.0f} {100*m/total:5.1f}%")
    print(f"  {'allocated sections, total':42} {total/1024:8.0f}")
    if len(sys.argv) > 2:
        s = os.path.getsize(sys.argv[2])
        print(f"  stripped file: {s} bytes ({s/1024/1024:.2f} MiB); headers and alignment {(s-total)/1024:.0f} KiB")


main()
