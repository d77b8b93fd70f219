// The one error type of reach's file and system calls: the call, the path it was about, the errno, and for a refusal
// of our own (a FIFO where a regular file belongs, a symbolic link that is not followed) the reason in words.

import Glibc

/// An errno from a named call, e.g. `write /var/log/reach/reach.jsonl: No space left on device`, or a refusal with
/// the errno that fits it best and a reason, e.g. `open /tmp/x: a FIFO, not a regular file`.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public var call: String
    public var errno: Int32
    /// The path the call was about, when there is one.
    public var path: String?
    /// Why, when the errno's own text would not say it (a refusal of ours).
    public var detail: String?

    public init(_ call: String, errno: Int32, path: String? = nil, detail: String? = nil) {
        self.call = call
        self.errno = errno
        self.path = path
        self.detail = detail
    }

    /// The reason without the call and path: the detail, else the errno's text (strerror).
    public var reason: String { detail ?? String(cString: strerror(errno)) }

    public var description: String { path.map { "\(call) \($0): \(reason)" } ?? "\(call): \(reason)" }
}

/// What kind of file a path or descriptor is (the S_IFMT bits of st_mode), in the words error messages use.
public enum FileKind: String, Sendable, Equatable {
    case regular = "regular file"
    case directory
    case characterDevice = "character device"
    case blockDevice = "block device"
    case fifo = "FIFO"
    case socket
    case symbolicLink = "symbolic link"
    case unknown = "file of unknown type"

    public init(mode: mode_t) {
        switch mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFDIR: self = .directory
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        case S_IFIFO: self = .fifo
        case S_IFSOCK: self = .socket
        case S_IFLNK: self = .symbolicLink
        default: self = .unknown
        }
    }

    /// "a FIFO", "a regular file": the kind with its article, for messages.
    public var withArticle: String { "a " + rawValue }
}
