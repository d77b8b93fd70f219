// Hardware knowledge read from hw/modems.json (see hw/README.md): which kernel drivers and wwan port types carry
// QMI or MBIM, and per-device facts (USB/PCI id → protocol, quirks). Code consults it; it does not hard-code it.

import ReachCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A protocol decision that may also be "not ours" (an AT port on cdc-wdm).
public enum PortProtocol: Sendable, Equatable {
    case modem(ModemProtocol)
    case none
}

/// Per-device quirks (hw/README.md).
public struct ModemQuirks: Sendable, Equatable {
    public enum MBIMEx: String, Sendable {
        case v3, v2, none
    }

    public var mbimex: MBIMEx = .v3
    public var customDataClass: String?
    public var qmiOverMBIM: Bool?

    public init(mbimex: MBIMEx = .v3, customDataClass: String? = nil, qmiOverMBIM: Bool? = nil) {
        self.mbimex = mbimex
        self.customDataClass = customDataClass
        self.qmiOverMBIM = qmiOverMBIM
    }
}

public struct HardwareEntry: Sendable, Equatable {
    /// "usb:vvvv:pppp" or "pci:vvvv:pppp", lower-case hex.
    public var id: String
    public var name: String
    public var `protocol`: PortProtocol?
    public var quirks: ModemQuirks
    public var source: String
}

public struct HardwareDatabaseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file, or "built-in".
    public var file: String
    /// The key path that was wrong ("modems[3].id"), empty for the whole document.
    public var key: String
    public var message: String
    public var description: String { key.isEmpty ? "\(file): \(message)" : "\(file): \(key): \(message)" }
}

public struct HardwareDatabase: Sendable, Equatable {
    public var drivers: [String: PortProtocol]
    public var wwanPortTypes: [String: PortProtocol]
    public var entries: [String: HardwareEntry]
    /// Where it was read from ("built-in" when no file was found).
    public var origin: String

    /// What GatewayReach knows without any file: the two USB drivers and the two wwan port types.
    public static let builtIn = HardwareDatabase(
        drivers: ["qmi_wwan": .modem(.qmi), "cdc_mbim": .modem(.mbim)],
        wwanPortTypes: ["QMI": .modem(.qmi), "MBIM": .modem(.mbim)], entries: [:], origin: "built-in")

    public init(
        drivers: [String: PortProtocol], wwanPortTypes: [String: PortProtocol], entries: [String: HardwareEntry],
        origin: String
    ) {
        self.drivers = drivers
        self.wwanPortTypes = wwanPortTypes
        self.entries = entries
        self.origin = origin
    }

    public func entry(usbVendor vendor: String, product: String) -> HardwareEntry? {
        entries["usb:\(vendor.lowercased()):\(product.lowercased())"]
    }

    public func entry(pciVendor vendor: String, device: String) -> HardwareEntry? {
        entries["pci:\(vendor.lowercased()):\(device.lowercased())"]
    }

    // MARK: Parsing

