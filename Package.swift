// swift-tools-version:6.0
//
// GatewayReach: link-state agent for Linux cellular/WiFi gateways.
// Layers (data flows one way): adapters (QMI/MBIM, nl80211, rtnetlink) -> ReachCore (pure) -> agent/CLI.

import PackageDescription

// The modem libraries (libqmi-glib, libmbim-glib, GIO, GObject, GLib) are opened with the first modem, through
// CGLibShims' trampolines (Sources/C/CGLibShims/CGLibShims_lazy.h). The link of `reach` reads an empty linker script in
// their place (lld's --remap-inputs; pkg-config and the module maps still name them): the binary does not need them at
// start, and a call without a trampoline fails the link. Other programs that link GatewayReach load them at start as
// usual and call them through the same trampolines.
// qrtr-glib: Debian 13's qmi-glib.pc requires it (libqmi built with QRTR), and its library needs GLib at start; reach
// calls none of its functions (libqmi-glib loads it when it is opened).
let modemLibraries = ["qmi-glib", "mbim-glib", "gio-2.0", "gobject-2.0", "glib-2.0", "qrtr-glib"]
let notLinked = Context.packageDirectory + "/scripts/lib/not-linked.ld"
let modemLibrariesOpenedLater: [LinkerSetting] = [
    .unsafeFlags(
        ["-use-ld=lld"] + modemLibraries.flatMap { ["-Xlinker", "--remap-inputs=*/lib\($0).so=\(notLinked)"] })
]

