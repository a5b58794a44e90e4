/*
 * The op bodies: real signature checks and hashes where a library every
 * node links does the work, calibrated spin loops ("modelled") where no
 * Debian library does (Groth16-class zk, FHE, BLS, VRF).
 *
 * Before the run (not timed) each real body gets NS_ITEMS inputs generated
 * from the seed: keys, messages, signatures, and the answer each check must
 * give. One item in NS_BAD_EVERY is corrupted on purpose (a flipped
 * signature or message byte), so the expected answer is sometimes "reject":
 * a body that always says "valid", or never runs, cannot pass. Every call's
 * result is compared with the expected one; a mismatch is counted and fails
 * the run (main.c).
 *
 * An op of a real body is a batch of `calls` such calls (a certificate of
 * votes, a block's senders, a Merkle path), sized at arrival from the op's
 * assumed cost and the call's cost measured here at start-up; the op is
 * credited with calls x the measured cost, so work done counts what ran.
 */
#include "nodesim.h"

#include <stdlib.h>
#include <string.h>

#if NS_HAVE_SODIUM
#include <sodium.h>
#endif
#if NS_HAVE_SECP256K1
#include <secp256k1.h>
#include <secp256k1_recovery.h>
#endif

#define NS_ITEMS 64
#define NS_BAD_EVERY 16 /* item i is corrupted when i % NS_BAD_EVERY == NS_BAD_EVERY - 1 */
#define NS_HASH_BYTES 1024 /* a block of state / a receipt */

static const struct {
    const char *key, *label;
    bool needs_sodium, needs_secp;
} body_info[NS_NBODY] = {
    [NS_BODY_MODEL] = {"model", "modelled (spin loop)", false, false},
    [NS_BODY_ED25519] = {"ed25519", "ed25519 verify (libsodium)", true, false},
    [NS_BODY_SECP_VERIFY] = {"secp256k1-verify", "secp256k1 ECDSA verify (libsecp256k1)",
                             false, true},
    [NS_BODY_SECP_RECOVER] = {"secp256k1-recover",
                              "secp256k1 ECDSA recover (libsecp256k1)", false, true},
    [NS_BODY_BLAKE2B] = {"blake2b", "BLAKE2b-256 of 1 KiB (libsodium)", true, false},
    [NS_BODY_SHA256] = {"sha256", "SHA-256 of 1 KiB (libsodium)", true, false},
};

static bool forced_model;
static uint64_t unit_ns[NS_NBODY];
static _Atomic uint64_t checked, wrong;

typedef struct item {
    uint8_t msg[NS_HASH_BYTES];
    uint8_t digest[32]; /* expected hash of msg (hash bodies); msg32 (ECDSA) */
    uint8_t sig[65];    /* ed25519: 64; ECDSA: 64 compact + recovery id */
    uint8_t pub[65];    /* ed25519: 32; secp256k1: 33 compressed */
    bool valid;         /* what the check must answer */
} item;

static item *items[NS_NBODY];

#if NS_HAVE_SECP256K1
static secp256k1_context *secp;
#endif

int ns_body_parse(const char *s, enum ns_body *out)
{
    for (int b = 0; b < NS_NBODY; b++)
        if (strcmp(s, body_info[b].key) == 0) {
            *out = (enum ns_body)b;
            return 0;
        }
    return -1;
}

const char *ns_body_key(enum ns_body b)
{
    return body_info[b].key;
}

bool ns_body_available(enum ns_body b)
{
    if (b == NS_BODY_MODEL)
        return true;
    if (forced_model)
        return false;
    if (body_info[b].needs_sodium && !NS_HAVE_SODIUM)
        return false;
    if (body_info[b].needs_secp && !NS_HAVE_SECP256K1)
        return false;
    return true;
}

uint64_t ns_body_unit_ns(enum ns_body b)
{
    return unit_ns[b];
}

uint64_t ns_body_checked(void)
{
    return atomic_load_explicit(&checked, memory_order_relaxed);
}

