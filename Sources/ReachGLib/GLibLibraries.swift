// Opening the modem libraries when a modem is opened, not at start (CGLibShims_lazy.h): the GLib libraries, then
// libqmi-glib or libmbim-glib. A process that reads no modem never maps them; a board without one of them reads the
// modems of the other protocol and names the missing library for the rest.

import CGLibShims

public enum GLibLibraries {
    /// The protocol library a modem needs on top of GLib.
    public enum ModemLibrary: Sendable {
        case qmi
        case mbim

        var library: CGLibShims_library { self == .qmi ? CGLibShims_library_qmi : CGLibShims_library_mbim }
    }

    /// Opens GLib, GObject, GIO and `modem`'s library unless they are open. Nil when they are; otherwise why not, in
    /// the dynamic loader's words ("libqmi-glib.so.5: cannot open shared object file: No such file or directory").
    /// A failure is final for the process: the files do not come back on their own.
    public static func open(_ modem: ModemLibrary) -> String? {
        for library in [CGLibShims_library_glib, CGLibShims_library_gobject, CGLibShims_library_gio, modem.library] {
            if let why = open(library) { return why }
        }
        return nil
    }

    /// Whether GLib is open, so that something on its loop can run (the modem worker's heartbeat asks).
    public static var glibIsOpen: Bool { CGLibShims_lazy_is_open(CGLibShims_library_glib) != 0 }

    private static func open(_ library: CGLibShims_library) -> String? {
        var message = [CChar](repeating: 0, count: 384)
        guard CGLibShims_lazy_open(library, &message, message.count) != 0 else { return nil }
        return message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
