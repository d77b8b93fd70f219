// `reach`: the GatewayReach command line. Thin: one file per subcommand under Subcommands/, work delegated to the
// GatewayReach library and the agent.

import ArgumentParser
import GatewayReach

@main
struct Reach: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reach",
        abstract: "Can packets leave this gateway, over what, and how good is the link?",
        discussion: """
            Exit status: 0 reachable, 1 not reachable, 64 bad usage, 69 the route could not be determined, \
            78 bad configuration.
            """,
        version: GatewayReachVersion.string,
        subcommands: [Status.self],
        defaultSubcommand: Status.self
    )
}