let package = Package(
    name: "GatewayReach",
    products: [
        // ReachLog is part of it: an embedder makes the Logger it hands GatewayReach (its own handler as destination).
        .library(name: "GatewayReach", targets: ["GatewayReach", "ReachLog"]),
        .executable(name: "reach", targets: ["reach"]),
        .executable(name: "reach-modem-sim", targets: ["reach-modem-sim"]),
    ],
    targets: [
        // Pure logic: no C module, no I/O.
        .target(name: "ReachCore", linkerSettings: [.linkedLibrary("m")]),
        // The command-line parser (pure; replaces swift-argument-parser, see its header).
        .target(name: "ReachCommandLine"),
        // The door to the kernel: one wrapper per system call (scripts/lib/check-syscalls holds the other targets to
        // it), one posix_spawn path (Spawn), named threads, the safe-write helper (exclusive no-follow temp, fsync, rename; devices and FIFOs in place),
        // the bounded reader (no FIFO blocks, size cap), the listening socket, typed system errors. Glibc only.
        .target(name: "ReachSystem"),
        // Logging (replaces apple/swift-log, see its header): levels, a handler per logger, standard error with
        // journald's priority prefix.
        .target(name: "ReachLog", dependencies: ["ReachSystem"]),

        // System libraries, one per pkg-config file.
        .systemLibrary(name: "CQMI", path: "Sources/C/CQMI", pkgConfig: "qmi-glib", providers: [.apt(["libqmi-glib-dev"])]),
        .systemLibrary(name: "CMBIM", path: "Sources/C/CMBIM", pkgConfig: "mbim-glib", providers: [.apt(["libmbim-glib-dev"])]),
        .systemLibrary(name: "CNLRoute", path: "Sources/C/CNLRoute", pkgConfig: "libnl-route-3.0", providers: [.apt(["libnl-route-3-dev"])]),
        .systemLibrary(name: "CNLGenl", path: "Sources/C/CNLGenl", pkgConfig: "libnl-genl-3.0", providers: [.apt(["libnl-genl-3-dev"])]),

        // C shims: macros, GObject casts, g_signal_connect, nla_for_each, variadic wrappers.
        // lazy.S and lazy.c: the modem libraries' functions as trampolines, the libraries opened with the first modem
        // (CGLibShims_lazy.h); lazy-symbols.def is their list, written by scripts/lazy-symbols.
        .target(
            name: "CGLibShims", dependencies: ["CQMI", "CMBIM"], path: "Sources/C/CGLibShims", exclude: ["lazy-symbols.def"]),
        .target(name: "CNetlinkShims", dependencies: ["CNLRoute", "CNLGenl"], path: "Sources/C/CNetlinkShims"),

        // Sleeping until a deadline without leaving a cancelled sleep behind (one timer thread, gone when idle).
        .target(name: "ReachTime", dependencies: ["ReachSystem"]),

        // Adapters: one per source; each returns ReachCore values.
        .target(
            name: "ReachGLib", dependencies: ["CGLibShims", "ReachLog"]),
        .target(name: "ReachRoutes", dependencies: ["ReachCore", "ReachSystem", "CNetlinkShims"]),
        .target(
            name: "ReachModem",
            dependencies: [
                "ReachCore", "ReachSystem", "ReachGLib", "ReachTime", "CGLibShims",
                "ReachLog",
            ]),
        .target(name: "ReachWiFi", dependencies: ["ReachCore", "ReachSystem", "CNetlinkShims"]),
        // Validation probes (DNS, ICMP, HTTP) through sockets bound to each uplink; the judging is ReachCore's.
        .target(name: "ReachProbe", dependencies: ["ReachCore", "ReachSystem"]),

        // The embeddable API.
        .target(
            name: "GatewayReach",
            dependencies: [
                "ReachCore", "ReachSystem", "ReachRoutes", "ReachModem", "ReachWiFi", "ReachProbe", "ReachTime",
                "ReachLog",
            ]),

        // Agent: monitors, reporters, diagnostics, config.
        .target(
            name: "ReachAgent",
            dependencies: [
                "GatewayReach", "ReachSystem", "CQMI", "CMBIM", "CNLRoute",
                "ReachLog",
            ]
        ),
        .executableTarget(
            name: "reach",
            dependencies: ["ReachAgent", "ReachCommandLine"],
            linkerSettings: modemLibrariesOpenedLater
        ),

        // Modem simulator (a test tool that speaks QMUX and MBIM on a pty).
        .target(name: "ModemSim", dependencies: ["ReachCore"], path: "Tests/Tools/ModemSim"),
        .executableTarget(name: "reach-modem-sim", dependencies: ["ModemSim"], path: "Tests/Tools/reach-modem-sim"),

        // WiFi lab tool (hw/lab): times the nl80211 reader and the event monitor inside the VM.
        .executableTarget(name: "reach-wifi-lab", dependencies: ["ReachWiFi", "ReachCore"], path: "Tests/Tools/reach-wifi-lab"),

        // Test-only helpers, the one place tests start programs: posix_spawn children with deadlines and a cap on how
        // many run at once, the modem simulator, network namespaces, the built products (Foundation is fine here).
        .target(
            name: "ReachTestSupport",
            dependencies: ["ReachCore", "ReachSystem", "GatewayReach", "ReachLog"],
            path: "Tests/ReachTestSupport"),

        .testTarget(name: "ReachTestSupportTests", dependencies: ["ReachTestSupport"]),
        .testTarget(name: "ReachCoreTests", dependencies: ["ReachCore"]),
        .testTarget(name: "ReachCommandLineTests", dependencies: ["ReachCommandLine"]),
        .testTarget(name: "ReachLogTests", dependencies: ["ReachLog"]),
        // Planted symbolic links, device nodes (mknod), FIFOs and sockets in a directory of the test's own.
        .testTarget(name: "ReachSystemTests", dependencies: ["ReachSystem", "ReachTestSupport"]),
        .testTarget(name: "ReachRoutesTests", dependencies: ["ReachRoutes", "ReachCore", "CNetlinkShims", "ReachTestSupport", "reach"]),
        .testTarget(name: "ReachWiFiTests", dependencies: ["ReachWiFi", "ReachCore", "CNetlinkShims", "ReachTestSupport"]),
        // The simulator's codecs and engine, its messages checked by libqmi/libmbim's own parsers, and the
        // built reach-modem-sim driven by Debian's qmicli/mbimcli.
        .testTarget(name: "ModemSimTests", dependencies: ["ModemSim", "ReachCore", "CQMI", "CMBIM", "ReachTestSupport"]),
        // The WWAN adapter against fake sysfs trees, libmbim-parsed captures, and the built reach-modem-sim and
        // reach (listed so that `swift build --build-tests` builds them).
        .testTarget(
            name: "ReachModemTests",
            dependencies: [
                "ReachModem", "ReachGLib", "ReachCore", "CGLibShims", "ReachTestSupport", "reach", "reach-modem-sim",
            ]),
        // A test tool: Reachability in a process of its own, counting its fds, threads and memory (the sharing test,
        // scripts/bench reachability).
        .executableTarget(name: "reachability-probe", dependencies: ["GatewayReach"], path: "Tests/ReachabilityProbe"),
        // Reachability (the library's monitoring) against fakes and a manual clock, its shared sources against the
        // simulator and namespaces, and the proof that another package can embed it.
        .testTarget(
            name: "GatewayReachTests",
            dependencies: [
                "GatewayReach", "ReachTestSupport", "reach-modem-sim", "reachability-probe",
                "ReachLog",
            ]),
        .testTarget(
            name: "ReachAgentTests",
            dependencies: [
                "ReachAgent", "ReachTestSupport", "reach", "reach-modem-sim",
            ]
        ),
    ]
)
