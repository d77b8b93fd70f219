// Drives CGLibShims' trampolines (Sources/C/CGLibShims/lazy.S, lazy.c) against the libraries of fake_a.c and fake_b.c,
// one scenario per run (run.sh starts a fresh process for each, so every first call goes through a stub):
//   nine     eight threads make their first call at the same moment, nine integer arguments each (one or more on the
//            stack on both ABIs)
//   floats   nine doubles (one on the stack) and an integer
//   printf   a variadic call with doubles (x86_64 counts the vector registers in %al)
//   big      a structure returned through memory (a hidden pointer on x86_64, x8 on aarch64)
//   opened   the library opened first (CGLibShims_lazy_open): the slots point into it, the stub is not entered
//   absent   a library no file provides: the loader's reason, twice the same, and nothing else is opened
//   missing  a library that lacks a listed function: refused whole, naming the function
//   abort    a call into that library without opening it first: the process ends, naming the function and why
// Prints "ok SCENARIO" and exits 0, or names what differed and exits 1.
#include "CGLibShims_lazy.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long a_nine(long a, long b, long c, long d, long e, long f, long g, long h, long i);
double a_floats(double d0, double d1, double d2, double d3, double d4, double d5, double d6, double d7, double d8,
                int k);
const char *a_printf(const char *format, ...);
struct a_big {
    long v[6];
};
struct a_big a_big(long seed);
int b_one(void);

static int failures;
#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                       \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
            failures++;                                                                                                \
        }                                                                                                              \
    } while (0)

static long nine_expected(long base) {
    long sum = 0;
    for (long k = 1; k <= 9; k++)
        sum += (base + k) * k;
    return sum;
}

static pthread_barrier_t barrier;
static void *nine_thread(void *arg) {
    long base = (long)(size_t)arg * 100;
    pthread_barrier_wait(&barrier);
    long got = a_nine(base + 1, base + 2, base + 3, base + 4, base + 5, base + 6, base + 7, base + 8, base + 9);
    return (void *)(size_t)(got == nine_expected(base));
}

int main(int argc, char **argv) {
    const char *scenario = argc > 1 ? argv[1] : "";
    char why[384] = "";
    CHECK(CGLibShims_lazy_count() == 7, "%zu slots, fake.def lists 7", CGLibShims_lazy_count());
    CHECK(!CGLibShims_lazy_is_open(CGLibShims_library_glib), "a library is open before any call");

    if (!strcmp(scenario, "nine")) {
        enum { n = 8 };
        pthread_t threads[n];
        pthread_barrier_init(&barrier, NULL, n);
        for (long t = 0; t < n; t++)
            pthread_create(&threads[t], NULL, nine_thread, (void *)(size_t)t);
        for (int t = 0; t < n; t++) {
            void *ok;
            pthread_join(threads[t], &ok);
            CHECK(ok, "thread %d: a_nine returned the wrong sum", t);
        }
        CHECK(CGLibShims_lazy_is_open(CGLibShims_library_glib), "the first call did not open the library");
    } else if (!strcmp(scenario, "floats")) {
        double got = a_floats(0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 3);
        double want = 0.5 + 2 * 1.5 + 3 * 2.5 + 4 * 3.5 + 5 * 4.5 + 6 * 5.5 + 7 * 6.5 + 8 * 7.5 + 9 * 8.5 + 30;
        CHECK(got == want, "a_floats: %g, want %g", got, want);
    } else if (!strcmp(scenario, "printf")) {
        const char *got = a_printf("%d %.2f %s %.1f %ld", 7, 2.25, "x", -1.5, 1L << 40);
        CHECK(!strcmp(got, "7 2.25 x -1.5 1099511627776"), "a_printf: '%s'", got);
    } else if (!strcmp(scenario, "big")) {
        struct a_big got = a_big(7);
        for (int i = 0; i < 6; i++)
            CHECK(got.v[i] == 7 * (i + 1), "a_big: v[%d] = %ld", i, got.v[i]);
    } else if (!strcmp(scenario, "opened")) {
        CHECK(CGLibShims_lazy_open(CGLibShims_library_glib, why, sizeof why) == 0, "open: %s", why);
        CHECK(CGLibShims_lazy_is_open(CGLibShims_library_glib), "opened but not open");
        CHECK(a_nine(1, 2, 3, 4, 5, 6, 7, 8, 9) == nine_expected(0), "a_nine after open");
    } else if (!strcmp(scenario, "absent")) {
        CHECK(CGLibShims_lazy_open(CGLibShims_library_gio, why, sizeof why) == -1, "an absent library opened");
        CHECK(strstr(why, "libreachfake-absent.so.9") != NULL, "the reason does not name the file: '%s'", why);
        char again[384] = "";
        CHECK(CGLibShims_lazy_open(CGLibShims_library_gio, again, sizeof again) == -1 && !strcmp(why, again),
              "a second try said '%s'", again);
        CHECK(!CGLibShims_lazy_is_open(CGLibShims_library_glib), "another library was opened");
        printf("reason: %s\n", why);
    } else if (!strcmp(scenario, "missing")) {
        CHECK(CGLibShims_lazy_open(CGLibShims_library_mbim, why, sizeof why) == -1, "a library without b_missing opened");
        CHECK(strstr(why, "b_missing") && strstr(why, "libreachfakeB.so.1"), "the reason: '%s'", why);
        CHECK(!CGLibShims_lazy_is_open(CGLibShims_library_mbim), "refused but open");
        printf("reason: %s\n", why);
    } else if (!strcmp(scenario, "abort")) {
        int one = b_one();  // the process ends here
        printf("b_one returned %d\n", one);
        return 1;
    } else {
        fprintf(stderr, "usage: %s nine|floats|printf|big|opened|absent|missing|abort\n", argv[0]);
        return 64;
    }
    if (failures)
        return 1;
    printf("ok %s\n", scenario);
    return 0;
}
