/* cpu_backend.c — stage kernels through the cache and the LLVM back end (see cpu_backend.h). */
#include "cpu_backend.h"
#include <elf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "cache.h"
#include "cpu_tier.h"
#include "driver.h"
#include "llvm_backend.h"
#include "pj_codegen_hash.h" /* PJ_BUILD_HASH, generated at build time (CMakeLists.txt) */

struct cpu_backend {
    cpu_backend_options opt;
    llvm_jit *jit;
    cache *cache;
    int n_kernels;
    pj_kernel_id *ids;       /* what each kernel of the last prepare is: stages first, at their numbers */
    int named[PJ_KERNEL_NAMED]; /* [-id - 1]: the index of named kernel id, -1 when not prepared */
    kir_cpu_fn *fn;          /* per kernel of the last prepare */
    llvm_loaded **loaded;
    kernel_timing *timings;
    cache_trial *trials;     /* per stage: a kernel from the cache on trial until a step returns */
    int on_trial;            /* how many */
    cpu_tier *tier;          /* stage kernels at the quick tier, to be swapped for the final one; or NULL */
    int tiered_up;           /* the last prepare's quick kernels were swapped for the final tier */
    atomic_int stop_tier;    /* cpu_backend_stop_tier: the tier is told to stop (cpu_tier_stop_at) */
};

/* Ends every trial: the kernels ran and returned (or will not run). */
static void end_trials(cpu_backend *be)
{
    for (int s = 0; be->on_trial && s < be->n_kernels; s++)
        if (be->trials[s].fd >= 0) {
            cache_trial_end(be->cache, &be->trials[s]);
            be->on_trial--;
        }
    be->on_trial = 0;
}

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

/* Unloads the kernels of the last prepare and frees their arrays. */
static void drop_kernels(cpu_backend *be)
{
    for (int s = 0; s < be->n_kernels; s++) llvm_unload(be->jit, be->loaded[s]);
    free(be->ids);
    free(be->fn);
    free(be->loaded);
    free(be->timings);
    free(be->trials);
}

/* The kernels' end: the final tier's jobs not yet begun are dropped, so that a short run waits at
 * its end for one kernel's compile at most rather than all of them (cahn_hilliard_coupled: 0.3 s
 * of steps, then 0.5-0.8 s waiting); the objects already compiled go into the cache, where the
 * next run of the problem finds the final tier. */
static void end_tier(cpu_backend *be)
{
    atomic_store(&be->stop_tier, 1);
    int n = 0;
    cpu_tier_job *jobs = cpu_tier_join(be->tier, &n);
    for (int i = 0; i < n && be->cache; i++)
        if (jobs[i].rc >= 0) cache_put(be->cache, &jobs[i].key, jobs[i].obj, jobs[i].len, jobs[i].ir, "ll");
}

void cpu_backend_destroy(cpu_backend *be)
{
    if (!be) return;
    end_trials(be);
    end_tier(be);
    cpu_tier_destroy(be->tier);
    drop_kernels(be);
    llvm_jit_destroy(be->jit);
    cache_close(be->cache);
    free(be);
}

const char *cpu_backend_warning(cpu_backend *be) { return be->cache ? cache_warning(be->cache) : NULL; }
struct cache *cpu_backend_cache(cpu_backend *be) { return be->cache; }

typedef struct kernel_key {
    char ir[33], symbol[64], quick_symbol[72];
    cache_key key;  /* the entry: the quick tier's object (function quick_symbol) until the final
                       tier's replaces it (function symbol) */
} kernel_key;