uint64_t ns_body_wrong(void)
{
    return atomic_load_explicit(&wrong, memory_order_relaxed);
}

static void fill(bench_rng *rng, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)bench_rng_next(rng);
}

/* One call of body b on item i: true if its answer is the expected one. */
static bool call(enum ns_body b, const item *it)
{
    switch (b) {
#if NS_HAVE_SODIUM
    case NS_BODY_ED25519: {
        bool ok = crypto_sign_verify_detached(it->sig, it->msg, 64, it->pub) == 0;
        return ok == it->valid;
    }
    case NS_BODY_BLAKE2B: {
        uint8_t d[32];
        crypto_generichash(d, sizeof d, it->msg, sizeof it->msg, NULL, 0);
        return (memcmp(d, it->digest, 32) == 0) == it->valid;
    }
    case NS_BODY_SHA256: {
        uint8_t d[32];
        crypto_hash_sha256(d, it->msg, sizeof it->msg);
        return (memcmp(d, it->digest, 32) == 0) == it->valid;
    }
#endif
#if NS_HAVE_SECP256K1
    case NS_BODY_SECP_VERIFY: {
        secp256k1_ecdsa_signature sig;
        secp256k1_pubkey pk;
        if (!secp256k1_ecdsa_signature_parse_compact(secp, &sig, it->sig) ||
            !secp256k1_ec_pubkey_parse(secp, &pk, it->pub, 33))
            return false; /* generated inputs always parse */
        bool ok = secp256k1_ecdsa_verify(secp, &sig, it->digest, &pk) == 1;
        return ok == it->valid;
    }
    case NS_BODY_SECP_RECOVER: {
        /* An Ethereum-style sender check: recover the key from the
         * signature and compare it with the sender's. */
        secp256k1_ecdsa_recoverable_signature sig;
        secp256k1_pubkey pk;
        uint8_t ser[33];
        size_t len = sizeof ser;
        if (!secp256k1_ecdsa_recoverable_signature_parse_compact(secp, &sig, it->sig,
                                                                 it->sig[64]))
            return false;
        bool ok = secp256k1_ecdsa_recover(secp, &pk, &sig, it->digest) == 1 &&
                  secp256k1_ec_pubkey_serialize(secp, ser, &len, &pk,
                                                SECP256K1_EC_COMPRESSED) == 1 &&
                  memcmp(ser, it->pub, 33) == 0;
        return ok == it->valid;
    }
#endif
    default:
        (void)it;
        return false; /* not built: ns_body_available said so */
    }
}

bool ns_body_run(enum ns_body b, uint32_t first, uint32_t calls)
{
    uint64_t bad = 0;
    for (uint32_t k = 0; k < calls; k++)
        bad += !call(b, &items[b][(first + k) % NS_ITEMS]);
    atomic_fetch_add_explicit(&checked, calls, memory_order_relaxed);
    if (bad)
        atomic_fetch_add_explicit(&wrong, bad, memory_order_relaxed);
    return bad == 0;
}

