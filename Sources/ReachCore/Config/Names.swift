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
