import Foundation
import GatewayReach
import ReachCore
import ReachTestSupport
import Testing

/// One table of defaults (`Defaults`): the configuration reader, the library's options and the configuration
/// reference all say the same.
@Suite struct DefaultsTests {
    /// The file whose table documents every configuration key.
    static let reference = "README.md"

    /// The "default" column of the reference's key table, by key (a row `| \`key\` | default | meaning |`).
    static func documentedDefaults() throws -> [String: String] {
        let text = try String(contentsOfFile: TestPaths.repo + "/" + reference, encoding: .utf8)
        var rows: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count >= 4, cells[1].hasPrefix("`"), cells[1].hasSuffix("`") else { continue }
            rows[String(cells[1].dropFirst().dropLast())] = cells[2]
        }
        return rows
    }

    /// The value at a dotted key path of a JSON object.
    static func value(_ json: JSON, _ path: String) -> JSON? {
        path.split(separator: ".").reduce(Optional(json)) { $0?[String($1)] }
    }

    @Test func theReferenceShowsEveryDefaultAsTheCodeHasIt() throws {
        let documented = try Self.documentedDefaults()
        for (key, value) in Defaults.documented {
            #expect(documented[key] == value, "\(Self.reference): \(key) shows \(documented[key] ?? "nothing"), the code has \(value)")
        }
    }

    /// What `reach agent --check-config` prints for `{}` (every default filled in) is the table's.
    @Test func anEmptyConfigurationHoldsTheTablesValues() throws {
        let json = try AgentConfig.parse("{}").json
        for (key, value) in Defaults.documented {
            let read = try #require(Self.value(json, key), "\(key) missing from the configuration's JSON")
            let shown: String
            switch read {
            case let .string(s): shown = "`\(s)`"
            case let .int(i): shown = String(i)
            case let .double(d): shown = d == d.rounded() ? String(Int(d)) : String(d)
            default: shown = read.serialized()
            }
            #expect(shown == value, "\(key): the configuration reads \(shown), the table says \(value)")
        }
    }

    /// The library's options with nothing set are what an empty configuration gives (the one mapping,
    /// `ReachabilityOptions(config:)`), but for what only the agent sets: the report cadence.
    @Test func theLibrarysDefaultsAreTheConfigurations() throws {
        var fromConfig = ReachabilityOptions(config: try AgentConfig.parse("{}"))
        #expect(fromConfig.reportInterval == .seconds(60))
        fromConfig.reportInterval = nil
        #expect(fromConfig == ReachabilityOptions())
        #expect(ReachabilityOptions().modemMonitorOptions.pollInterval == .seconds(Defaults.modemPollIntervalSeconds))
    }
}