/* Generates body b's items; the signer side runs here, before the run. */
static int gen(enum ns_body b, uint64_t seed)
{
    items[b] = calloc(NS_ITEMS, sizeof(item));
    if (!items[b])
        return -1;
    bench_rng rng;
    bench_rng_seed(&rng, seed, 77000u + (uint64_t)b);
    for (unsigned i = 0; i < NS_ITEMS; i++) {
        item *it = &items[b][i];
        bool bad = i % NS_BAD_EVERY == NS_BAD_EVERY - 1;
        fill(&rng, it->msg, sizeof it->msg);
        it->valid = !bad;
        switch (b) {
#if NS_HAVE_SODIUM
        case NS_BODY_ED25519: {
            uint8_t kseed[crypto_sign_SEEDBYTES], sk[crypto_sign_SECRETKEYBYTES];
            fill(&rng, kseed, sizeof kseed);
            crypto_sign_seed_keypair(it->pub, sk, kseed);
            crypto_sign_detached(it->sig, NULL, it->msg, 64, sk);
            if (bad)
                it->sig[5] ^= 0x01;
            break;
        }
        case NS_BODY_BLAKE2B:
            crypto_generichash(it->digest, 32, it->msg, sizeof it->msg, NULL, 0);
            if (bad)
                it->digest[3] ^= 0x80;
            break;
        case NS_BODY_SHA256:
            crypto_hash_sha256(it->digest, it->msg, sizeof it->msg);
            if (bad)
                it->digest[3] ^= 0x80;
            break;
#endif
#if NS_HAVE_SECP256K1
        case NS_BODY_SECP_VERIFY:
        case NS_BODY_SECP_RECOVER: {
            uint8_t sk[32];
            do
                fill(&rng, sk, sizeof sk);
            while (!secp256k1_ec_seckey_verify(secp, sk));
            secp256k1_pubkey pk;
            size_t len = 33;
            secp256k1_ecdsa_recoverable_signature rs;
            int recid = 0;
            /* msg32: the SHA-256 of the message (a tx hash) */
            fill(&rng, it->digest, 32);
            if (!secp256k1_ec_pubkey_create(secp, &pk, sk) ||
                !secp256k1_ec_pubkey_serialize(secp, it->pub, &len, &pk,
                                               SECP256K1_EC_COMPRESSED) ||
                !secp256k1_ecdsa_sign_recoverable(secp, &rs, it->digest, sk, NULL, NULL) ||
                !secp256k1_ecdsa_recoverable_signature_serialize_compact(secp, it->sig, &recid,
                                                                         &rs))
                return -1;
            it->sig[64] = (uint8_t)recid;
            if (b == NS_BODY_SECP_VERIFY) {
                secp256k1_ecdsa_signature s;
                secp256k1_ecdsa_recoverable_signature_convert(secp, &s, &rs);
                secp256k1_ecdsa_signature_serialize_compact(secp, it->sig, &s);
            }
            if (bad)
                it->digest[7] ^= 0x01; /* the signed tx was altered */
            break;
        }
#endif
        default:
            break;
        }
    }
    /* The checker must agree with the generator before anything is timed. */
    for (unsigned i = 0; i < NS_ITEMS; i++)
        if (!call(b, &items[b][i])) {
            fprintf(stderr, "accel-nodesim: %s: self-check of item %u failed\n",
                    body_info[b].key, i);
            return -1;
        }
    return 0;
}

/* The cost of one call on this machine: the fastest of several passes
 * over the items (the one least disturbed by other processes), per call. */
static uint64_t measure(enum ns_body b)
{
    uint64_t best = UINT64_MAX;
    for (int pass = 0; pass < 7; pass++) {
        uint64_t t0 = bench_now_ns();
        for (unsigned i = 0; i < NS_ITEMS; i++) {
            bool ok = call(b, &items[b][i]);
            BENCH_KEEP(ok);
        }
        uint64_t dt = bench_now_ns() - t0;
        if (dt < best)
            best = dt;
    }
    uint64_t u = best / NS_ITEMS;
    return u ? u : 1;
}

int ns_bodies_init(const ns_chainset *cs, uint64_t seed, bool model_only, bool sabotage)
{
    forced_model = model_only;
#if NS_HAVE_SODIUM
    if (!model_only && sodium_init() < 0) {
        fprintf(stderr, "accel-nodesim: sodium_init failed\n");
        return -1;
    }
#endif
#if NS_HAVE_SECP256K1
    if (!model_only && !secp) {
        secp = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
        if (!secp)
            return -1;
    }
#endif
    for (int b = 1; b < NS_NBODY; b++) {
        bool used = false;
        for (size_t i = 0; i < cs->n; i++)
            used |= (int)cs->c[i].body == b;
        if (!used || !ns_body_available((enum ns_body)b))
            continue;
        if (gen((enum ns_body)b, seed) != 0)
            return -1;
        unit_ns[b] = measure((enum ns_body)b);
        if (sabotage) /* one expected answer made wrong: the run must fail */
            items[b][0].valid = !items[b][0].valid;
    }
    return 0;
}

