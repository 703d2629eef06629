/* cuda_kset.c — the GPU back end's kernel set and cache keys (see cuda_kset.h, cuda_backend.h):
 * the CUDA C of every kernel a simulation of a program loads, printed by cuda_codegen.c, `pdejit
 * emit --cuda` (one translation unit), and the key each kernel is cached under. */
#include "cuda_kset.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include "cuda_backend.h"
#include "diag.h"
#include "pj_codegen_hash.h" /* PJ_BUILD_HASH, generated at build time (CMakeLists.txt) */

const char *const kkind_name[] = {"init", "stage", "fill", "check", "reduce", "fold"};

void kset_free(kset *ks)
{
    for (int i = 0; i < ks->n; i++) free(ks->k[i].src);
    free(ks->k);
    free(ks->stage);
    ks->k = NULL;
    ks->stage = NULL;
    ks->n = 0;
}


/* The fill of a field on a side, as the plan says (grid.h). */
static cuda_bc_kind fill_kind(const ghost_plan *plan, int f, int side)
{
    switch (plan->rule[f * 6 + side]) {
    case GHOST_PERIODIC: return CUDA_BC_PERIODIC;
    case GHOST_LINEAR: return plan->set.homogeneous ? CUDA_BC_LINEAR0 : CUDA_BC_LINEAR;
    case GHOST_MIRROR: return CUDA_BC_MIRROR;
    }
    return CUDA_BC_MIRROR;
}

/* The CUDA C of kernel k of the program as the next kspec of ks (kind; index: a stage number, or
 * a named kernel's negative id), its function named pj_PREFIX_HASH_PRECISION. Its place in ks, or
 * -1 with the message in cerr. */
static int kset_add(kset *ks, kkind kind, int index, const char *prefix, const kir_kernel *k, const cuda_options *co,
                    char *cerr, size_t cerr_len)
{
    char hex[33];
    kspec *sp = &ks->k[ks->n];
    kir_hash_hex(k, hex);
    sp->kind = kind;
    sp->index = index;
    snprintf(sp->name, sizeof sp->name, "pj_%s_%s_%c", prefix, hex, co->single ? 's' : 'd');
    snprintf(sp->ir, sizeof sp->ir, "%s", hex);
    sp->src = cuda_codegen(k, co, sp->name, cerr, cerr_len);
    return sp->src ? ks->n++ : -1;
}

/* Generates the CUDA C of the kernels ids[0 .. n_ids) of p (stages, named kernels, the
 * reduction: program.h), the init kernel, the fills as `plan` says (no fill kernel for a side a
 * hook fills) and the check: whole sources, or with prelude non-NULL the kernels without their
 * shared definitions, whose CUDA_PRELUDE_* bits are ORed into *prelude (cuda_options). 0, or -1
 * with a message. */
