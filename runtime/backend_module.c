/*
 * Loading a backend built as a module (docs/backends.md): the file
 * libaccel-backend-<name>.so is looked for in $ACCEL_BACKEND_DIR, then
 * next to the object that holds this code (libaccel.so, or the program
 * when libaccel is linked statically). Loaded at most once per process,
 * on the first runtime creation that probes its kind, and never unloaded
 * (its ops stay referenced). A module that is missing, fails to load or
 * answers for another kind or version is as if not built.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "fault.h"
#include "backend_registry.h"

static const accel__backend_host host = {
    .version = ACCEL__BACKEND_VERSION,
    .op_complete = accel__op_complete,
    .ctx_backend_state = accel__ctx_backend_state,
    .runtime_backend_state = accel__runtime_backend_state,
    .runtime_backend_status = accel__runtime_backend_status,
    .malloc = accel__malloc,
    .calloc = accel__calloc,
    .calloc_aligned = accel__calloc_aligned,
    .free = accel__free,
    .malloc_at = accel__malloc_at,
    .calloc_at = accel__calloc_at,
    .calloc_aligned_at = accel__calloc_aligned_at,
    .fault_hit = accel__fault_hit_ext,
};

static const accel__backend_ops *try_dir(const char *dir, size_t dirlen,
                                         const char *name, accel_backend kind)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof(path), "%.*s/libaccel-backend-%s.so",
                     (int)dirlen, dir, name);
    if (n < 0 || (size_t)n >= sizeof(path))
        return NULL;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return NULL;
    accel__backend_module_entry_fn entry;
    /* POSIX: a function pointer through the object pointer dlsym gives */
    void *sym = dlsym(h, ACCEL__BACKEND_MODULE_ENTRY);
    memcpy(&entry, &sym, sizeof(entry));
    const accel__backend_ops *ops = entry ? entry(&host) : NULL;
    if (!ops || ops->version != ACCEL__BACKEND_VERSION || ops->kind != kind) {
        dlclose(h);
        return NULL;
    }
    return ops; /* h stays open for the process */
}

const accel__backend_ops *accel__backend_module_load(const char *name,
                                                     accel_backend kind)
{
    const char *env = getenv("ACCEL_BACKEND_DIR");
    if (env && *env) {
        const accel__backend_ops *ops = try_dir(env, strlen(env), name, kind);
        if (ops)
            return ops;
    }
    Dl_info info;
    void *self = (void *)(uintptr_t)&accel__backend_module_load;
    if (dladdr(self, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash)
            return try_dir(info.dli_fname, (size_t)(slash - info.dli_fname),
                           name, kind);
        return try_dir(".", 1, name, kind);
    }
    return NULL;
}
