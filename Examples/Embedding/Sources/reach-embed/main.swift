// The common uses of GatewayReach's `Reachability`, the way an app uses YYReachability:
//
//   reach-embed status [--host NAME]           one determination, now
//   reach-embed watch [--host NAME] [--hold-down S] [--no-modems] [--no-wifi]
//                                               every reported change, through both `notify` and `updates`,
//                                               until SIGINT/SIGTERM
//
// Each line is "<where> <status> <medium> <wwan status> reachable=<bool>", e.g. "updates wifi ethernet none
// reachable=true": `where` says whether the block or the stream said it.

import Dispatch
import GatewayReach
import Glibc

var arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.isEmpty ? "status" : arguments.removeFirst()
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
    default: usage()
    }
}

func usage() -> Never {
    let text = Array("usage: reach-embed status|watch [--host NAME] [--hold-down S] [--no-modems] [--no-wifi]\n".utf8)
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
    exit(reach.isReachable ? 0 : 1)

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
