#include <libmbim-glib.h>