void ns_bodies_print(const ns_chainset *cs)
{
    printf("Op bodies (measured here, one call, before the run; the chains file's cost is "
           "what it assumed per op):\n");
    bool any_model = false, missing = false;
    for (int b = 1; b < NS_NBODY; b++) {
        char chains[512] = "";
        for (size_t i = 0; i < cs->n; i++) {
            const ns_chain_cfg *c = &cs->c[i];
            if ((int)c->body != b)
                continue;
            size_t u = strlen(chains);
            if (!ns_body_available((enum ns_body)b)) {
                snprintf(chains + u, sizeof chains - u, " %s", c->name);
                continue;
            }
            unsigned n0 = ns_body_calls((enum ns_body)b, c->cost_lo_ns),
                     n1 = ns_body_calls((enum ns_body)b, c->cost_hi_ns);
            char calls[32];
            if (n0 == n1)
                snprintf(calls, sizeof calls, "%u call%s", n0, n0 > 1 ? "s" : "");
            else
                snprintf(calls, sizeof calls, "%u-%u calls", n0, n1);
            snprintf(chains + u, sizeof chains - u,
                     "\n      %-16s assumed %4.0f-%-4.0f us per op: %s", c->name,
                     (double)c->cost_lo_ns / 1e3, (double)c->cost_hi_ns / 1e3, calls);
        }
        if (!chains[0])
            continue;
        if (!ns_body_available((enum ns_body)b)) {
            printf("  %s: not built in%s; modelled instead:%s\n", body_info[b].label,
                   forced_model ? " or --modelled" : "", chains);
            missing = true;
            continue;
        }
        printf("  %s: %.1f us per call measured%s\n", body_info[b].label,
               (double)unit_ns[b] / 1e3, chains);
    }
    for (size_t i = 0; i < cs->n; i++)
        any_model |= cs->c[i].body == NS_BODY_MODEL;
    if (any_model) {
        printf("  modelled (calibrated spin loop of the assumed cost):\n     ");
        for (size_t i = 0; i < cs->n; i++)
            if (cs->c[i].body == NS_BODY_MODEL)
                printf(" %s", cs->c[i].name);
        printf("\n");
    }
    if (missing && !forced_model)
        printf("  (built without %s%s%s: scripts/deps.sh installs libsodium-dev and "
               "libsecp256k1-dev)\n",
               NS_HAVE_SODIUM ? "" : "libsodium",
               !NS_HAVE_SODIUM && !NS_HAVE_SECP256K1 ? " and " : "",
               NS_HAVE_SECP256K1 ? "" : "libsecp256k1");
}

uint32_t ns_body_calls(enum ns_body b, uint64_t cost_ns)
{
    if (!unit_ns[b])
        return 0;
    uint64_t n = (cost_ns + unit_ns[b] / 2) / unit_ns[b];
    return n ? (uint32_t)n : 1;
}

double ns_op_mean_cost(const ns_chain_cfg *c)
{
    if (c->body == NS_BODY_MODEL || !ns_body_available(c->body) || !unit_ns[c->body])
        return ns_mean_cost(c);
    /* the mean of calls(cost) x unit over the uniform cost range */
    double sum = 0;
    const int n = 256;
    for (int k = 0; k < n; k++) {
        uint64_t cost = c->cost_lo_ns + (uint64_t)((double)(c->cost_hi_ns - c->cost_lo_ns) *
                                                   (k + 0.5) / n);
        sum += (double)ns_body_calls(c->body, cost);
    }
    return sum / n * (double)unit_ns[c->body];
}

void ns_bodies_free(void)
{
    for (int b = 0; b < NS_NBODY; b++) {
        free(items[b]);
        items[b] = NULL;
    }
#if NS_HAVE_SECP256K1
    if (secp)
        secp256k1_context_destroy(secp);
    secp = NULL;
#endif
}
