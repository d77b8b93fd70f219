// The agent's clock is the monitoring's (GatewayReach `MonitorClock`); the old names stay for callers.

import GatewayReach

public typealias AgentClock = MonitorClock
public typealias ContinuousAgentClock = ContinuousMonitorClock
