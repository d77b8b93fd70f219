#define _GNU_SOURCE
#include "CGLibShims_worker.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

int CGLibShims_worker_confine(CGLibShims_confine_step *step) {
    *step = CGLibShims_confine_ok;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
        *step = CGLibShims_confine_parent_death;
        return errno;
    }
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) {
        *step = CGLibShims_confine_core_limit;
        return errno;
    }
    // The bounding set and the securebits need CAP_SETPCAP (root has it; the packaged unit's user has not, and
    // then no_new_privs below already stops an exec from gaining anything): best effort.
    for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
        (void)prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    (void)prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED, 0, 0, 0);
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
        *step = CGLibShims_confine_ambient;
        return errno;
    }
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {{0, 0, 0}};
    if (syscall(SYS_capset, &header, data) != 0) {
        *step = CGLibShims_confine_capset;
        return errno;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        *step = CGLibShims_confine_no_new_privs;
        return errno;
    }
    return 0;
}

unsigned long long CGLibShims_worker_effective_capabilities(void) {
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {{0, 0, 0}};
    if (syscall(SYS_capget, &header, data) != 0)
        return ~0ULL;
    return (unsigned long long)data[0].effective | ((unsigned long long)data[1].effective << 32);
}
