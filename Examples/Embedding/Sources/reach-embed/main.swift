// The common uses of GatewayReach's `Reachability`, the way an app uses YYReachability:
//
//   reach-embed status [OPTIONS]     one determination, now (`refresh()` on an instance not started)
//   reach-embed once [OPTIONS]       the one-shot answer without an instance (`GatewayReach.status`)
//   reach-embed watch [OPTIONS]      every reported change, through both `notify` and `updates`, until SIGINT/SIGTERM
//
// OPTIONS: --host NAME, --hold-down S, --no-modems, --no-wifi, --modem PATH:qmi|mbim:NETDEV (a modem's control port,
// its protocol and the network interface that carries its data; repeatable; without it every modem discovery finds),
// --worker (each modem read in a worker process of its own: this program started again as `reach-embed
// modem-worker`, so that a modem library that crashes or hangs on a bad modem costs the worker, not this program).
//
// Each line is "<where> <status> <medium> <wwan status> reachable=<bool>", e.g. "updates wifi ethernet none
// reachable=true": `where` says whether the block or the stream said it; `status` and `once` add a line per modem.

import Dispatch
import GatewayReach  // also brings ReachCore, ReachRoutes, ReachModem, ReachWiFi and ReachProbe (re-exported)
import Glibc

var arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.isEmpty ? "status" : arguments.removeFirst()

// The worker's entry: a program that opts in to modem workers hands this argument to `ModemWorkerProcess.main()`
// before anything else (the worker talks to its parent on fd 3 and drops every capability).
if command == "modem-worker" { exit(await ModemWorkerProcess.main()) }
let workerLaunch = ModemWorkerLaunch.currentExecutable(["modem-worker"])

var hostname: String?
var options = ReachabilityOptions()
while !arguments.isEmpty {
    switch arguments.removeFirst() {
    case "--host" where !arguments.isEmpty: hostname = arguments.removeFirst()
    case "--hold-down" where !arguments.isEmpty:
        guard let seconds = Double(arguments.removeFirst()), seconds >= 0 else { usage() }
        options.holdDown = .milliseconds(Int64(seconds * 1000))
    case "--no-modems": options.modems.enabled = false
    case "--no-wifi": options.wifi.enabled = false
    case "--modem" where !arguments.isEmpty:
        // PATH:PROTOCOL:NETDEV, e.g. /dev/cdc-wdm0:qmi:wwan0. The netdev is what ties the modem to a route: without
        // it a route over wwan0 cannot be checked against that modem's registration and data session.
        let parts = arguments.removeFirst().split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, !parts[0].isEmpty, let proto = ModemProtocol(rawValue: parts[1]), !parts[2].isEmpty
        else { usage() }
        options.modems.ports.append(ModemPortSpec(path: parts[0], protocol: proto, interface: parts[2]))
    case "--worker": options.modems.worker = workerLaunch
    default: usage()
    }
}

func usage() -> Never {
    let text = Array(("usage: reach-embed status|once|watch [--host NAME] [--hold-down S] [--no-modems] [--no-wifi]"
        + " [--modem PATH:qmi|mbim:NETDEV]... [--worker]\n").utf8)
    _ = write(2, text, text.count)
    exit(64)
}

func line(_ source: String, _ r: Reachability) -> String { line(source, r.snapshot) }

func line(_ source: String, _ s: Snapshot) -> String {
    "\(source) \(s.status.rawValue) \(s.medium.rawValue) \(s.wwanStatus.name) reachable=\(s.reachable)"
}

/// Waits for the first of `signals` (ignored as such, caught by a dispatch source: a program's threads need no mask).
func firstSignal(of signals: [Int32]) async -> Int32 {
    await withCheckedContinuation { (done: CheckedContinuation<Int32, Never>) in
        let queue = DispatchQueue(label: "signals")
        var sources: [DispatchSourceSignal] = []
        var fired = false
        queue.sync {
            for number in signals {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler {
                    guard !fired else { return }
                    fired = true
                    sources.forEach { $0.cancel() }
                    done.resume(returning: number)
                }
                source.resume()
                sources.append(source)
            }
        }
    }
}

/// One line per modem: its port, the netdev it carries, registration, bars, and what could not be read.
func modemLines(_ s: Snapshot) -> [String] {
    s.wwan.map { m in
        "  modem \(m.device) \(m.interface ?? "-") \(m.registration.rawValue) bars=\(m.bars(s.signalPolicy))"
            + (m.error.map { " error: \($0)" } ?? "")
    }
}

func say(_ text: String) {
    print(text)
    fflush(nil)
}

// A target: the default route (YY's +reachability), or a host name (+reachabilityWithHostname:).
let reach = hostname.map { Reachability(hostname: $0, options: options) }
    ?? Reachability(target: .defaultRoute, options: options)

switch command {
case "status":
    // One full determination, without starting the monitor; the properties hold the answer afterwards.
    let s = await reach.refresh()
    say(line("status", s))
    say("  \(reach.status)")  // AFNetworking's words: "Reachable via WiFi", "Not Reachable", …
    modemLines(s).forEach(say)
    exit(reach.isReachable ? 0 : 1)

case "once":
    // The one-shot call: no instance, no monitor; route, modems and WiFi asked concurrently, then merged.
    var request = StatusRequest(target: hostname.map { .host($0) } ?? .defaultRoute)
    request.readModems = options.modems.enabled
    request.modems = options.modems.ports.isEmpty ? nil : options.modems.ports  // nil: discovery
    request.modemOptions.worker = options.modems.worker
    request.readWiFi = options.wifi.enabled
    let s = await GatewayReach.status(request)
    say(line("once", s))
    modemLines(s).forEach(say)
    exit(s.reachable ? 0 : 1)

case "watch":
    // The YYReachability way: a block called on every reported change (on a task of its own, one call at a time,
    // in order); read what you need from the instance it is given.
    reach.notify = { r in say(line("notify", r)) }
    reach.start()
    // The Swift way: an async stream of snapshots, the current one first.
    let updates = Task {
        for await s in reach.updates { say(line("updates", s)) }
    }
    // Until SIGINT or SIGTERM; stop() releases every socket, modem session and thread, and ends `updates`.
    let signal = await firstSignal(of: [SIGINT, SIGTERM])
    reach.stop()
    await updates.value
    say("stopped by signal \(signal)")

default:
    usage()
}
