// C helpers the Swift importer cannot reach for GLib, libqmi-glib and libmbim-glib:
// GObject cast macros, g_signal_connect (a macro), and variadic constructors.
// Every symbol carries the CGLibShims_ prefix.
#ifndef CGLIBSHIMS_H
#define CGLIBSHIMS_H
#include <libqmi-glib.h>
#include <libmbim-glib.h>
#endif
