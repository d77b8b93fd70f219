// `reach-modem-sim ctl SOCKET KEY=VALUE…`: the arguments of one control line, turned into its JSON.
//
// A key is a dotted path into the state (`signal.rsrp_dbm`, `operator.name`, `registration`), which becomes the
// control line's `set`; the operation keys `fault`, `refuse`, `indicate`, `quiet` and `query` stay at the top
// (`query=state`, `fault=clear`, `quiet=true`). A value that reads as JSON (a number, `null`, `true`, `[]`, an object,
// a quoted string) is that JSON, anything else is a string, so `registration=searching` needs no quotes.

import ReachCore

public enum ControlCommand {
    /// The keys that are operations, not state.
    static let operationKeys: Set<String> = ["fault", "refuse", "indicate", "quiet", "query"]

    /// One control line (without the newline), or an error naming the argument that is wrong.
    public static func line(_ arguments: [String]) throws(ScenarioError) -> String {
        guard !arguments.isEmpty else { throw ScenarioError("ctl", "expected at least one KEY=VALUE") }
        var top: [(String, JSON)] = []
        var set: [(String, JSON)] = []
        for argument in arguments {
            guard let eq = argument.firstIndex(of: "="), eq != argument.startIndex else {
                throw ScenarioError("ctl", "'\(argument)': expected KEY=VALUE")
            }
            let key = String(argument[..<eq])
            let text = String(argument[argument.index(after: eq)...])
            let path = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !path.contains(where: \.isEmpty) else { throw ScenarioError("ctl", "'\(key)': an empty name in the key") }
            let value = (try? JSON.parse(text)) ?? .string(text)
            if operationKeys.contains(path[0]) {
                try insert(value, at: path[...], into: &top, whole: key)
            } else {
                try insert(value, at: path[...], into: &set, whole: key)
            }
        }
        if !set.isEmpty { top.insert(("set", .object(set)), at: 0) }
        return JSON.object(top).serialized()
    }

    /// Puts `value` at `path` inside `object`, making the objects on the way; a key given twice, or a key below a
    /// value that is not an object, is an error.
    static func insert(
        _ value: JSON, at path: ArraySlice<String>, into object: inout [(String, JSON)], whole: String
    ) throws(ScenarioError) {
        let name = path[path.startIndex]
        let index = object.firstIndex { $0.0 == name }
        guard path.count > 1 else {
            guard index == nil else { throw ScenarioError("ctl", "'\(whole)' is given twice") }
            object.append((name, value))
            return
        }
        var inner: [(String, JSON)] = []
        if let index {
            guard let members = object[index].1.objectValue else {
                throw ScenarioError("ctl", "'\(whole)': '\(name)' is given a value of its own as well")
            }
            inner = members
        }
        try insert(value, at: path.dropFirst(), into: &inner, whole: whole)
        if let index { object[index].1 = .object(inner) } else { object.append((name, .object(inner))) }
    }
}
