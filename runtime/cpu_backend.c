/* cpu_backend.c — stage kernels through the cache and the LLVM back end (see cpu_backend.h). */
#include "cpu_backend.h"
#include <stdlib.h>
#include <string.h>
#include "cache.h"
#include "driver.h"
#include "llvm_backend.h"

struct cpu_backend {
    cpu_backend_options opt;
    llvm_jit *jit;
    cache *cache;
    kir_cpu_fn fn[PJ_MAX_STAGES];
    llvm_loaded *loaded[PJ_MAX_STAGES];
};

cpu_backend *cpu_backend_create(const cpu_backend_options *opt, char *err, size_t err_len)
{
    cpu_backend *be = calloc(1, sizeof *be);
    if (!be) return NULL;
    be->opt = *opt;
    be->jit = llvm_jit_create(err, err_len);
    if (!be->jit) {
        free(be);
        return NULL;
    }
    be->cache = cache_open(opt->cache_dir, 0);
    return be;
}

void cpu_backend_destroy(cpu_backend *be)
{
    if (!be) return;
    for (int s = 0; s < PJ_MAX_STAGES; s++) llvm_unload(be->jit, be->loaded[s]);
    llvm_jit_destroy(be->jit);
    cache_close(be->cache);
    free(be);
}

const char *cpu_backend_warning(cpu_backend *be) { return be->cache ? cache_warning(be->cache) : NULL; }
struct cache *cpu_backend_cache(cpu_backend *be) { return be->cache; }

typedef struct kernel_key {
    char ir[33], symbol[64];
    cache_key key;
} kernel_key;

static void make_key(cpu_backend *be, const kir_kernel *k, kernel_key *kk)
{
    kir_hash_hex(k, kk->ir);
    snprintf(kk->symbol, sizeof kk->symbol, "pj_%s_%c%c", kk->ir, be->opt.single ? 's' : 'd', be->opt.fast_math ? 'f' : 'x');
    memset(&kk->key, 0, sizeof kk->key);
    cache_key_add(&kk->key, "ir", kk->ir);
    cache_key_add(&kk->key, "kind", "stage");
    cache_key_add(&kk->key, "backend", "cpu");
    cache_key_add(&kk->key, "target", llvm_jit_target(be->jit));
    cache_key_add(&kk->key, "llvm", llvm_version_string());
    cache_key_add(&kk->key, "precision", be->opt.single ? "single" : "double");
    cache_key_add(&kk->key, "fast_math", be->opt.fast_math ? "1" : "0");
    cache_key_add(&kk->key, "codegen", PJ_CODEGEN_VERSION);
}

int cpu_backend_prepare(cpu_backend *be, const pj_program *p, kernel_timing *timings, char *err, size_t err_len)
{
    llvm_options lo = {be->opt.single, be->opt.fast_math};
    for (int s = 0; s < p->n_stages; s++) {
        const kir_kernel *k = p->stages[s].kernel;
        kernel_key kk;
        make_key(be, k, &kk);
        double t0 = driver_now();
        void *obj = NULL;
        size_t len = 0;
        int hit = be->cache && cache_get(be->cache, &kk.key, &obj, &len) == 1;
        kir_cpu_fn fn = NULL;
        llvm_loaded *h = NULL;
        if (hit && llvm_load(be->jit, obj, len, kk.symbol, &fn, &h, err, err_len) < 0) {
            hit = 0; /* a stored object that does not load is a miss: compile and replace it */
            free(obj);
            obj = NULL;
        }
        if (!hit) {
            char *ir = NULL;
            if (llvm_compile(be->jit, k, &lo, kk.symbol, &obj, &len, &ir, NULL, err, err_len) < 0) return -1;
            if (be->cache) cache_put(be->cache, &kk.key, obj, len, ir, "ll");
            free(ir);
            if (llvm_load(be->jit, obj, len, kk.symbol, &fn, &h, err, err_len) < 0) {
                free(obj);
                return -1;
            }
        }
        free(obj);
        llvm_unload(be->jit, be->loaded[s]);
        be->loaded[s] = h;
        be->fn[s] = fn;
        if (timings) {
            snprintf(timings[s].name, sizeof timings[s].name, "%s", k->name);
            timings[s].from_cache = hit;
            timings[s].ms = (driver_now() - t0) * 1e3;
        }
    }
    return 0;
}

static void run_stage(void *ctx, int stage, const kir_launch *L, int64_t begin, int64_t end)
{
    cpu_backend *be = ctx;
    be->fn[stage](L, begin, end);
}

void cpu_backend_install(cpu_backend *be, sim *s) { sim_set_stage_runner(s, run_stage, be); }

int cpu_backend_explain(cpu_backend *be, const pj_program *p, FILE *out)
{
    for (int s = 0; s < p->n_stages; s++) {
        kernel_key kk;
        make_key(be, p->stages[s].kernel, &kk);
        char why[1024];
        int r = be->cache ? cache_explain(be->cache, &kk.key, why, sizeof why) : 0;
        fprintf(out, "%-8s %s  %s\n", p->stages[s].kernel->name, kk.ir, r == 1 ? "hit" : why);
    }
    return 0;
}

int cpu_backend_emit(cpu_backend *be, const pj_program *p, FILE *out, char *err, size_t err_len)
{
    llvm_options lo = {be->opt.single, be->opt.fast_math};
    for (int s = 0; s < p->n_stages; s++) {
        kernel_key kk;
        make_key(be, p->stages[s].kernel, &kk);
        char *ir = NULL;
        if (llvm_compile(be->jit, p->stages[s].kernel, &lo, kk.symbol, NULL, NULL, &ir, NULL, err, err_len) < 0) return -1;
        fprintf(out, "; kernel %s (ir %s)\n%s\n", p->stages[s].kernel->name, kk.ir, ir);
        free(ir);
    }
    return 0;
}
