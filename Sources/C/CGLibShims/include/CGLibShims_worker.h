// Process calls for the modem worker (ReachModem's ModemWorker) that the Swift importer cannot reach: prctl(2) and
// capset(2) are variadic or not in glibc's headers. The worker is started by ReachSystem's Spawn.
#ifndef CGLIBSHIMS_WORKER_H
#define CGLIBSHIMS_WORKER_H
#include <sys/types.h>

/// Which step of `CGLibShims_worker_confine` failed.
typedef enum {
    CGLibShims_confine_ok = 0,
    CGLibShims_confine_parent_death = 1,
    CGLibShims_confine_core_limit = 2,
    CGLibShims_confine_ambient = 3,
    CGLibShims_confine_capset = 4,
    CGLibShims_confine_no_new_privs = 5,
} CGLibShims_confine_step;

/// In the worker, before it touches a modem: die with SIGKILL when the parent dies (PR_SET_PDEATHSIG), no core
/// files (RLIMIT_CORE 0: a crash loop must not fill the disk), every capability dropped (the bounding set where
/// CAP_SETPCAP allows, the ambient set, then effective/permitted/inheritable with capset(2)), SECBIT_NOROOT where
/// allowed, and PR_SET_NO_NEW_PRIVS. The user id is kept: qmi-proxy and mbim-proxy serve only the user they run as.
/// Returns 0, or an errno value with `*step` naming the call that failed.
int CGLibShims_worker_confine(CGLibShims_confine_step *step);

/// The capabilities the calling thread holds in its effective set (CAP_* bits), for tests and logs.
unsigned long long CGLibShims_worker_effective_capabilities(void);

#endif
