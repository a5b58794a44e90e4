/* The default 17-chain node, chain-set config files, and the weighted
 * max-min fair ideal shares the live table compares against. */
#include "nodesim.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define US 1000ull
#define MS 1000000ull

/* Priorities as a real node would give them: consensus-blocking work
 * Critical; EVM, DEX and key management High; AI and identity Normal;
 * bridges and oracles Low. Costs are synthetic stand-ins for the named
 * work, calibrated spin loops. Shares split the node's demand at load 1.0:
 * the heavy Normal work is where an overloaded node's pressure comes from. */
static const ns_chain_cfg defaults[] = {
    {"consensus-votes", "consensus", ACCEL_PRIORITY_CRITICAL, 20 * US, 50 * US, 0.02, 0, 0},
    {"consensus-certs", "consensus", ACCEL_PRIORITY_CRITICAL, 400 * US, 600 * US, 0.03, 0, 0},
    {"evm-c", "evm", ACCEL_PRIORITY_HIGH, 100 * US, 300 * US, 0.10, 0, 64},
    {"dex-orderbook", "dex", ACCEL_PRIORITY_HIGH, 50 * US, 200 * US, 0.12, 1 * MS, 16},
    {"kms-threshold", "kms", ACCEL_PRIORITY_HIGH, 400 * US, 600 * US, 0.04, 0, 8},
    {"evm-subnet", "evm", ACCEL_PRIORITY_HIGH, 100 * US, 300 * US, 0.06, 0, 64},
    {"ai-fhe-infer", "ai", ACCEL_PRIORITY_NORMAL, 5 * MS, 20 * MS, 0.09, 0, 1024},
    {"ai-zkml", "ai", ACCEL_PRIORITY_NORMAL, 2 * MS, 5 * MS, 0.07, 0, 256},
    {"identity-did", "identity", ACCEL_PRIORITY_NORMAL, 2 * MS, 5 * MS, 0.05, 0, 256},
    {"identity-fhe", "identity", ACCEL_PRIORITY_NORMAL, 5 * MS, 20 * MS, 0.07, 0, 1024},
    {"zk-rollup", "ai", ACCEL_PRIORITY_NORMAL, 2 * MS, 5 * MS, 0.06, 0, 256},
    {"privacy-fhe", "identity", ACCEL_PRIORITY_NORMAL, 5 * MS, 20 * MS, 0.05, 0, 1024},
    {"bridge-eth", "bridge", ACCEL_PRIORITY_LOW, 400 * US, 600 * US, 0.06, 0, 8},
    {"bridge-btc", "bridge", ACCEL_PRIORITY_LOW, 20 * US, 50 * US, 0.05, 0, 0},
    {"oracle-price", "oracle", ACCEL_PRIORITY_LOW, 20 * US, 50 * US, 0.05, 0, 0},
    {"oracle-vrf", "oracle", ACCEL_PRIORITY_LOW, 2 * MS, 5 * MS, 0.04, 0, 0},
    {"oracle-feeds", "oracle", ACCEL_PRIORITY_LOW, 20 * US, 50 * US, 0.04, 0, 0},
};

size_t ns_default_chains(ns_chain_cfg *out, size_t max)
{
    size_t n = BENCH_COUNTOF(defaults) < max ? BENCH_COUNTOF(defaults) : max;
    memcpy(out, defaults, n * sizeof *out);
    return n;
}

const char *ns_priority_name(uint32_t p)
{
    switch (p) {
    case ACCEL_PRIORITY_CRITICAL: return "critical";
    case ACCEL_PRIORITY_HIGH: return "high";
    case ACCEL_PRIORITY_NORMAL: return "normal";
    case ACCEL_PRIORITY_LOW: return "low";
    default: return "custom";
    }
}

