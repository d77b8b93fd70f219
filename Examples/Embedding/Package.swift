// swift-tools-version:6.0
//
// A program of someone else's that embeds GatewayReach by path, as a gateway's fleet client or UI backend would:
// it names only the `GatewayReach` product and uses only its public API. The repository's tests build it
// (Tests/GatewayReachTests/EmbeddingTests.swift) and run it in a network namespace.

import PackageDescription

let package = Package(
    name: "ReachEmbedding",
    dependencies: [
        // By path, so that CI builds it against the tree under test. A program of its own names a release instead:
        //   .package(url: "https://git.example.org/gatewayreach.git", from: "0.1.0"),
        // (the URL of the repository it clones or mirrors; the version is GatewayReachVersion.string's tag).
        .package(name: "GatewayReach", path: "../.."),
    ],
    targets: [
        .executableTarget(name: "reach-embed", dependencies: [.product(name: "GatewayReach", package: "GatewayReach")]),
    ]
)
