// ReachWiFi: see DESIGN in README; filled by its issue.
public enum ReachWiFiNamespace {}