    /// Parses the modems.json document. Errors name the key that is wrong.
    public static func parse(_ text: String, file: String) throws(HardwareDatabaseError) -> HardwareDatabase {
        func fail(_ key: String, _ message: String) -> HardwareDatabaseError {
            HardwareDatabaseError(file: file, key: key, message: message)
        }
        let doc: JSON
        do {
            doc = try JSON.parse(text)
        } catch {
            throw fail("", "not valid JSON (\(error))")
        }
        guard case .object = doc else { throw fail("", "expected an object, found \(doc.typeName)") }
        guard let schema = doc["schema"] else { throw fail("schema", "missing") }
        guard schema.intValue == 1 else { throw fail("schema", "expected 1, found \(schema.serialized())") }

        func protocolValue(_ v: JSON, _ key: String) throws(HardwareDatabaseError) -> PortProtocol {
            switch v.stringValue {
            case "qmi": return .modem(.qmi)
            case "mbim": return .modem(.mbim)
            case "none": return .none
            default: throw fail(key, "expected \"qmi\", \"mbim\" or \"none\", found \(v.serialized())")
            }
        }
        func protocolMap(_ name: String) throws(HardwareDatabaseError) -> [String: PortProtocol] {
            guard let v = doc[name] else { return [:] }
            guard let members = v.objectValue else { throw fail(name, "expected an object, found \(v.typeName)") }
            var map: [String: PortProtocol] = [:]
            for (k, value) in members { map[k] = try protocolValue(value, "\(name).\(k)") }
            return map
        }
        var db = HardwareDatabase(
            drivers: try protocolMap("drivers"), wwanPortTypes: try protocolMap("wwan_port_types"), entries: [:],
            origin: file)
        guard let modems = doc["modems"] else { return db }
        guard let list = modems.arrayValue else { throw fail("modems", "expected an array, found \(modems.typeName)") }
        for (i, item) in list.enumerated() {
            let at = "modems[\(i)]"
            guard case .object = item else { throw fail(at, "expected an object, found \(item.typeName)") }
            func string(_ key: String, required: Bool) throws(HardwareDatabaseError) -> String? {
                guard let v = item[key], !v.isNull else {
                    if required { throw fail("\(at).\(key)", "missing") }
                    return nil
                }
                guard let s = v.stringValue else { throw fail("\(at).\(key)", "expected a string, found \(v.typeName)") }
                return s
            }
            let id = try string("id", required: true)!
            guard isDeviceID(id) else {
                throw fail("\(at).id", "expected \"usb:vvvv:pppp\" or \"pci:vvvv:pppp\" in lower-case hex, found \"\(id)\"")
            }
            guard db.entries[id] == nil else { throw fail("\(at).id", "\"\(id)\" appears twice") }
            var entry = HardwareEntry(
                id: id, name: try string("name", required: true)!, protocol: nil, quirks: ModemQuirks(),
                source: try string("source", required: true)!)
            if let p = item["protocol"], !p.isNull { entry.protocol = try protocolValue(p, "\(at).protocol") }
            if let q = item["quirks"] {
                guard let members = q.objectValue else {
                    throw fail("\(at).quirks", "expected an object, found \(q.typeName)")
                }
                for (key, value) in members {
                    let path = "\(at).quirks.\(key)"
                    switch key {
                    case "mbimex":
                        guard let s = value.stringValue, let m = ModemQuirks.MBIMEx(rawValue: s) else {
                            throw fail(path, "expected \"v3\", \"v2\" or \"none\", found \(value.serialized())")
                        }
                        entry.quirks.mbimex = m
                    case "custom_data_class":
                        guard let s = value.stringValue else { throw fail(path, "expected a string, found \(value.typeName)") }
                        entry.quirks.customDataClass = s
                    case "qmi_over_mbim":
                        guard let b = value.boolValue else { throw fail(path, "expected a boolean, found \(value.typeName)") }
                        entry.quirks.qmiOverMBIM = b
                    default:
                        throw fail(path, "unknown quirk (known: mbimex, custom_data_class, qmi_over_mbim)")
                    }
                }
            }
            db.entries[id] = entry
        }
        return db
    }

    static func isDeviceID(_ id: String) -> Bool {
        let parts = id.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "usb" || parts[0] == "pci" else { return false }
        return parts.dropFirst().allSatisfy { p in
            p.count == 4 && p.allSatisfy { ("0"..."9").contains($0) || ("a"..."f").contains($0) }
        }
    }

    // MARK: Loading

    /// The places modems.json is looked for, in order (hw/README.md).
    public static func searchPaths(explicit: String?, environment: [String: String] = ProcessEnvironment.current)
        -> [String]
    {
        var paths: [String] = []
        if let explicit { paths.append(explicit) }
        if let dir = environment["REACH_HW_DIR"], !dir.isEmpty { paths.append(dir + "/modems.json") }
        if let prefix = installPrefix() { paths.append(prefix + "/share/gatewayreach/hw/modems.json") }
        paths.append("/usr/share/gatewayreach/hw/modems.json")
        return paths
    }

    /// Loads the first file that exists; the built-in minimum when none does. An explicit path that does not
    /// exist is an error, and so is a file that exists but does not parse.
    public static func load(explicit: String? = nil) throws(HardwareDatabaseError) -> HardwareDatabase {
        for (n, path) in searchPaths(explicit: explicit).enumerated() {
            let fs = SysFS(root: "/")
            guard let text = fs.read(path, limit: 1 << 20) else {
                if n == 0, explicit != nil {
                    throw HardwareDatabaseError(file: path, key: "", message: "cannot be read")
                }
                continue
            }
            return try parse(text, file: path)
        }
        return builtIn
    }

    /// The directory above the running binary's directory (`/usr` for `/usr/bin/reach`).
    static func installPrefix() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let exe = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var parts = exe.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count >= 2 else { return nil }
        parts.removeLast(2)
        return "/" + parts.joined(separator: "/")
    }
}

/// The process environment without Foundation.
public enum ProcessEnvironment {
    public static var current: [String: String] {
        var env: [String: String] = [:]
        var p = environ
        while let entry = p.pointee {
            let s = String(cString: entry)
            if let eq = s.firstIndex(of: "=") { env[String(s[..<eq])] = String(s[s.index(after: eq)...]) }
            p += 1
        }
        return env
    }
}
