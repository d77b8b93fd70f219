// first-calls: which functions of a program run, in the order they first run. A development tool of
// scripts/order-functions (x86_64 Linux), not shipped.
//
//   first-calls OFFSETS OUT -- PROGRAM [ARG...]
//
// OFFSETS holds one hexadecimal address per line: function starts as the unstripped PROGRAM's symbol table gives them.
// PROGRAM is started under ptrace(2); at its exec every listed address gets a one-shot breakpoint (int3). When a
// thread reaches one, the address is written to OUT (in the same form), the original byte is put back and the thread
// goes on where it stopped, so each function costs one trap, the first time it runs, and the program otherwise runs
// at full speed. Threads and processes the program makes are followed; a child that executes the same program again
// (reach's modem worker) gets breakpoints of its own, one that executes another program is let go. Signals reach the
// program as they would without the tracer. Exits with the program's exit status.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

struct point {
    uint64_t offset;
    unsigned char original;
    unsigned char hit;
};

static struct point *points;
static size_t count;

static int by_offset(const void *a, const void *b) {
    uint64_t x = ((const struct point *)a)->offset, y = ((const struct point *)b)->offset;
    return x < y ? -1 : x > y;
}

static struct point *find(uint64_t offset) {
    struct point key = {.offset = offset};
    return bsearch(&key, points, count, sizeof *points, by_offset);
}

static void die(const char *what) {
    fprintf(stderr, "first-calls: %s: %s\n", what, strerror(errno));
    exit(70);
}

// The load address of `pid`'s main program: the start of its mapping at file offset 0.
static uint64_t load_bias(pid_t pid) {
    char path[64], exe[4096], line[4600];
    snprintf(path, sizeof path, "/proc/%d/exe", pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (n < 0)
        die("readlink exe");
    exe[n] = 0;
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *maps = fopen(path, "r");
    if (!maps)
        die("open maps");
    uint64_t bias = 0;
    int found = 0;
    while (!found && fgets(line, sizeof line, maps)) {
        unsigned long long start, offset;
        char file[4096] = "";
        if (sscanf(line, "%llx-%*x %*s %llx %*s %*s %4095s", &start, &offset, file) >= 2 && offset == 0 &&
            strcmp(file, exe) == 0) {
            bias = start;
            found = 1;
        }
    }
    fclose(maps);
    if (!found) {
        fprintf(stderr, "first-calls: no mapping of %s in process %d\n", exe, pid);
        exit(70);
    }
    return bias;
}

// The load address of each traced thread's program (threads of one process share theirs); looked up once per thread.
static struct {
    pid_t pid;
    uint64_t bias;
} biases[4096];
static size_t bias_count;

static uint64_t bias_of(pid_t pid) {
    for (size_t i = 0; i < bias_count; i++)
        if (biases[i].pid == pid)
            return biases[i].bias;
    uint64_t bias = load_bias(pid);
    if (bias_count < sizeof biases / sizeof biases[0])
        biases[bias_count++].pid = pid, biases[bias_count - 1].bias = bias;
    return bias;
}

static void forget(pid_t pid) {
    for (size_t i = 0; i < bias_count; i++)
        if (biases[i].pid == pid)
            biases[i] = biases[--bias_count];
}

// Writes an int3 at every listed function of process `pid`'s image of the program (keeping the original bytes, which
// are the same in every image). Returns how many were written.
static size_t arm(pid_t pid, int first) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", pid);
    int mem = open(path, O_RDWR);
    if (mem < 0)
        die("open mem");
    uint64_t bias = bias_of(pid);
    size_t armed = 0;
    for (size_t i = 0; i < count; i++) {
        unsigned char trap = 0xCC, byte;
        if (pread(mem, &byte, 1, (off_t)(bias + points[i].offset)) != 1)
            continue;
        if (first)
            points[i].original = byte;
        if (pwrite(mem, &trap, 1, (off_t)(bias + points[i].offset)) == 1)
            armed++;
    }
    close(mem);
    return armed;
}

static int same_program(pid_t pid, const char *exe) {
    char path[64], target[4096];
    snprintf(path, sizeof path, "/proc/%d/exe", pid);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0)
        return 0;
    target[n] = 0;
    return strcmp(target, exe) == 0;
}

