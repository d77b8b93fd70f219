// Syntax rules for the names reach takes from a config file or the command line, one function each so every key and
// flag that takes such a name checks it the same way (no I/O: whether the file or interface exists is the caller's
// question). Each returns nil when the text is acceptable, else the problem in a few words for the error message.

/// Network interface names as the kernel accepts them (net/core/dev.c `dev_valid_name`): 1 to 15 bytes (IFNAMSIZ
/// less the NUL), not "." or "..", no '/', ':', white space or NUL.
public enum InterfaceName {
    public static func problem(_ name: String) -> String? {
        if name.isEmpty { return "an empty name" }
        if name.utf8.count > 15 { return "longer than 15 bytes" }
        if name == "." || name == ".." { return "\"\(name)\" is not a name" }
        for b in name.utf8 {
            switch b {
            case UInt8(ascii: "/"), UInt8(ascii: ":"): return "contains '\(Character(Unicode.Scalar(b)))'"
            case 0: return "contains U+0000 (NUL)"
            case 0x20, 0x09...0x0D: return "contains white space"
            default: continue
            }
        }
        return nil
    }

    public static func isValid(_ name: String) -> Bool { problem(name) == nil }

    /// What the error message says is expected.
    public static let expected = "an interface name (1-15 bytes, no '/', ':' or white space)"
}

/// Paths of files reach writes or reads, taken from a config file that a daemon reads from "/": absolute, no NUL
/// (which no path can hold: the C string would end there and name another file), at most PATH_MAX - 1 bytes with
/// components of at most NAME_MAX (include/uapi/linux/limits.h), and naming a file rather than a directory. That the
/// text is valid UTF-8 is the parser's part: JSON and `reach`'s arguments refuse anything else.
public enum FilePathText {
    public static func problem(_ path: String) -> String? {
        if path.isEmpty { return "an empty path" }
        if path.utf8.contains(0) { return "contains U+0000 (NUL)" }
        if !path.hasPrefix("/") { return "not an absolute path" }
        if path.utf8.count > 4095 { return "longer than 4095 bytes" }
        let components = path.split(separator: "/")
        if components.contains(where: { $0.utf8.count > 255 }) { return "a component longer than 255 bytes" }
        if path.hasSuffix("/") || components.last == "." || components.last == ".." || components.isEmpty {
            return "names a directory, not a file"
        }
        return nil
    }

    public static let expected = "an absolute file path"
}

/// A modem control port as the command line names it: `PATH[:qmi|:mbim][:NETDEV]` (`/dev/cdc-wdm0`,
/// `/dev/cdc-wdm0:qmi`, `/dev/cdc-wdm0:wwan0`, `/dev/pts/3:mbim:wwan0`). The protocol and the network interface the
/// modem carries may be left out; whether sysfs can supply them is the caller's question (ReachModem's
/// `ModemDiscovery.lookUp`). A path holding ':' cannot be named this way (no device node does).
public enum ModemPortArgument {
    /// For help texts.
    public static let syntax = "PATH[:qmi|:mbim][:NETDEV]"

    /// What is wrong with the text, in words that follow "--modem 'TEXT': ".
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    public static func spec(_ text: String) -> Result<ModemPortSpec, Problem> {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let path = parts[0]
        var spec = ModemPortSpec(path: path)
        switch parts.count {
        case 1:
            break
        case 2:
            if let p = ModemProtocol(rawValue: parts[1]) {
                spec.protocol = p
            } else if InterfaceName.isValid(parts[1]) {
                spec.interface = parts[1]
            } else {
                return .failure(Problem(
                    "'\(parts[1])' is neither a protocol ('qmi' or 'mbim') nor an interface name "
                        + "(\(InterfaceName.problem(parts[1])!)); expected \(syntax)"))
            }
        case 3:
            guard let p = ModemProtocol(rawValue: parts[1]) else {
                return .failure(Problem("the protocol must be 'qmi' or 'mbim', got '\(parts[1])'"))
            }
            if let why = InterfaceName.problem(parts[2]) {
                return .failure(Problem("'\(parts[2])' is not an interface name (\(why))"))
            }
            spec.protocol = p
            spec.interface = parts[2]
        default:
            return .failure(Problem("too many ':' (expected \(syntax))"))
        }
        if let why = FilePathText.problem(path) {
            return .failure(Problem("expected an absolute device path (\(why))"))
        }
        return .success(spec)
    }
}