static void make_key(cpu_backend *be, const kir_kernel *k, kernel_key *kk)
{
    kir_hash_hex(k, kk->ir);
    snprintf(kk->symbol, sizeof kk->symbol, "pj_%s_%c%c", kk->ir, be->opt.single ? 's' : 'd', be->opt.fast_math ? 'f' : 'x');
    memset(&kk->key, 0, sizeof kk->key);
    cache_key_add(&kk->key, "ir", kk->ir);
    cache_key_add(&kk->key, "kind", k->kind == KIR_REDUCE ? "reduce" : "stage");
    cache_key_add(&kk->key, "backend", "cpu");
    cache_key_add(&kk->key, "target", llvm_jit_target(be->jit));
    cache_key_add(&kk->key, "llvm", llvm_version_string());
    cache_key_add(&kk->key, "precision", be->opt.single ? "single" : "double");
    cache_key_add(&kk->key, "fast_math", be->opt.fast_math ? "1" : "0");
    if (be->opt.fast_math) cache_key_add(&kk->key, "vecmath", llvm_jit_vecmath(be->jit));
    cache_key_add(&kk->key, "codegen", PJ_CODEGEN_VERSION);
    cache_key_add(&kk->key, "build", PJ_BUILD_HASH);
    snprintf(kk->quick_symbol, sizeof kk->quick_symbol, "%s_q", kk->symbol);
}

/* 1 when a cached object is the quick tier's: its symbol table names quick_symbol. */
static int quick_object(const void *obj, size_t len, const kernel_key *kk)
{
    size_t n = strlen(kk->quick_symbol) + 1; /* with its NUL, as in the string table */
    for (const char *p = obj, *end = p + len; p && (size_t)(end - p) >= n; p++) {
        p = memchr(p, kk->quick_symbol[0], (size_t)(end - p) - n + 1);
        if (p && !memcmp(p, kk->quick_symbol, n)) return 1;
        if (!p) break;
    }
    return 0;
}

/* The ELF machine of the objects this build emits for its own CPU (0: not checked). */
#if defined(__x86_64__)
#define HOST_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_ELF_MACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define HOST_ELF_MACHINE EM_PPC64
#elif defined(__riscv)
#define HOST_ELF_MACHINE EM_RISCV
#else
#define HOST_ELF_MACHINE 0
#endif

/* Why a cached object cannot be this machine's relocatable ELF object, or NULL. Checked before
 * LLVM sees it: its loader aborts the process (not an error) on some foreign objects, e.g.
 * "Relocation type not implemented yet!" for another CPU's. */
static const char *foreign_object(const void *obj, size_t len)
{
    Elf64_Ehdr h;
    if (len < sizeof h) return "shorter than an ELF header";
    memcpy(&h, obj, sizeof h);
    if (memcmp(h.e_ident, ELFMAG, SELFMAG)) return "not an ELF object";
    if (h.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
        h.e_ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB))
        return "an ELF object of another word size or byte order";
    if (sizeof(void *) != 8) return NULL; /* the fields below are read as Elf64 */
    if (h.e_type != ET_REL) return "not a relocatable ELF object";
    if (HOST_ELF_MACHINE && h.e_machine != HOST_ELF_MACHINE) return "an ELF object for another CPU";
    if (h.e_shentsize != sizeof(Elf64_Shdr) || h.e_shoff > len ||
        (uint64_t)h.e_shnum * sizeof(Elf64_Shdr) > len - h.e_shoff)
        return "an ELF object whose section table lies outside it";
    return NULL;
}

typedef struct compile_job {
    cpu_backend *be;
    const kir_kernel *k;
    kernel_key kk;
    void *obj;
    size_t len;
    char *ir;
    double ms;
    llvm_times lt;
    double ms_cache; /* the lookup that missed */
    int quick;       /* compiled (or looked up) at the quick tier first */
    int rc;
    char err[512];
} compile_job;

static void *compile_one(void *arg)
{
    compile_job *j = arg;
    llvm_options lo = {j->be->opt.single, j->be->opt.fast_math, 0, !j->quick};
    double t0 = driver_now();
    j->rc = llvm_compile(j->be->jit, j->k, &lo, j->quick ? j->kk.quick_symbol : j->kk.symbol, &j->obj, &j->len,
                         &j->ir, &j->lt, j->err, sizeof j->err);
    j->ms = (driver_now() - t0) * 1e3;
    return NULL;
}

kir_cpu_fn cpu_backend_reduce_fn(const cpu_backend *be, const pj_program *p)
{
    int i = be->named[-PJ_KERNEL_REDUCE - 1];
    return p->reduce && i >= 0 ? be->fn[i] : NULL;
}

