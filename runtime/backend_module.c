/*
 * Loading a backend built as a module (docs/backends.md): the file
 * libaccel-backend-<name>.so is looked for in $ACCEL_BACKEND_DIR, then
 * next to the object that holds this code (libaccel.so, or the program
 * when libaccel is linked statically). Never in the working directory:
 * dladdr names the program by argv[0], which is bare when it was started
 * through $PATH and relative after a chdir, so a name that is not
 * absolute is replaced by the file the kernel mapped (/proc/self/maps);
 * and a setuid program ignores $ACCEL_BACKEND_DIR (secure_getenv): its
 * caller must not choose the code it runs. Loaded at most once per process,
 * on the first runtime creation that probes its kind, and never unloaded
 * (its ops stay referenced). A module that is missing, fails to load or
 * answers for another kind or version is as if not built.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "fault.h"
#include "backend.h"
#include "backend_module.h"

static const accel__backend_host host = {
    .version = ACCEL__BACKEND_VERSION,
    .op_complete = accel__op_complete,
    .op_complete_unrun = accel__op_complete_unrun,
    .ctx_backend_state = accel__ctx_backend_state,
    .runtime_backend_state = accel__backend_registry_state,
    .runtime_backend_status = accel__backend_registry_status,
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

/* The absolute path of the file mapped at addr, from /proc/self/maps,
 * into buf; false if it is not found there. */
static bool mapped_file(const void *addr, char *buf, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return false;
    char line[PATH_MAX + 128];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        int at = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) < 2 ||
            at == 0 || (uintptr_t)addr < lo || (uintptr_t)addr >= hi)
            continue;
        char *path = line + at;
        path[strcspn(path, "\n")] = '\0';
        if (path[0] == '/' && strlen(path) < len) {
            memcpy(buf, path, strlen(path) + 1);
            found = true;
        }
        break;
    }
    fclose(f);
    return found;
}

const accel__backend_ops *accel__backend_module_load(const char *name,
                                                     accel_backend kind)
{
    const char *env = secure_getenv("ACCEL_BACKEND_DIR");
    if (env && *env) {
        const accel__backend_ops *ops = try_dir(env, strlen(env), name, kind);
        if (ops)
            return ops;
    }
    Dl_info info;
    void *self = (void *)(uintptr_t)&accel__backend_module_load;
    char buf[PATH_MAX];
    const char *file = NULL;
    if (dladdr(self, &info) && info.dli_fname && info.dli_fname[0] == '/')
        file = info.dli_fname;
    else if (mapped_file(self, buf, sizeof(buf)))
        file = buf;
    if (!file)
        return NULL; /* nowhere known: not the working directory */
    const char *slash = strrchr(file, '/');
    return try_dir(file, (size_t)(slash - file), name, kind);
}
