// C helpers the Swift importer cannot reach for GLib, libqmi-glib and libmbim-glib:
// GObject cast macros, g_signal_connect (a macro), and variadic constructors.
// Every symbol carries the CGLibShims_ prefix. Each wrapper's comment names the C call or macro it stands for.
#ifndef CGLIBSHIMS_H
#define CGLIBSHIMS_H
#include <libqmi-glib.h>
#include <libmbim-glib.h>
#include <gio/gunixinputstream.h>  // GUnixInputStream: a pipe as a GIO stream (the bridge's own tests use it)
#include "CGLibShims_worker.h"     // the modem worker process: spawn, confinement
#include "CGLibShims_lazy.h"       // the modem libraries opened on first use (lazy.S, lazy.c)

// MARK: - GObject casts

/// `G_OBJECT (p)`.
static inline GObject *CGLibShims_G_OBJECT(gpointer p) { return G_OBJECT(p); }
/// `G_ASYNC_INITABLE (p)`.
static inline GAsyncInitable *CGLibShims_G_ASYNC_INITABLE(gpointer p) { return G_ASYNC_INITABLE(p); }
/// `QMI_CLIENT (p)`: any service client up-cast to its base class (for qmi_device_release_client).
static inline QmiClient *CGLibShims_QMI_CLIENT(gpointer p) { return QMI_CLIENT(p); }
/// `QMI_CLIENT_NAS (p)`.
static inline QmiClientNas *CGLibShims_QMI_CLIENT_NAS(gpointer p) { return QMI_CLIENT_NAS(p); }
/// `QMI_CLIENT_DMS (p)`.
static inline QmiClientDms *CGLibShims_QMI_CLIENT_DMS(gpointer p) { return QMI_CLIENT_DMS(p); }
/// `QMI_CLIENT_UIM (p)`.
static inline QmiClientUim *CGLibShims_QMI_CLIENT_UIM(gpointer p) { return QMI_CLIENT_UIM(p); }
/// `QMI_CLIENT_WDS (p)`.
static inline QmiClientWds *CGLibShims_QMI_CLIENT_WDS(gpointer p) { return QMI_CLIENT_WDS(p); }
/// `QMI_DEVICE (p)`.
static inline QmiDevice *CGLibShims_QMI_DEVICE(gpointer p) { return QMI_DEVICE(p); }
/// `MBIM_DEVICE (p)`.
static inline MbimDevice *CGLibShims_MBIM_DEVICE(gpointer p) { return MBIM_DEVICE(p); }

// MARK: - Constructors the importer cannot call

/// `g_object_new (QMI_TYPE_DEVICE, QMI_DEVICE_FILE, file, QMI_DEVICE_NO_FILE_CHECK, no_file_check,
/// QMI_DEVICE_PROXY_PATH, proxy_path, NULL)` (variadic) through `g_object_new_with_properties`. The object is not
/// initialised yet: finish it with `g_async_initable_init_async`, as `qmi_device_new` would. `proxy_path` may be NULL
/// for libqmi's default ("qmi-proxy").
QmiDevice *CGLibShims_qmi_device_new_uninitialised(GFile *file, gboolean no_file_check, const char *proxy_path);

// MARK: - Signals (g_signal_connect is a macro over g_signal_connect_data; these keep the handler types checked)

/// `g_signal_connect (device, QMI_DEVICE_SIGNAL_REMOVED, handler, user_data)`.
gulong CGLibShims_qmi_device_connect_removed(QmiDevice *device, void (*handler)(QmiDevice *, gpointer),
                                             gpointer user_data);
/// `g_signal_connect (client, "system-info", handler, user_data)`: NAS System Info indication (0x004E).
gulong CGLibShims_qmi_nas_connect_system_info(
    QmiClientNas *client, void (*handler)(QmiClientNas *, QmiIndicationNasSystemInfoOutput *, gpointer),
    gpointer user_data);
/// `g_signal_connect (client, "serving-system", handler, user_data)`: NAS Serving System indication (0x0024).
gulong CGLibShims_qmi_nas_connect_serving_system(
    QmiClientNas *client, void (*handler)(QmiClientNas *, QmiIndicationNasServingSystemOutput *, gpointer),
    gpointer user_data);
/// `g_signal_connect (client, "signal-info", handler, user_data)`: NAS Signal Info indication (0x0051).
gulong CGLibShims_qmi_nas_connect_signal_info(
    QmiClientNas *client, void (*handler)(QmiClientNas *, QmiIndicationNasSignalInfoOutput *, gpointer),
    gpointer user_data);
/// `g_signal_connect (client, "event-report", handler, user_data)`: NAS Event Report indication (0x0002).
gulong CGLibShims_qmi_nas_connect_event_report(
    QmiClientNas *client, void (*handler)(QmiClientNas *, QmiIndicationNasEventReportOutput *, gpointer),
    gpointer user_data);
/// `g_signal_connect (client, "packet-service-status", handler, user_data)`: WDS Packet Service Status indication
/// (0x0022).
gulong CGLibShims_qmi_wds_connect_packet_service_status(
    QmiClientWds *client, void (*handler)(QmiClientWds *, QmiIndicationWdsPacketServiceStatusOutput *, gpointer),
    gpointer user_data);
/// `g_signal_connect (device, MBIM_DEVICE_SIGNAL_INDICATE_STATUS, handler, user_data)`.
gulong CGLibShims_mbim_device_connect_indicate_status(MbimDevice *device,
                                                      void (*handler)(MbimDevice *, MbimMessage *, gpointer),
                                                      gpointer user_data);
/// `g_signal_connect (device, MBIM_DEVICE_SIGNAL_REMOVED, handler, user_data)`.
gulong CGLibShims_mbim_device_connect_removed(MbimDevice *device, void (*handler)(MbimDevice *, gpointer),
                                              gpointer user_data);
/// `g_signal_connect (device, MBIM_DEVICE_SIGNAL_ERROR, handler, user_data)`.
gulong CGLibShims_mbim_device_connect_error(MbimDevice *device, void (*handler)(MbimDevice *, GError *, gpointer),
                                            gpointer user_data);

// MARK: - Logging

/// The sink GLib log records are handed to: GLib level bits (G_LOG_LEVEL_*), the log domain (may be NULL) and the
/// message. Called on whichever thread logged.
typedef void (*CGLibShims_LogSink)(int level, const char *domain, const char *message);

/// `g_log_set_writer_func`: routes every GLib structured and classic log record (g_debug, g_warning from libqmi and
/// libmbim…) to `sink` instead of stderr. GLib allows this once per process; later calls return FALSE and do
/// nothing. Records at G_LOG_LEVEL_ERROR still abort, as GLib defines.
gboolean CGLibShims_install_log_writer(CGLibShims_LogSink sink);

// MARK: - Small helpers

/// `g_array_index (array, gint8, i)` and friends: GArray element access is a macro.
static inline gint8 CGLibShims_array_gint8(GArray *a, guint i) { return g_array_index(a, gint8, i); }
static inline guint8 CGLibShims_array_guint8(GArray *a, guint i) { return g_array_index(a, guint8, i); }
static inline gint16 CGLibShims_array_gint16(GArray *a, guint i) { return g_array_index(a, gint16, i); }
static inline gint32 CGLibShims_array_gint32(GArray *a, guint i) { return g_array_index(a, gint32, i); }
/// `&g_array_index (array, T, i)` for arrays of structs: the element address, for any element size.
static inline gconstpointer CGLibShims_array_element(GArray *a, guint i) {
    return a->data + (gsize)g_array_get_element_size(a) * i;
}

#endif
