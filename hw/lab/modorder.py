#!/usr/bin/env python3
"""Prints the load order of kernel modules and everything they depend on, computed from each .ko's `depends=`
modinfo field (a depth-first topological sort). The order differs between kernel builds (in Debian's 6.1.0-56
`virtio` depends on `virtio_ring`, in 6.1.0-47 it did not), so it is never written down by hand.

Usage: modorder.py MODULES_DIR NAME [NAME ...]   (prints one .ko path per line, dependencies first)
"""
import os
import subprocess
import sys


def module_paths(root):
    paths = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".ko"):
                paths[f[:-3].replace("-", "_")] = os.path.join(dirpath, f)
    return paths


def depends(path):
    out = subprocess.run(["modinfo", "-F", "depends", path], check=True, capture_output=True, text=True).stdout
    return [d.replace("-", "_") for d in out.strip().split(",") if d]


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: modorder.py MODULES_DIR NAME [NAME ...]")
    paths = module_paths(sys.argv[1])
    order, state = [], {}

    def visit(name, chain):
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            sys.exit("modorder: dependency cycle: " + " -> ".join(chain + [name]))
        if name not in paths:
            sys.exit(f"modorder: no module {name} under {sys.argv[1]} (needed by {' -> '.join(chain) or 'request'})")
        state[name] = "visiting"
        for dep in depends(paths[name]):
            visit(dep, chain + [name])
        state[name] = "done"
        order.append(paths[name])

    for name in sys.argv[2:]:
        visit(name.replace("-", "_"), [])
    print("\n".join(order))


if __name__ == "__main__":
    main()