int main(int argc, char **argv) {
    if (argc < 5 || strcmp(argv[3], "--") != 0) {
        fprintf(stderr, "usage: first-calls OFFSETS OUT -- PROGRAM [ARG...]\n");
        return 64;
    }
    FILE *in = fopen(argv[1], "r");
    if (!in)
        die(argv[1]);
    size_t capacity = 1 << 16;
    points = calloc(capacity, sizeof *points);
    char line[128];
    while (fgets(line, sizeof line, in)) {
        char *end;
        unsigned long long v = strtoull(line, &end, 16);
        if (end == line)
            continue;
        if (count == capacity)
            points = realloc(points, (capacity *= 2) * sizeof *points);
        points[count++] = (struct point){.offset = v};
    }
    fclose(in);
    qsort(points, count, sizeof *points, by_offset);
    size_t unique = 0;  // one breakpoint per address: folded functions share theirs
    for (size_t i = 0; i < count; i++)
        if (unique == 0 || points[unique - 1].offset != points[i].offset)
            points[unique++] = points[i];
    count = unique;
    FILE *out = fopen(argv[2], "w");
    if (!out)
        die(argv[2]);

    pid_t root = fork();
    if (root < 0)
        die("fork");
    if (root == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        execv(argv[4], argv + 4);
        _exit(127);
    }
    int status;
    if (waitpid(root, &status, 0) < 0 || !WIFSTOPPED(status))
        die("the program did not start");
    ptrace(PTRACE_SETOPTIONS, root, 0,
           PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL);
    char exe[4096], exe_link[64];
    snprintf(exe_link, sizeof exe_link, "/proc/%d/exe", root);
    ssize_t exe_length = readlink(exe_link, exe, sizeof exe - 1);
    if (exe_length < 0)
        die("readlink exe");
    exe[exe_length] = 0;
    size_t armed = arm(root, 1);
    fprintf(stderr, "first-calls: %zu breakpoints in %s (pid %d)\n", armed, exe, root);

    int exit_status = 0;
    ptrace(PTRACE_CONT, root, 0, 0);
    for (;;) {
        pid_t pid = waitpid(-1, &status, __WALL);
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            break;  // ECHILD: nothing left
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            forget(pid);
            if (pid == root)
                exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            continue;
        }
        if (!WIFSTOPPED(status))
            continue;
        int sig = WSTOPSIG(status), event = status >> 16;
        if (event == PTRACE_EVENT_EXEC) {
            forget(pid);
            if (pid != root && same_program(pid, exe)) {
                // The program again (reach's modem worker): a fresh image, armed like the first.
                arm(pid, 0);
                ptrace(PTRACE_CONT, pid, 0, 0);
            } else if (pid != root) {
                ptrace(PTRACE_DETACH, pid, 0, 0);  // another program (a hook, a proxy): nothing of ours in it
            } else {
                ptrace(PTRACE_CONT, pid, 0, 0);
            }
            continue;
        }
        if (event != 0 || sig == SIGSTOP) {
            // A new thread or child announced, or a new tracee's first stop.
            ptrace(PTRACE_CONT, pid, 0, 0);
            continue;
        }
        if (sig == SIGTRAP) {
            struct user_regs_struct regs;
            if (ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0) {
                struct point *p = find(regs.rip - 1 - bias_of(pid));
                if (p) {
                    // Put the byte back (threads share it; a forked child has its own copy) and run the function.
                    char mem_path[64];
                    snprintf(mem_path, sizeof mem_path, "/proc/%d/mem", pid);
                    int m = open(mem_path, O_RDWR);
                    if (m >= 0) {
                        if (pwrite(m, &p->original, 1, (off_t)(regs.rip - 1)) != 1)
                            fprintf(stderr, "first-calls: cannot restore %#llx in %d\n", regs.rip - 1, pid);
                        close(m);
                    }
                    regs.rip -= 1;
                    ptrace(PTRACE_SETREGS, pid, 0, &regs);
                    if (!p->hit) {
                        p->hit = 1;
                        fprintf(out, "%llx\n", (unsigned long long)p->offset);
                    }
                    ptrace(PTRACE_CONT, pid, 0, 0);
                    continue;
                }
            }
        }
        ptrace(PTRACE_CONT, pid, 0, sig);  // the program's own signal
    }
    fclose(out);
    return exit_status;
}
