// reach-wifi-lab: a test tool for the WiFi lab (hw/lab, scripts/lab-wifi). It drives the ReachWiFi adapter
// directly so the lab can time the reader and the event monitor inside the VM:
//   reach-wifi-lab read [IFACE]              one read, printed as a JSON object {"source":…, "wifi":[…]}
//   reach-wifi-lab monitor SECONDS [IFACE]   WiFiMonitor updates as JSON lines with monotonic timestamps (ms)
//   reach-wifi-lab time-read RUNS [IFACE]    wall time of RUNS reads, one figure (µs) a line
//   reach-wifi-lab now                       CLOCK_MONOTONIC in ms (the monitor's clock), for the lab's marks
// `reach status --json` remains the product's own command; this tool exists for timing and event checks.
import Glibc
import ReachCore
import ReachWiFi

func monotonicMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_BOOTTIME, &ts)  // the clock of WiFiMonitor's update times
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

func microseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_BOOTTIME, &ts)  // the clock of WiFiMonitor's update times
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

func document(_ health: SourceHealth, _ links: [WiFiLink]) -> JSON {
    .object([("source", health.json), ("wifi", .array(links.map(\.json)))])
}

/// One line to a file descriptor, unbuffered (the lab reads the console as lines arrive).
func emit(_ text: String, fd: Int32 = 1) {
    var line = text + "\n"
    line.withUTF8 { buffer in
        var offset = 0
        while offset < buffer.count {
            let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if n <= 0 { return }
            offset += n
        }
    }
}

func fail(_ message: String) -> Never {
    emit("reach-wifi-lab: \(message)", fd: 2)
    exit(2)
}

var args = Array(CommandLine.arguments.dropFirst())
guard let command = args.first else { fail("usage: reach-wifi-lab read|monitor|time-read …") }
args.removeFirst()

switch command {
case "read":
    let (health, links) = WiFiReader.readNow(interface: args.first)
    emit(document(health, links).serialized())
case "now":
    emit(String(monotonicMilliseconds()))
case "time-read":
    guard let runs = args.first.flatMap({ Int($0) }), runs > 0 else { fail("time-read needs a positive run count") }
    let iface = args.count > 1 ? args[1] : nil
    for _ in 0..<runs {
        let start = microseconds()
        let (health, _) = WiFiReader.readNow(interface: iface)
        let took = microseconds() - start
        guard health.available else { fail("read failed: \(health.reason ?? "?")") }
        emit(String(took))
    }
case "monitor":
    guard let seconds = args.first.flatMap({ Int($0) }), seconds > 0 else {
        fail("monitor needs a duration in seconds")
    }
    let rest = args.dropFirst()
    let options = WiFiMonitor.Options(
        interface: rest.first { !$0.hasPrefix("--") }, pollInterval: .seconds(30),
        singleThresholdOnly: rest.contains("--single-threshold"))
    let monitor = WiFiMonitor(options: options)
    let stopper = Task {
        try? await Task.sleep(for: .seconds(seconds))
        monitor.stop()
    }
    for await update in monitor.updates {
        emit(
            JSON.object([
                ("t_ms", .int(update.monotonicMilliseconds)),
                ("cause", .string(update.cause.rawValue)),
                ("events", .array(update.events.map { .string(String(describing: $0)) })),
                ("gone", .array(update.gone.map(JSON.string))),
                ("source", update.health.json),
                ("wifi", .array(update.links.map(\.json))),
            ]).serialized())
    }
    stopper.cancel()
default:
    fail("unknown command \(command)")
}
