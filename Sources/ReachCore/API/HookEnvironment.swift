// The environment an event hook gets (NetworkManager's dispatcher and ModemManager's connection.d pass theirs the
// same way): a few named variables for the common questions, then every top-level string, number or boolean of the
// report line as REACH_<KEY>, so a key the line gains later (an uplink, say) reaches hooks without a change here.

public enum HookEnvironment {
    /// The PATH hooks run with: nothing of the agent's own environment is passed on.
    public static let path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    /// `NAME=value` pairs for a report line, names unique, in a stable order.
    public static func variables(line: JSON) -> [(String, String)] {
        var out: [(String, String)] = []
        var seen = Set<String>()
        func add(_ name: String, _ value: String) {
            guard !seen.contains(name) else { return }
            seen.insert(name)
            out.append((name, String(value.unicodeScalars.filter { $0 != "\0" })))
        }
        let event = line["event"]
        let status = line["status"]?.stringValue ?? ""
        add("REACH_EVENT", event?["type"]?.stringValue ?? "")
        add("REACH_SEQ", event?["seq"]?.intValue.map { String($0) } ?? "")
        add("REACH_STATUS", status)
        add("REACH_PREVIOUS_STATUS", event?["from"]?["status"]?.stringValue ?? status)
        add("REACH_MEDIUM", line["medium"]?.stringValue ?? "")
        add("REACH_PREVIOUS_MEDIUM", event?["from"]?["medium"]?.stringValue ?? line["medium"]?.stringValue ?? "")
        add("REACH_WWAN_STATUS", line["wwan_status"]?.stringValue ?? "")
        add("REACH_REACHABLE", line["reachable"]?.boolValue.map { $0 ? "1" : "0" } ?? "")
        add("REACH_INTERFACE", line["route"]?["interface"]?.stringValue ?? "")
        add("REACH_GATEWAY", line["route"]?["gateway"]?.stringValue ?? "")
        add("REACH_REASON", event?["reason"]?.stringValue ?? "")
        add("REACH_CHANGED", (event?["changed"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ","))
        // The uplinks a change line names (`event.uplinks`), and the primary one now (the `uplinks` array).
        let changedUplinks = (event?["uplinks"]?.arrayValue ?? []).compactMap { $0["interface"]?.stringValue }
        add("REACH_UPLINKS_CHANGED", changedUplinks.joined(separator: ","))
        let primary = (line["uplinks"]?.arrayValue ?? []).first { $0["primary"]?.boolValue == true }
        add("REACH_PRIMARY_UPLINK", primary?["interface"]?.stringValue ?? "")
        add("REACH_UNDERLAY", line["route"]?["underlay"]?["interface"]?.stringValue ?? "")
        if let target = line["target"] {
            add("REACH_TARGET", target["kind"]?.stringValue ?? "")
            add("REACH_TARGET_VALUE", target["value"]?.stringValue ?? "")
        }
        for (key, value) in line.objectValue ?? [] {
            let text: String
            switch value {
            case let .string(s): text = s
            case let .bool(b): text = b ? "1" : "0"
            case let .int(i): text = String(i)
            case let .double(d): text = JSON.format(d)
            default: continue
            }
            add("REACH_" + name(key), text)
        }
        return out
    }

    /// A JSON key as a variable name: upper case, anything but letters and digits as "_".
    public static func name(_ key: String) -> String {
        String(key.unicodeScalars.map { s -> Character in
            switch s {
            case "a"..."z": return Character(Unicode.Scalar(s.value - 32)!)
            case "A"..."Z", "0"..."9": return Character(s)
            default: return "_"
            }
        })
    }

    /// Whether a hook file name is one run-parts(8) runs by default: letters, digits, "_" and "-" only. Editor
    /// backups (`x~`), package leftovers (`x.dpkg-old`) and notes (`README.md`) are skipped.
    public static func isHookName(_ name: String) -> Bool {
        !name.isEmpty && name.unicodeScalars.allSatisfy { s in
            switch s {
            case "a"..."z", "A"..."Z", "0"..."9", "_", "-": return true
            default: return false
            }
        }
    }
}
