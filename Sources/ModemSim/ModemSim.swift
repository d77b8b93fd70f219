// ModemSim: see DESIGN in README; filled by its issue.
public enum ModemSimNamespace {}
