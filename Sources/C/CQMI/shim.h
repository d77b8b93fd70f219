#include <libqmi-glib.h>
