/* The machine-readable result line, targets, and the machine banner. */
#include "bench.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/utsname.h>

static FILE *json_file;
static bool result_stdout = true;

void bench_result_stdout(bool on)
{
    result_stdout = on;
}

int bench_result_json_open(const char *path)
{
    bench_result_json_close();
    json_file = fopen(path, "w");
    return json_file ? 0 : -1;
}

void bench_result_json_close(void)
{
    if (json_file)
        fclose(json_file);
    json_file = NULL;
}

static void put(bench_result *r, const char *fmt, ...)
{
    if (r->overflow)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->buf + r->len, sizeof r->buf - r->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof r->buf - r->len)
        r->overflow = true;
    else
        r->len += (size_t)n;
}

static void put_string(bench_result *r, const char *s)
{
    put(r, "\"");
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            put(r, "\\%c", c);
        else if (c < 0x20)
            put(r, "\\u%04x", c);
        else
            put(r, "%c", c);
    }
    put(r, "\"");
}

static void key(bench_result *r, const char *k)
{
    put(r, ",");
    put_string(r, k);
    put(r, ":");
}

void bench_result_begin(bench_result *r, const char *bench, const char *name)
{
    r->len = 0;
    r->overflow = false;
    r->buf[0] = '\0';
    put(r, "{\"bench\":");
    put_string(r, bench);
    key(r, "name");
    put_string(r, name);
}

void bench_result_str(bench_result *r, const char *k, const char *v)
{
    key(r, k);
    put_string(r, v);
}

void bench_result_u64(bench_result *r, const char *k, uint64_t v)
{
    key(r, k);
    put(r, "%" PRIu64, v);
}

void bench_result_i64(bench_result *r, const char *k, int64_t v)
{
    key(r, k);
    put(r, "%" PRId64, v);
}

void bench_result_f64(bench_result *r, const char *k, double v)
{
    key(r, k);
    if (isfinite(v))
        put(r, "%.6g", v);
    else
        put(r, "null");
}

void bench_result_bool(bench_result *r, const char *k, bool v)
{
    key(r, k);
    put(r, v ? "true" : "false");
}

void bench_result_emit(bench_result *r)
{
    put(r, "}");
    if (r->overflow) {
        fprintf(stderr, "bench: result line too long, dropped\n");
        return;
    }
    if (result_stdout) {
        printf("RESULT %s\n", r->buf);
        fflush(stdout);
    }
    if (json_file) {
        fprintf(json_file, "%s\n", r->buf);
        fflush(json_file);
    }
}

bool bench_target(const char *bench, const char *what, double measured,
                  const char *op, double goal, const char *unit)
{
    bool ge = strcmp(op, ">=") == 0;
    bool met = ge ? measured >= goal : measured <= goal;
    printf("TARGET  %-58s %10.4g %-8s (target %s %g)  %s\n", what, measured, unit, op,
           goal, met ? "MET" : "MISSED");
    bench_result r;
    bench_result_begin(&r, bench, "target");
    bench_result_str(&r, "what", what);
    bench_result_f64(&r, "measured", measured);
    bench_result_str(&r, "op", op);
    bench_result_f64(&r, "goal", goal);
    bench_result_str(&r, "unit", unit);
    bench_result_bool(&r, "met", met);
    bench_result_emit(&r);
    return met;
}

void bench_machine(char *buf, size_t len)
{
    char model[128] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *c = strchr(line, ':');
                if (c) {
                    c++;
                    while (*c == ' ')
                        c++;
                    c[strcspn(c, "\n")] = '\0';
                    snprintf(model, sizeof model, "%s", c);
                }
                break;
            }
        }
        fclose(f);
    }
    struct utsname u;
    if (uname(&u) != 0)
        snprintf(u.release, sizeof u.release, "?");
    snprintf(buf, len, "%u CPUs, %s, Linux %s", bench_ncpus(), model, u.release);
}

void bench_banner(const char *bench, uint64_t seed)
{
    char m[320];
    bench_machine(m, sizeof m);
    double ipu = bench_work_iters_per_us();
    printf("# %s: machine: %s\n", bench, m);
    printf("# %s: seed %" PRIu64 ", synthetic work calibrated at %.0f spin iterations/us\n",
           bench, seed, ipu);
    bench_result r;
    bench_result_begin(&r, bench, "machine");
    bench_result_str(&r, "machine", m);
    bench_result_u64(&r, "ncpus", bench_ncpus());
    bench_result_u64(&r, "seed", seed);
    bench_result_f64(&r, "spin_iters_per_us", ipu);
    bench_result_emit(&r);
}