/* Room for the kernels of a prepare of n: the arrays kept from the last one when n is the same. */
static int make_room(cpu_backend *be, int n, char *err, size_t err_len)
{
    if (n == be->n_kernels) return 0;
    drop_kernels(be);
    be->ids = calloc((size_t)n, sizeof *be->ids);
    be->fn = calloc((size_t)n, sizeof *be->fn);
    be->loaded = calloc((size_t)n, sizeof *be->loaded);
    be->timings = calloc((size_t)n, sizeof *be->timings);
    be->trials = calloc((size_t)n, sizeof *be->trials);
    be->n_kernels = be->ids && be->fn && be->loaded && be->timings && be->trials ? n : 0;
    if (be->n_kernels) return 0;
    snprintf(err, err_len, "out of memory");
    return -1;
}

int cpu_backend_prepare(cpu_backend *be, const pj_program *p, char *err, size_t err_len)
{
    pj_kernel_id *ids = malloc(sizeof *ids * ((size_t)p->n_stages + 4));
    if (!ids) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    int rc = cpu_backend_prepare_kernels(be, p, ids, program_run_kernels(p, ids), err, err_len);
    free(ids);
    return rc;
}

/* Kernel `slot` (k), loaded at the quick tier, is to be compiled by the final one. Without memory
 * it stays at the quick tier. */
static void add_tier_job(cpu_backend *be, int slot, const kir_kernel *k, const kernel_key *kk)
{
    llvm_options lo = {be->opt.single, be->opt.fast_math, 0, 1};
    if (!be->tier) {
        be->tier = cpu_tier_create(be->n_kernels);
        cpu_tier_stop_at(be->tier, &be->stop_tier);
    }
    if (be->tier) cpu_tier_add(be->tier, slot, k, &lo, kk->symbol, &kk->key, kk->ir);
}

/* The final tier's objects, once compiled: stored, loaded and swapped in for the quick tier's
 * (between steps: no kernel runs). A job that failed keeps its quick kernel. */
static void swap_tiers(cpu_backend *be)
{
    int n = 0;
    cpu_tier_job *jobs = cpu_tier_poll(be->tier, be->jit, &n);
    if (!jobs) return;
    for (int i = 0; i < n; i++) {
        cpu_tier_job *j = &jobs[i];
        kir_cpu_fn fn = NULL;
        llvm_loaded *h = NULL;
        char err[256];
        if (j->rc < 0 || j->slot >= be->n_kernels) continue;
        if (be->cache) cache_put(be->cache, &j->key, j->obj, j->len, j->ir, "ll");
        if (llvm_load(be->jit, j->obj, j->len, j->symbol, &fn, &h, err, sizeof err) < 0) continue;
        llvm_unload(be->jit, be->loaded[j->slot]);
        be->loaded[j->slot] = h;
        be->fn[j->slot] = fn;
    }
    be->tiered_up = 1;
    cpu_tier_destroy(be->tier);
    be->tier = NULL;
}

int cpu_backend_tier(const cpu_backend *be) { return be->tier ? 1 : be->tiered_up ? 2 : 0; }

void cpu_backend_stop_tier(cpu_backend *be)
{
    if (be) atomic_store(&be->stop_tier, 1);
}

int cpu_backend_busy(cpu_backend *be) { return be && cpu_tier_busy(be->tier); }

/* Loads every kernel asked for: from the cache where it can, else compiles the missing ones in
 * parallel (one thread each, llvm_compile is thread-safe), stores them, and loads those objects. */
