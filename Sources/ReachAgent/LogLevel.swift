// The agent's `log_level` as the loggers' shared level (ReachLog's LogLevelSwitch): every logger `reach agent` makes
// reads it at each record, so SIGHUP's new `log_level` takes effect in all of them at once.

import GatewayReach
import ReachLog

extension LogLevelSwitch {
    public convenience init(_ level: AgentConfig.LogLevel) {
        self.init(level: level.loggerLevel)
    }

    public func set(_ level: AgentConfig.LogLevel) { self.level = level.loggerLevel }
}