int kset_build(kset *ks, const pj_program *p, const pj_kernel_id *ids, int n_ids, const ghost_plan *plan,
                      int single, int fast_math, unsigned *prelude, char *err, size_t err_len)
{
    memset(ks, 0, sizeof *ks);
    ks->init = ks->check = ks->reduce = ks->fold = -1;
    for (int i = 0; i < 6; i++) ks->fill[i] = -1;
    for (int i = 0; i < PJ_KERNEL_NAMED; i++) ks->named[i] = -1;
    ks->k = calloc((size_t)n_ids + 11, sizeof *ks->k); /* init, ids, 6 fills, check, reduce, fold */
    ks->stage = malloc(sizeof *ks->stage * ((size_t)p->n_stages + 1));
    if (!ks->k || !ks->stage) {
        kset_free(ks);
        diag_set(err, err_len, "cuda: out of memory");
        return -1;
    }
    for (int i = 0; i < p->n_stages; i++) ks->stage[i] = -1;
    cuda_options co = {single, fast_math, prelude};
    char hex[33], cerr[512];
    const char prec = single ? 's' : 'd';
    if (p->init && (ks->init = kset_add(ks, KK_INIT, 0, "init", p->init, &co, cerr, sizeof cerr)) < 0) goto fail;
    int reduce = 0;
    for (int i = 0; i < n_ids; i++) {
        const kir_kernel *k = program_kernel(p, ids[i]);
        if (ids[i] == PJ_KERNEL_REDUCE || !k) {
            reduce |= ids[i] == PJ_KERNEL_REDUCE && k;
            continue;
        }
        int at = kset_add(ks, KK_STAGE, ids[i], ids[i] >= 0 ? "stage" : kir_kind_name(k->kind), k, &co, cerr,
                          sizeof cerr);
        if (at < 0) goto fail;
        if (ids[i] >= 0) ks->stage[ids[i]] = at;
        else ks->named[-ids[i] - 1] = at;
    }
    cuda_bc_kind *kinds = malloc(sizeof *kinds * (size_t)p->n_fields);
    if (!kinds) {
        diag_set(err, err_len, "cuda: out of memory");
        kset_free(ks);
        return -1;
    }
    for (int side = 0; side < 2 * p->dim; side++) {
        if (plan->set.hook[side]) continue;
        int linear = 0;
        for (int f = 0; f < p->n_fields; f++) {
            kinds[f] = fill_kind(plan, f, side);
            linear |= kinds[f] == CUDA_BC_LINEAR || kinds[f] == CUDA_BC_LINEAR0;
        }
        kspec *k = &ks->k[ks->n];
        k->kind = KK_FILL;
        k->index = side;
        if (linear && p->bc_kernel[side]) kir_hash_hex(p->bc_kernel[side], hex);
        else snprintf(hex, sizeof hex, "none");
        snprintf(k->name, sizeof k->name, "pj_fill_%d_%c", side, prec);
        snprintf(k->ir, sizeof k->ir, "fill%d-%s%s", side, hex, linear && plan->set.homogeneous ? "-homogeneous" : "");
        k->src = cuda_codegen_bc_fill(linear ? p->bc_kernel[side] : NULL, p->dim, p->n_fields, side, kinds, &co,
                                      k->name, cerr, sizeof cerr);
        if (!k->src) {
            free(kinds);
            goto fail;
        }
        ks->fill[side] = ks->n++;
    }
    free(kinds);
    {
        kspec *k = &ks->k[ks->n];
        k->kind = KK_CHECK;
        snprintf(k->name, sizeof k->name, "pj_check_%dd_%c", p->dim, prec);
        snprintf(k->ir, sizeof k->ir, "check%dd", p->dim);
        k->src = cuda_codegen_nan_check(p->dim, single, k->name, cerr, sizeof cerr);
        if (!k->src) goto fail;
        ks->check = ks->n++;
    }
    if (reduce) {
        kir_hash_hex(p->reduce, hex);
        kspec *k = &ks->k[ks->n];
        k->kind = KK_REDUCE;
        snprintf(k->name, sizeof k->name, "pj_reduce_%s_%c", hex, prec);
        snprintf(k->ir, sizeof k->ir, "%s", hex);
        k->src = cuda_codegen_reduce(p->reduce, &co, k->name, cerr, sizeof cerr);
        if (!k->src) goto fail;
        ks->reduce = ks->n++;
        k = &ks->k[ks->n];
        k->kind = KK_FOLD;
        snprintf(k->name, sizeof k->name, "pj_fold_%s", hex);
        snprintf(k->ir, sizeof k->ir, "fold-%s", hex);
        k->src = cuda_codegen_reduce_fold(p->reduce, &co, k->name, cerr, sizeof cerr);
        if (!k->src) goto fail;
        ks->fold = ks->n++;
    }
    return 0;
fail:
    diag_set(err, err_len, "%s", cerr);
    kset_free(ks);
    return -1;
}

