// The modem libraries (libqmi-glib, libmbim-glib and the GLib libraries under them) are opened with dlopen(3) the
// first time a modem is opened, not by the dynamic loader at every start. A process that never reads a modem (an
// agent whose modems run in worker processes, `reach status --no-modems`, every command on a board without a modem)
// maps none of them, and a board that has libmbim but not libqmi (OpenWrt packages them apart) still runs, its MBIM
// modems read and its QMI modems answered with the library that is missing.
//
// How: every function of those libraries that GatewayReach calls is defined in lazy.c as a jump through a slot
// (lazy-symbols.def lists them; scripts/lazy-symbols writes that list from the objects that call them). A slot first
// points at code that opens the function's library, fills every slot of that library with dlsym(3) and jumps on, so a
// call made before `CGLibShims_lazy_open` still works. The link of `reach` leaves the libraries out (Package.swift), so
// the dynamic loader does not map them at start. On an architecture without the trampolines (anything but x86_64 and
// aarch64) the libraries are linked as before and `CGLibShims_lazy_open` has nothing to do.
#ifndef CGLIBSHIMS_LAZY_H
#define CGLIBSHIMS_LAZY_H
#include <stddef.h>

/// The libraries the slots are filled from.
typedef enum {
    CGLibShims_library_glib = 0,
    CGLibShims_library_gobject = 1,
    CGLibShims_library_gio = 2,
    CGLibShims_library_qmi = 3,
    CGLibShims_library_mbim = 4,
} CGLibShims_library;

/// The number of `CGLibShims_library` values.
#define CGLibShims_library_count 5

/// Opens `library` (and, through its own dependencies, the GLib libraries it needs) unless it is open, and fills
/// its slots. Returns 0 when every slot of it is filled; otherwise -1 with the reason in `message` (the dynamic
/// loader's words, or the function the installed library lacks). A failure is remembered: later calls fail the same
/// way without trying again. Thread-safe.
int CGLibShims_lazy_open(CGLibShims_library library, char *message, size_t size);

/// Whether `library` is open and its slots filled (no attempt is made).
int CGLibShims_lazy_is_open(CGLibShims_library library);

/// How many functions are reached through slots (0 where there are no trampolines).
size_t CGLibShims_lazy_count(void);

#endif
