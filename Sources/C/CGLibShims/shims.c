#include "CGLibShims.h"

QmiDevice *CGLibShims_qmi_device_new_uninitialised(GFile *file, gboolean no_file_check, const char *proxy_path) {
    const char *names[3] = { QMI_DEVICE_FILE, QMI_DEVICE_NO_FILE_CHECK, QMI_DEVICE_PROXY_PATH };
    GValue values[3] = { G_VALUE_INIT, G_VALUE_INIT, G_VALUE_INIT };
    guint n = proxy_path ? 3 : 2;

    g_value_init(&values[0], G_TYPE_FILE);
    g_value_set_object(&values[0], file);
    g_value_init(&values[1], G_TYPE_BOOLEAN);
    g_value_set_boolean(&values[1], no_file_check);
    if (proxy_path) {
        g_value_init(&values[2], G_TYPE_STRING);
        g_value_set_string(&values[2], proxy_path);
    }
    GObject *object = g_object_new_with_properties(QMI_TYPE_DEVICE, n, names, values);
    for (guint i = 0; i < n; i++)
        g_value_unset(&values[i]);
    return QMI_DEVICE(object);
}

gulong CGLibShims_qmi_device_connect_removed(QmiDevice *device, void (*handler)(QmiDevice *, gpointer),
                                             gpointer user_data) {
    return g_signal_connect(device, QMI_DEVICE_SIGNAL_REMOVED, G_CALLBACK(handler), user_data);
}

gulong CGLibShims_qmi_nas_connect_system_info(
    QmiClientNas *client, void (*handler)(QmiClientNas *, QmiIndicationNasSystemInfoOutput *, gpointer),
    gpointer user_data) {
    return g_signal_connect(client, "system-info", G_CALLBACK(handler), user_data);
}

gulong CGLibShims_qmi_nas_connect_serving_system(
    QmiClientNas *client, void (*handler)(QmiClientNas *, QmiIndicationNasServingSystemOutput *, gpointer),
    gpointer user_data) {
    return g_signal_connect(client, "serving-system", G_CALLBACK(handler), user_data);
}

gulong CGLibShims_qmi_wds_connect_packet_service_status(
    QmiClientWds *client, void (*handler)(QmiClientWds *, QmiIndicationWdsPacketServiceStatusOutput *, gpointer),
    gpointer user_data) {
    return g_signal_connect(client, "packet-service-status", G_CALLBACK(handler), user_data);
}

gulong CGLibShims_qmi_nas_connect_signal_info(
    QmiClientNas *client, void (*handler)(QmiClientNas *, QmiIndicationNasSignalInfoOutput *, gpointer),
    gpointer user_data) {
    return g_signal_connect(client, "signal-info", G_CALLBACK(handler), user_data);
}

gulong CGLibShims_qmi_nas_connect_event_report(
    QmiClientNas *client, void (*handler)(QmiClientNas *, QmiIndicationNasEventReportOutput *, gpointer),
    gpointer user_data) {
    return g_signal_connect(client, "event-report", G_CALLBACK(handler), user_data);
}

gulong CGLibShims_mbim_device_connect_indicate_status(MbimDevice *device,
                                                      void (*handler)(MbimDevice *, MbimMessage *, gpointer),
                                                      gpointer user_data) {
    return g_signal_connect(device, MBIM_DEVICE_SIGNAL_INDICATE_STATUS, G_CALLBACK(handler), user_data);
}

gulong CGLibShims_mbim_device_connect_removed(MbimDevice *device, void (*handler)(MbimDevice *, gpointer),
                                              gpointer user_data) {
    return g_signal_connect(device, MBIM_DEVICE_SIGNAL_REMOVED, G_CALLBACK(handler), user_data);
}

gulong CGLibShims_mbim_device_connect_error(MbimDevice *device, void (*handler)(MbimDevice *, GError *, gpointer),
                                            gpointer user_data) {
    return g_signal_connect(device, MBIM_DEVICE_SIGNAL_ERROR, G_CALLBACK(handler), user_data);
}

// MARK: - Logging

static CGLibShims_LogSink log_sink;

static GLogWriterOutput log_writer(GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer data) {
    (void)data;
    const char *domain = NULL;
    const char *message = NULL;
    for (gsize i = 0; i < n_fields; i++) {
        if (g_strcmp0(fields[i].key, "GLIB_DOMAIN") == 0 && fields[i].length < 0)
            domain = fields[i].value;
        else if (g_strcmp0(fields[i].key, "MESSAGE") == 0 && fields[i].length < 0)
            message = fields[i].value;
    }
    CGLibShims_LogSink sink = __atomic_load_n(&log_sink, __ATOMIC_ACQUIRE);
    if (sink)
        sink((int)(level & G_LOG_LEVEL_MASK), domain, message ? message : "");
    return G_LOG_WRITER_HANDLED;
}

gboolean CGLibShims_install_log_writer(CGLibShims_LogSink sink) {
    static gsize once = 0;
    if (!g_once_init_enter(&once))
        return FALSE;
    __atomic_store_n(&log_sink, sink, __ATOMIC_RELEASE);
    g_log_set_writer_func(log_writer, NULL, NULL);
    g_once_init_leave(&once, 1);
    return TRUE;
}
