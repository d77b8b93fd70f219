// The loader half of the modem libraries' trampolines (lazy.S; see CGLibShims_lazy.h): which library each slot is
// filled from, dlopen(3) and dlsym(3) under one lock, and what a trampoline does when its library cannot be opened.
#define _GNU_SOURCE
#include "CGLibShims_lazy.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CGLIBSHIMS_LAZY_DEF
#define CGLIBSHIMS_LAZY_DEF "lazy-symbols.def"
#endif

#if defined(__x86_64__) || defined(__aarch64__)

// The sonames the libraries are opened by, in CGLibShims_library's order: the ones Debian and OpenWrt install, the
// ones the shipped binary was linked against (scripts/lazy-symbols checks them against the installed libraries when
// it writes the list). Tests/Trampolines compiles this file with libraries of its own in their place.
#ifndef CGLIBSHIMS_LAZY_SONAMES
#define CGLIBSHIMS_LAZY_SONAMES \
    "libglib-2.0.so.0", "libgobject-2.0.so.0", "libgio-2.0.so.0", "libqmi-glib.so.5", "libmbim-glib.so.4"
#endif
static const char *const sonames[CGLibShims_library_count] = {CGLIBSHIMS_LAZY_SONAMES};

#define LAZY(library, function) extern void *CGLibShims_slot_##function __attribute__((visibility("hidden")));
#include CGLIBSHIMS_LAZY_DEF
#undef LAZY

static const struct lazy_entry {
    CGLibShims_library library;
    const char *name;
    void **slot;
} entries[] = {
#define LAZY(library, function) {CGLibShims_library_##library, #function, &CGLibShims_slot_##function},
#include CGLIBSHIMS_LAZY_DEF
#undef LAZY
};
enum { entry_count = sizeof entries / sizeof entries[0] };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
// Per library: 0 not tried yet, 1 open with every slot filled, -1 failed (the reason in `failure`).
static int state[CGLibShims_library_count];
static char failure[CGLibShims_library_count][320];

// With `lock` held: opens `library` and fills its slots, or records why not. No slot is written unless all of the
// library's functions were found, so a library too old for us leaves every trampoline of it on its stub.
static void open_locked(CGLibShims_library library) {
    const char *soname = sonames[library];
    void *handle = dlopen(soname, RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
        const char *why = dlerror();
        snprintf(failure[library], sizeof failure[library], "%s", why ? why : soname);
        __atomic_store_n(&state[library], -1, __ATOMIC_RELEASE);
        return;
    }
    static void *found[entry_count];
    for (size_t i = 0; i < entry_count; i++) {
        if (entries[i].library != library)
            continue;
        (void)dlerror();
        found[i] = dlsym(handle, entries[i].name);
        if (!found[i]) {
            snprintf(failure[library], sizeof failure[library],
                     "%s has no function %s (it is older than the version reach was built against)", soname,
                     entries[i].name);
            __atomic_store_n(&state[library], -1, __ATOMIC_RELEASE);
            return;  // the handle stays open: GLib's libraries cannot be unloaded, and a second try would fail alike
        }
    }
    for (size_t i = 0; i < entry_count; i++)
        if (entries[i].library == library)
            __atomic_store_n(entries[i].slot, found[i], __ATOMIC_RELEASE);
    __atomic_store_n(&state[library], 1, __ATOMIC_RELEASE);
}

int CGLibShims_lazy_open(CGLibShims_library library, char *message, size_t size) {
    if ((unsigned)library >= CGLibShims_library_count) {
        if (message && size)
            snprintf(message, size, "no library %d", (int)library);
        return -1;
    }
    if (__atomic_load_n(&state[library], __ATOMIC_ACQUIRE) == 1)
        return 0;
    pthread_mutex_lock(&lock);
    if (state[library] == 0)
        open_locked(library);
    int ok = state[library] == 1;
    if (!ok && message && size)
        snprintf(message, size, "%s", failure[library]);
    pthread_mutex_unlock(&lock);
    return ok ? 0 : -1;
}

int CGLibShims_lazy_is_open(CGLibShims_library library) {
    return (unsigned)library < CGLibShims_library_count && __atomic_load_n(&state[library], __ATOMIC_ACQUIRE) == 1;
}

size_t CGLibShims_lazy_count(void) { return entry_count; }

// Called by CGLibShims_lazy_enter (lazy.S) with the slot of the function that was called before its library was
// opened: opens it, or ends the process naming the function and the reason. Callers that can do without a library
// open it first with CGLibShims_lazy_open and handle the failure; reaching this with a library that cannot be opened
// is a call that had no way to report it.
__attribute__((visibility("hidden"), used)) void CGLibShims_lazy_resolve(void **slot) {
    const struct lazy_entry *entry = NULL;
    for (size_t i = 0; i < entry_count && !entry; i++)
        if (entries[i].slot == slot)
            entry = &entries[i];
    char why[320] = "unknown slot";
    if (entry && CGLibShims_lazy_open(entry->library, why, sizeof why) == 0)
        return;
    char line[512];
    int n = snprintf(line, sizeof line, "reach: cannot call %s: %s\n", entry ? entry->name : "a modem library function",
                     why);
    if (n > 0)
        (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    abort();
}

#else

// No trampolines on this architecture: the libraries are linked and loaded at start as before.
int CGLibShims_lazy_open(CGLibShims_library library, char *message, size_t size) {
    (void)library, (void)message, (void)size;
    return 0;
}
int CGLibShims_lazy_is_open(CGLibShims_library library) { return (unsigned)library < CGLibShims_library_count; }
size_t CGLibShims_lazy_count(void) { return 0; }

#endif
