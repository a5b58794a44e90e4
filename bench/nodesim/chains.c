/* Chain-set files (bench/chains/NAME.conf) and the weighted max-min shares the
 * measured service is compared against. */
#include "nodesim.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

const char *const ns_class_name[NS_NCLASS] = {"critical", "high", "normal", "low"};

/* Classes by weight band, so custom priorities still land in a column. */
int ns_class(uint32_t p)
{
    if (p >= ACCEL_PRIORITY_CRITICAL)
        return NS_CRIT;
    if (p >= ACCEL_PRIORITY_HIGH)
        return NS_HIGH;
    if (p >= ACCEL_PRIORITY_NORMAL)
        return NS_NORMAL;
    return NS_LOW;
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

/* "-", or "storage:LO-HI" / "signer:LO-HI" in ms. */
static int parse_wait(const char *s, ns_chain_cfg *c)
{
    if (strcmp(s, "-") == 0)
        return 0;
    const char *colon = strchr(s, ':');
    if (!colon)
        return -1;
    size_t n = (size_t)(colon - s);
    if (n == 7 && strncmp(s, "storage", 7) == 0)
        c->wait = NS_WAIT_STORAGE;
    else if (n == 6 && strncmp(s, "signer", 6) == 0)
        c->wait = NS_WAIT_SIGNER;
    else
        return -1;
    double lo, hi;
    char tail;
    if (sscanf(colon + 1, "%lf-%lf%c", &lo, &hi, &tail) != 2 || !(lo > 0) || !(hi >= lo) ||
        hi > 1000)
        return -1;
    c->wait_lo_ns = (uint64_t)(lo * 1e6);
    c->wait_hi_ns = (uint64_t)(hi * 1e6);
    return 0;
}

/* One chain per line:
 *   name role priority cost_lo_us cost_hi_us share period_us deadline_ms scratch_kb
 *   [body [wait]]
 * "#:" lines are the description, other '#' text a comment. Shares are
 * normalised to sum to 1. */
int ns_chains_parse(const char *text, const char *name, ns_chainset *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->source, sizeof out->source, "%s", name);
    double total = 0;
    int lineno = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[512];
        lineno++;
        if (len >= sizeof line) {
            fprintf(stderr, "accel-nodesim: %s:%d: line too long\n", name, lineno);
            return -1;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (nl ? 1 : 0);
        if (line[0] == '#' && line[1] == ':') {
            const char *d = line + 2;
            while (*d == ' ')
                d++;
            size_t used = strlen(out->desc);
            snprintf(out->desc + used, sizeof out->desc - used, "%s%s", used ? "\n" : "", d);
            continue;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = line;
        while (isspace((unsigned char)*s))
            s++;
        if (!*s)
            continue;
        char cname[64], role[64], prio[32], body[32] = "model", wait[32] = "-", extra[8];
        double lo, hi, share, period, deadline, scratch;
        int k = sscanf(s, "%63s %63s %31s %lf %lf %lf %lf %lf %lf %31s %31s %7s", cname, role,
                       prio, &lo, &hi, &share, &period, &deadline, &scratch, body, wait, extra);
        ns_chain_cfg c = {0};
        if (k < 9 || k > 11 || ns_body_parse(body, &c.body) != 0 || parse_wait(wait, &c) != 0 ||
            strlen(cname) >= NS_NAME_MAX || strlen(role) >= NS_NAME_MAX ||
            parse_priority(prio, &c.priority) != 0 || !(lo > 0) || !(hi >= lo) ||
            hi > 4e6 || !(share > 0) || !(period >= 0) || !(deadline > 0) ||
            !(scratch >= 0) || scratch > 65536 || out->n == NS_MAX_CHAINS) {
            fprintf(stderr,
                    "accel-nodesim: %s:%d: bad chain line (want 9-11 columns: name role "
                    "priority cost_lo_us cost_hi_us share period_us deadline_ms "
                    "scratch_kb [body [wait]]; body: model ed25519 secp256k1-verify "
                    "secp256k1-recover blake2b sha256; wait: - storage:LO-HI signer:LO-HI "
                    "(ms); at most %d chains)\n",
                    name, lineno, NS_MAX_CHAINS);
            return -1;
        }
        /* lengths checked above; the precision tells the compiler too */
        snprintf(c.name, sizeof c.name, "%.*s", NS_NAME_MAX - 1, cname);
        snprintf(c.role, sizeof c.role, "%.*s", NS_NAME_MAX - 1, role);
        c.cost_lo_ns = (uint64_t)(lo * 1e3);
        c.cost_hi_ns = (uint64_t)(hi * 1e3);
        c.share = share;
        c.period_ns = (uint64_t)(period * 1e3);
        c.deadline_ns = (uint64_t)(deadline * 1e6);
        c.scratch_kb = (uint32_t)scratch;
        total += share;
        out->c[out->n++] = c;
    }
    if (out->n == 0) {
        fprintf(stderr, "accel-nodesim: %s: no chains\n", name);
        return -1;
    }
    for (size_t i = 0; i < out->n; i++)
        out->c[i].share /= total;
    if (!out->desc[0])
        snprintf(out->desc, sizeof out->desc, "%zu chains from %s", out->n, name);
    return 0;
}

int ns_chains_load(const char *path, ns_chainset *out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "accel-nodesim: cannot open %s\n", path);
        return -1;
    }
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    bool big = !feof(f);
    fclose(f);
    if (big) {
        fprintf(stderr, "accel-nodesim: %s: larger than 64 KiB\n", path);
        return -1;
    }
    text[n] = '\0';
    return ns_chains_parse(text, path, out);
}

double ns_mean_cost(const ns_chain_cfg *c)
{
    return ((double)c->cost_lo_ns + (double)c->cost_hi_ns) / 2;
}

/* Weighted max-min fairness by water-filling: chain i gets
 * weight_i * level, capped by its demand and by one worker's part of the
 * capacity (a chain's ops run one at a time); the level rises until the
 * capacity is used or every chain is capped. Below capacity every chain's
 * fair rate is its demand; above it, the weights decide. */
void ns_waterfill(const ns_chain_cfg *c, size_t n, const double *demand, double capacity,
                  unsigned workers, double *out)
{
    double cap[NS_MAX_CHAINS];
    bool fixed[NS_MAX_CHAINS] = {0};
    double left = capacity, one = capacity / workers;
    for (size_t i = 0; i < n; i++) {
        cap[i] = demand[i] < one ? demand[i] : one;
        out[i] = 0;
    }
    for (size_t round = 0; round <= n; round++) {
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
                out[i] = cap[i];
                left -= cap[i];
                fixed[i] = any = true;
            }
        if (!any) {
            for (size_t i = 0; i < n; i++)
                if (!fixed[i])
                    out[i] = c[i].priority * level;
            break;
        }
    }
}