int cpu_backend_prepare_kernels(cpu_backend *be, const pj_program *p, const pj_kernel_id *ids, int n, char *err,
                                size_t err_len)
{
    end_trials(be);
    cpu_tier_destroy(be->tier);
    be->tier = NULL;
    be->tiered_up = 0;
    for (int i = 0; i < n; i++)
        if ((ids[i] >= 0 && ids[i] != i) || ids[i] < -PJ_KERNEL_NAMED || !program_kernel(p, ids[i])) {
            snprintf(err, err_len, "internal error: kernel %d asked of the CPU back end is not the program's", ids[i]);
            return -1;
        }
    if (make_room(be, n, err, err_len) < 0) return -1;
    for (int i = 0; i < PJ_KERNEL_NAMED; i++) be->named[i] = -1;
    for (int i = 0; i < n; i++) {
        be->ids[i] = ids[i];
        if (ids[i] < 0) be->named[-ids[i] - 1] = i;
    }
    compile_job *jobs = calloc((size_t)n, sizeof *jobs);
    int *missing = calloc((size_t)n, sizeof *missing), n_missing = 0;
    pthread_t *th = calloc((size_t)n, sizeof *th);
    int *started = calloc((size_t)n, sizeof *started);
    if (!jobs || !missing || !th || !started) {
        free(jobs);
        free(missing);
        free(th);
        free(started);
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    kernel_timing *timings = be->timings;
    for (int s = 0; s < n; s++) {
        const kir_kernel *k = program_kernel(p, ids[s]);
        compile_job *j = &jobs[s];
        memset(j, 0, sizeof *j);
        j->be = be;
        j->k = k;
        make_key(be, k, &j->kk);
        llvm_options lo = {be->opt.single, be->opt.fast_math, 0, 0};
        /* explicit stages tier up; other kernels (reductions, an implicit scheme's) do not */
        j->quick = !be->opt.final_tier && ids[s] >= 0 && llvm_has_tiers(k, &lo);
        double t0 = driver_now();
        void *obj = NULL;
        size_t len = 0;
        kir_cpu_fn fn = NULL;
        llvm_loaded *h = NULL;
        /* a stored object that does not load is a miss: set aside, compiled again, replaced; one
         * that is loaded is on trial until its code has run once (a crash marks it, cache.h) */
        const cache_key *key = &j->kk.key;
        const char *symbol = j->kk.symbol;
        int hit = be->cache && cache_get(be->cache, key, &obj, &len) == 1;
        if (hit && quick_object(obj, len, &j->kk)) { /* a quick tier's: used by a run that tiers up */
            hit = j->quick ? 2 : 0;
            symbol = j->kk.quick_symbol;
        }
        be->trials[s].fd = -1;
        if (hit && cache_trial_begin(be->cache, key, obj, len, &be->trials[s]) == 0) be->on_trial++;
        const char *foreign = hit ? foreign_object(obj, len) : NULL;
        double t_cache = driver_now();
        j->ms_cache = (t_cache - t0) * 1e3;
        if (foreign || (hit && llvm_load(be->jit, obj, len, symbol, &fn, &h, err, err_len) < 0)) {
            cache_reject(be->cache, key, foreign ? foreign : err);
            if (be->trials[s].fd >= 0) {
                cache_trial_end(be->cache, &be->trials[s]);
                be->on_trial--;
            }
            if (err_len) err[0] = 0;
            hit = 0;
        }
        free(obj);
        if (!hit) {
            missing[n_missing++] = s;
            continue;
        }
        llvm_unload(be->jit, be->loaded[s]);
        be->loaded[s] = h;
        be->fn[s] = fn;
        if (hit == 2) add_tier_job(be, s, k, &j->kk);
        if (timings) {
            double t1 = driver_now();
            timings[s] = (kernel_timing){.from_cache = 1, .ms = (t1 - t0) * 1e3, .ms_cache = j->ms_cache,
                                         .ms_load = (t1 - t_cache) * 1e3};
            snprintf(timings[s].name, sizeof timings[s].name, "%s", k->name);
        }
    }
    for (int i = 1; i < n_missing; i++) started[i] = pthread_create(&th[i], NULL, compile_one, &jobs[missing[i]]) == 0;
    if (n_missing) compile_one(&jobs[missing[0]]);
    for (int i = 1; i < n_missing; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        else compile_one(&jobs[missing[i]]);
    }
    int rc = 0;
    for (int i = 0; i < n_missing; i++) {
        int s = missing[i];
        compile_job *j = &jobs[s];
        double t0 = driver_now();
        kir_cpu_fn fn = NULL;
        llvm_loaded *h = NULL;
        if (rc == 0 && j->rc < 0) {
            snprintf(err, err_len, "%s", j->err);
            rc = -1;
        }
        double t_put = t0;
        if (rc == 0) {
            if (be->cache) cache_put(be->cache, &j->kk.key, j->obj, j->len, j->ir, "ll");
            t_put = driver_now();
            if (llvm_load(be->jit, j->obj, j->len, j->quick ? j->kk.quick_symbol : j->kk.symbol, &fn, &h, err,
                          err_len) < 0)
                rc = -1;
            else if (j->quick)
                add_tier_job(be, s, j->k, &j->kk);
        }
        free(j->obj);
        free(j->ir);
        if (rc < 0) continue;
        llvm_unload(be->jit, be->loaded[s]);
        be->loaded[s] = h;
        be->fn[s] = fn;
        if (timings) {
            double t1 = driver_now();
            timings[s] = (kernel_timing){.from_cache = 0, .ms = j->ms + (t1 - t0) * 1e3, .ms_ir = j->lt.ir,
                                         .ms_opt = j->lt.opt, .ms_codegen = j->lt.codegen,
                                         .ms_cache = j->ms_cache + (t_put - t0) * 1e3, .ms_load = (t1 - t_put) * 1e3};
            snprintf(timings[s].name, sizeof timings[s].name, "%s", j->k->name);
        }
    }
    free(jobs);
    free(missing);
    free(th);
    free(started);
    return rc;
}

void cpu_backend_run(void *ctx, pj_kernel_id stage, const kir_launch *L, int64_t begin, int64_t end)
{
    cpu_backend *be = ctx;
    be->fn[stage >= 0 ? stage : be->named[-stage - 1]](L, begin, end);
}

int cpu_backend_has(const cpu_backend *be, pj_kernel_id id)
{
    for (int k = 0; be && k < be->n_kernels; k++)
        if (be->ids[k] == id) return 1;
    return 0;
}

const kernel_timing *cpu_backend_timings(const cpu_backend *be, int *n)
{
    *n = be->n_kernels;
    return be->timings;
}

void cpu_backend_install(cpu_backend *be, sim *s) { sim_set_stage_runner(s, cpu_backend_run, be); }

void cpu_backend_ran(cpu_backend *be)
{
    if (be && be->on_trial) end_trials(be);
    if (be && be->tier) swap_tiers(be);
}

int cpu_backend_explain(cpu_backend *be, const pj_program *p, FILE *out)
{
    pj_kernel_id *ids = malloc(sizeof *ids * ((size_t)p->n_stages + 4));
    if (!ids) return -1;
    for (int s = 0, n = program_run_kernels(p, ids); s < n; s++) {
        const kir_kernel *k = program_kernel(p, ids[s]);
        kernel_key kk;
        make_key(be, k, &kk);
        char why[1024];
        int r = be->cache ? cache_explain(be->cache, &kk.key, why, sizeof why) : 0;
        fprintf(out, "%-8s %s  %s\n", k->name, kk.ir, r == 1 ? "hit" : why);
    }
    free(ids);
    return 0;
}

int cpu_backend_emit(cpu_backend *be, const pj_program *p, FILE *out, char *err, size_t err_len)
{
    llvm_options lo = {be->opt.single, be->opt.fast_math, 0, 1};
    pj_kernel_id *ids = malloc(sizeof *ids * ((size_t)p->n_stages + 4));
    int rc = ids ? 0 : -1;
    if (!ids) snprintf(err, err_len, "out of memory");
    for (int s = 0, n = ids ? program_run_kernels(p, ids) : 0; s < n && rc == 0; s++) {
        const kir_kernel *k = program_kernel(p, ids[s]);
        kernel_key kk;
        make_key(be, k, &kk);
        char *ir = NULL;
        rc = llvm_compile(be->jit, k, &lo, kk.symbol, NULL, NULL, &ir, NULL, err, err_len);
        if (rc == 0) fprintf(out, "; kernel %s (ir %s)\n%s\n", k->name, kk.ir, ir);
        free(ir);
    }
    free(ids);
    return rc < 0 ? -1 : 0;
}