/* kset_build over the kernels a run of p loads (program_run_kernels). */
int kset_build_run(kset *ks, const pj_program *p, const ghost_plan *plan, int single, int fast_math,
                          unsigned *prelude, char *err, size_t err_len)
{
    pj_kernel_id *ids = malloc(sizeof *ids * ((size_t)p->n_stages + 4));
    if (!ids) {
        diag_set(err, err_len, "cuda: out of memory");
        return -1;
    }
    int rc = kset_build(ks, p, ids, program_run_kernels(p, ids), plan, single, fast_math, prelude, err, err_len);
    free(ids);
    return rc;
}

int cuda_backend_emit(const pj_program *p, int single, int fast_math, FILE *out, char *err, size_t err_len)
{
    kset ks;
    ghost_plan plan;
    if (ghost_plan_make(&plan, p, NULL) < 0) {
        diag_set(err, err_len, "cuda: out of memory");
        return -1;
    }
    unsigned shared = 0;
    int rc = kset_build_run(&ks, p, &plan, single, fast_math, &shared, err, err_len);
    ghost_plan_free(&plan);
    if (rc < 0) return -1;
    char *prelude = cuda_codegen_prelude(shared, err, err_len);
    if (!prelude) {
        kset_free(&ks);
        return -1;
    }
    fprintf(out, "// pdejit: the CUDA C of the kernels of %s, %s precision, as one translation unit (nvcc -c\n"
                 "// takes it whole). At run time NVRTC compiles each kernel alone, after the definitions it uses.\n\n%s",
            p->filename ? p->filename : "the problem", single ? "single" : "double", prelude);
    free(prelude);
    for (int i = 0; i < ks.n; i++) {
        const kspec *k = &ks.k[i];
        int again = 0; /* two stages of the same IR are one kernel */
        for (int j = 0; j < i; j++) again |= !strcmp(ks.k[j].name, k->name);
        fprintf(out, "// ---- kernel %s (%s", k->name, kkind_name[k->kind]);
        if (k->kind == KK_STAGE && k->index >= 0)
            fprintf(out, " %d: reads slot %d at t + %g dt", k->index + 1, p->stages[k->index].read_slot,
                    p->stages[k->index].t_frac);
        if (k->kind == KK_STAGE && k->index < 0) fprintf(out, ": a named kernel of the program, reads slot 0");
        if (k->kind == KK_FILL) fprintf(out, " of side %d", k->index);
        if (again) fprintf(out, "): the kernel above\n\n");
        else fprintf(out, ")\n%s\n", k->src);
    }
    kset_free(&ks);
    return 0;
}

/* ---- cache keys -------------------------------------------------------------------------- */

void cuda_backend_key(cuda_key_buf *kb, const char *ir, const char *kind, int cc, const char *nvrtc_version,
                      int driver_version, int single, int fast_math, const char *source)
{
    snprintf(kb->ir, sizeof kb->ir, "%s", ir);
    snprintf(kb->kind, sizeof kb->kind, "%s", kind);
    snprintf(kb->target, sizeof kb->target, "sm_%d", cc);
    snprintf(kb->nvrtc, sizeof kb->nvrtc, "%s", nvrtc_version);
    snprintf(kb->driver, sizeof kb->driver, "%d", driver_version);
    XXH128_hash_t h = XXH3_128bits(source ? source : "", source ? strlen(source) : 0);
    snprintf(kb->src, sizeof kb->src, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
    memset(&kb->key, 0, sizeof kb->key);
    cache_key_add(&kb->key, "ir", kb->ir);
    cache_key_add(&kb->key, "kind", kb->kind);
    cache_key_add(&kb->key, "backend", "cuda");
    cache_key_add(&kb->key, "target", kb->target);
    cache_key_add(&kb->key, "nvrtc", kb->nvrtc);
    cache_key_add(&kb->key, "driver", kb->driver);
    cache_key_add(&kb->key, "precision", single ? "single" : "double");
    cache_key_add(&kb->key, "fast_math", fast_math ? "1" : "0");
    cache_key_add(&kb->key, "codegen", PJ_CUDA_CODEGEN_VERSION);
    cache_key_add(&kb->key, "build", PJ_BUILD_HASH);
    cache_key_add(&kb->key, "source", kb->src);
}

