// A stand-in for a modem library behind the trampolines (run.sh): functions whose arguments travel every way the
// two ABIs pass them — more integers than registers, more floating-point values than registers, a variadic call with
// floating-point values (x86_64 passes their count in %al), and a structure returned through memory.
#include <stdarg.h>
#include <stdio.h>

long a_nine(long a, long b, long c, long d, long e, long f, long g, long h, long i) {
    return a * 1 + b * 2 + c * 3 + d * 4 + e * 5 + f * 6 + g * 7 + h * 8 + i * 9;
}

double a_floats(double d0, double d1, double d2, double d3, double d4, double d5, double d6, double d7, double d8,
                int k) {
    return d0 + 2 * d1 + 3 * d2 + 4 * d3 + 5 * d4 + 6 * d5 + 7 * d6 + 8 * d7 + 9 * d8 + 10 * k;
}

const char *a_printf(const char *format, ...) {
    static __thread char text[128];
    va_list ap;
    va_start(ap, format);
    vsnprintf(text, sizeof text, format, ap);
    va_end(ap);
    return text;
}

struct a_big {
    long v[6];
};

struct a_big a_big(long seed) {
    struct a_big r;
    for (int i = 0; i < 6; i++)
        r.v[i] = seed * (i + 1);
    return r;
}