static int parse_priority(const char *s, uint32_t *out)
{
    static const struct { const char *n; uint32_t v; } names[] = {
        {"critical", ACCEL_PRIORITY_CRITICAL}, {"high", ACCEL_PRIORITY_HIGH},
        {"normal", ACCEL_PRIORITY_NORMAL}, {"low", ACCEL_PRIORITY_LOW}};
    for (size_t i = 0; i < BENCH_COUNTOF(names); i++)
        if (strcmp(s, names[i].n) == 0) {
            *out = names[i].v;
            return 0;
        }
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || v < ACCEL_PRIORITY_MIN || v > ACCEL_PRIORITY_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* One chain per line:
 *   name role priority cost_lo_us cost_hi_us share [period_us [scratch_kb]]
 * '#' starts a comment. Shares are normalised to sum to 1. */
int ns_load_chains(const char *path, ns_chain_cfg *out, size_t max)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "accel-nodesim: cannot open %s\n", path);
        return -1;
    }
    char line[512];
    int n = 0, lineno = 0;
    double total = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            continue;
        char name[64], role[64], prio[32];
        double lo, hi, share, period = 0, scratch = 0;
        int k = sscanf(p, "%63s %63s %31s %lf %lf %lf %lf %lf", name, role, prio, &lo, &hi,
                       &share, &period, &scratch);
        ns_chain_cfg c = {0};
        if (k < 6 || strlen(name) >= NS_NAME_MAX || strlen(role) >= NS_NAME_MAX ||
            parse_priority(prio, &c.priority) != 0 || lo <= 0 || hi < lo || share <= 0 ||
            period < 0 || scratch < 0 || (size_t)n == max) {
            fprintf(stderr, "accel-nodesim: %s:%d: bad chain line (want: name role "
                            "priority cost_lo_us cost_hi_us share [period_us [scratch_kb]])\n",
                    path, lineno);
            fclose(f);
            return -1;
        }
        snprintf(c.name, sizeof c.name, "%s", name);
        snprintf(c.role, sizeof c.role, "%s", role);
        c.cost_lo_ns = (uint64_t)(lo * 1e3);
        c.cost_hi_ns = (uint64_t)(hi * 1e3);
        c.share = share;
        c.period_ns = (uint64_t)(period * 1e3);
        c.scratch_kb = (uint32_t)scratch;
        total += share;
        out[n++] = c;
    }
    fclose(f);
    if (n == 0) {
        fprintf(stderr, "accel-nodesim: %s: no chains\n", path);
        return -1;
    }
    for (int i = 0; i < n; i++)
        out[i].share /= total;
    return n;
}

double ns_mean_cost(const ns_chain_cfg *c)
{
    return ((double)c->cost_lo_ns + (double)c->cost_hi_ns) / 2;
}

double ns_demand(const ns_chain_cfg *c, double load, unsigned workers)
{
    return load * (double)workers * 1e9 * c->share;
}

/* Weighted max-min fairness by water-filling: each chain gets
 * weight * level, capped by its demand and by one worker (its ops are
 * serial); the level rises until capacity is used or every chain is
 * capped. */
void ns_ideal_shares(const ns_chain_cfg *c, size_t n, double load, unsigned workers,
                     double *ideal)
{
    double cap[NS_MAX_CHAINS];
    bool fixed[NS_MAX_CHAINS] = {0};
    double left = (double)workers * 1e9;
    for (size_t i = 0; i < n; i++) {
        cap[i] = ns_demand(&c[i], load, workers);
        if (cap[i] > 1e9)
            cap[i] = 1e9;
        ideal[i] = 0;
    }
    for (size_t round = 0; round < n; round++) {
        double wsum = 0;
        for (size_t i = 0; i < n; i++)
            if (!fixed[i])
                wsum += c[i].priority;
        if (wsum == 0 || left <= 0)
            break;
        double level = left / wsum;
        bool any = false;
        for (size_t i = 0; i < n; i++)
            if (!fixed[i] && c[i].priority * level >= cap[i]) {
                ideal[i] = cap[i];
                left -= cap[i];
                fixed[i] = any = true;
            }
        if (!any) {
            for (size_t i = 0; i < n; i++)
                if (!fixed[i])
                    ideal[i] = c[i].priority * level;
            break;
        }
    }
    double tot = 0;
    for (size_t i = 0; i < n; i++)
        tot += ideal[i];
    for (size_t i = 0; i < n; i++)
        ideal[i] = tot > 0 ? ideal[i] / tot : 0;
}
