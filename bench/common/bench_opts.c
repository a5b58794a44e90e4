/* Table-driven flag parsing for the benchmarks: --name V, --name=V, --help. */
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double d = strtod(s, &end); /* accepts 1e6 and 0.5k */
    if (end == s || errno != 0 || d < 0)
        return -1;
    switch (*end) {
    case 'k': case 'K': d *= 1e3; end++; break;
    case 'M': d *= 1e6; end++; break;
    case 'G': d *= 1e9; end++; break;
    default: break;
    }
    if (*end != '\0' || d > 1.8e19)
        return -1;
    *out = (uint64_t)(d + 0.5);
    return 0;
}

int bench_list_parse(bench_list *l, const char *s)
{
    l->n = 0;
    const char *p = s;
    while (*p) {
        char tok[32];
        size_t k = strcspn(p, ",");
        if (k == 0 || k >= sizeof tok || l->n == BENCH_LIST_MAX)
            return -1;
        memcpy(tok, p, k);
        tok[k] = '\0';
        if (parse_u64(tok, &l->v[l->n]) != 0)
            return -1;
        l->n++;
        p += k;
        if (*p == ',')
            p++;
    }
    return l->n ? 0 : -1;
}

bool bench_list_has(const bench_list *l, uint64_t v)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == v)
            return true;
    return false;
}

static void print_value(const bench_opt *o)
{
    switch (o->type) {
    case BENCH_OPT_FLAG: break;
    case BENCH_OPT_INT: printf(" (default %d)", *(int *)o->ptr); break;
    case BENCH_OPT_U64: printf(" (default %" PRIu64 ")", *(uint64_t *)o->ptr); break;
    case BENCH_OPT_DOUBLE: printf(" (default %g)", *(double *)o->ptr); break;
    case BENCH_OPT_STR: {
        const char *v = *(const char **)o->ptr;
        if (v)
            printf(" (default %s)", v);
        break;
    }
    case BENCH_OPT_LIST: {
        const bench_list *l = o->ptr;
        printf(" (default ");
        for (size_t i = 0; i < l->n; i++)
            printf("%s%" PRIu64, i ? "," : "", l->v[i]);
        printf(")");
        break;
    }
    }
}

static void usage_print(const char *usage, const bench_opt *opts, size_t n)
{
    printf("%s\n\nOptions:\n", usage);
    for (size_t i = 0; i < n; i++) {
        const bench_opt *o = &opts[i];
        const char *arg = o->type == BENCH_OPT_FLAG ? "" :
                          o->type == BENCH_OPT_LIST ? " A,B,.." :
                          o->type == BENCH_OPT_STR ? " S" : " N";
        char head[64];
        snprintf(head, sizeof head, "--%s%s", o->name, arg);
        printf("  %-22s %s", head, o->help);
        print_value(o);
        printf("\n");
    }
    printf("  %-22s %s\n", "--help", "this text");
}

static int set_value(const bench_opt *o, const char *v)
{
    switch (o->type) {
    case BENCH_OPT_FLAG:
        *(bool *)o->ptr = true;
        return 0;
    case BENCH_OPT_INT: {
        char *end;
        errno = 0;
        long x = strtol(v, &end, 0);
        if (end == v || *end || errno || x < -2147483647L || x > 2147483647L)
            return -1;
        *(int *)o->ptr = (int)x;
        return 0;
    }
    case BENCH_OPT_U64:
        return parse_u64(v, (uint64_t *)o->ptr);
    case BENCH_OPT_DOUBLE: {
        char *end;
        errno = 0;
        double d = strtod(v, &end);
        if (end == v || *end || errno)
            return -1;
        *(double *)o->ptr = d;
        return 0;
    }
    case BENCH_OPT_STR:
        *(const char **)o->ptr = v;
        return 0;
    case BENCH_OPT_LIST:
        return bench_list_parse((bench_list *)o->ptr, v);
    }
    return -1;
}

int bench_opts_parse(int argc, char **argv, const char *usage,
                     const bench_opt *opts, size_t nopts)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage_print(usage, opts, nopts);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", argv[0], a);
            return -1;
        }
        a += 2;
        const char *eq = strchr(a, '=');
        size_t klen = eq ? (size_t)(eq - a) : strlen(a);
        const bench_opt *o = NULL;
        for (size_t k = 0; k < nopts; k++)
            if (strlen(opts[k].name) == klen && strncmp(opts[k].name, a, klen) == 0)
                o = &opts[k];
        if (!o) {
            fprintf(stderr, "%s: unknown option '--%.*s' (try --help)\n", argv[0],
                    (int)klen, a);
            return -1;
        }
        const char *v = NULL;
        if (o->type != BENCH_OPT_FLAG) {
            if (eq)
                v = eq + 1;
            else if (i + 1 < argc)
                v = argv[++i];
            else {
                fprintf(stderr, "%s: --%s needs a value\n", argv[0], o->name);
                return -1;
            }
        } else if (eq) {
            fprintf(stderr, "%s: --%s takes no value\n", argv[0], o->name);
            return -1;
        }
        if (set_value(o, v) != 0) {
            fprintf(stderr, "%s: bad value '%s' for --%s\n", argv[0], v, o->name);
            return -1;
        }
    }
    return 0;
}
