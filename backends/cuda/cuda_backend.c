/* cuda_backend.c — the GPU back end (see cuda_backend.h).
 *
 *   create   sources (cuda_codegen.c) for init, stages, fills, check → keys → disk cache or
 *            NVRTC → modules → device buffers (one allocation per slot and field, the layout of
 *            sim.c: `halo` ghost layers per side, rows padded so that every row's first interior
 *            cell is 128-byte aligned)
 *   step     the stepper's (state.h) over this executor's operations (exec_ops, at the end):
 *            per stage the fill kernels of the read slot (sides in sim_fill_ghosts' order), the
 *            stage kernel; swap by pointer; launches only, on the default stream (in order)
 *   check    check kernel per field into one int64 per field; one small copy back
 *
 * What is generated and its cache keys: cuda_kset.c; the NVRTC version of the keys without
 * loading NVRTC: cuda_nvrtc_memo.c. */
#include "cuda_backend.h"
#include "diag.h"
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_codegen.h"
#include "cuda_kset.h"
#include "cuda_nvrtc_memo.h"
#include "cuda_driver.h"
#include "grid.h"
#include "knobs.h"
#include "simulation.h"
#include "state.h"

#define ROW_ALIGN_BYTES 128
/* device memory kept free beyond the buffers: modules, the context, the check kernel's results */
#define CUDA_MEMORY_MARGIN (64.0 * 1024 * 1024)


/* A program's kernels on the device: what is generated, its modules and functions. */
typedef struct cuda_kernels {
    kset ks;
    cuda_module **mod;    /* per kernel of ks */
    cuda_function *fn;
    cuda_prepare_stats stats;
} cuda_kernels;

/* ---- the sim ----------------------------------------------------------------------------- */

struct cuda_sim {
    sim_state st;         /* program, layout, plan, device buffers, clock, params (state.h) */
    cuda_sim_options opt;
    size_t bytes;         /* per buffer: the layout's elements, rounded up to 256 bytes */
    cuda_device *dev;
    cuda_nvrtc *nv;
    cache *cache;
    char nvrtc_version[32];
    char text[256];
    cuda_ptr results;              /* n_fields int64 of the check kernel */
    cuda_ptr lanes, reduced;       /* monitors: the lanes of every part, per output; the results */
    int64_t parts;                 /* kir_reduce_parts of the grid */
    cuda_kernels K;                /* every kernel, loaded */
    cuda_args A;                   /* stage / init launches: every slot's buffers */
    cuda_args F;                   /* fill launches: the read slot's buffers as slot 0 */
    kir_launch L;                  /* geometry for writers and reports (buf NULL) */
    unsigned sgrid[3], sblock[3];  /* stage and init */
    unsigned cgrid[3], cblock[3];  /* check */
    unsigned fgrid[6][3], fblock[6][3];
};

extern const exec_ops cuda_exec_ops; /* the executor (the end of this file) */

/* A device address the state holds (state.h: addresses in the executor's memory space). */
static cuda_ptr dev_addr(void *a) { return (cuda_ptr)(uintptr_t)a; }

/* The launch argument's buffers after the state's moved (a slot swap). */
static void refresh_bufs(void *x)
{
    cuda_sim *s = x;
    for (int b = 0; b < s->st.nbuf; b++) s->A.buf[b] = dev_addr(s->st.buf[b]);
}

static int open_nvrtc(cuda_sim *s, cuda_kernels *K, char *err, size_t err_len)
{
    if (s->nv) return 0;
    char reason[512];
    double t0 = driver_now();
    s->nv = cuda_nvrtc_open(reason, sizeof reason);
    K->stats.ms_nvrtc += (driver_now() - t0) * 1e3;
    if (!s->nv) {
        diag_set(err, err_len, "cuda: %s", reason);
        return -1;
    }
    K->stats.nvrtc_loaded = 1;
    if (s->cache) cuda_nvrtc_memo_put(s->cache, cuda_nvrtc_version(s->nv)); /* for runs that need no compile */
    return 0;
}

/* The NVRTC version for the keys: from the memo when there is one, else from NVRTC itself. */
static int nvrtc_version(cuda_sim *s, char *err, size_t err_len)
{
    if (s->cache && cuda_nvrtc_memo_get(s->cache, s->nvrtc_version, sizeof s->nvrtc_version) == 0) return 0;
    if (open_nvrtc(s, &s->K, err, err_len) < 0) return -1;
    snprintf(s->nvrtc_version, sizeof s->nvrtc_version, "%s", cuda_nvrtc_version(s->nv));
    return 0;
}

/* Kernel i of the kset: from the cache, else compiled with NVRTC (and stored); its function. */
static int prepare_one(cuda_sim *s, cuda_kernels *K, int i, char *err, size_t err_len)
{
    int cc = cuda_device_cc(s->dev), drv = cuda_device_driver_version(s->dev);
    kspec *k = &K->ks.k[i];
    cuda_key_buf kb;
    cuda_backend_key(&kb, k->ir, kkind_name[k->kind], cc, s->nvrtc_version, drv, s->opt.single, s->opt.fast_math,
                     k->src);
    void *image = NULL;
    size_t len = 0;
    char lerr[512];
    if (s->cache && cache_get(s->cache, &kb.key, &image, &len) == 1) {
        K->mod[i] = cuda_module_load(s->dev, image, lerr, sizeof lerr);
        free(image);
        image = NULL;
        if (K->mod[i]) K->stats.from_cache++;
        else cache_reject(s->cache, &kb.key, lerr); /* a miss: set aside, compiled again */
    }
    if (!K->mod[i]) {
        if (open_nvrtc(s, K, err, err_len) < 0) return -1;
        if (strcmp(cuda_nvrtc_version(s->nv), s->nvrtc_version)) {
            /* the memo was stale: key with the version of the library actually loaded */
            snprintf(s->nvrtc_version, sizeof s->nvrtc_version, "%s", cuda_nvrtc_version(s->nv));
            cuda_backend_key(&kb, k->ir, kkind_name[k->kind], cc, s->nvrtc_version, drv, s->opt.single,
                             s->opt.fast_math, k->src);
        }
        int is_cubin = 0;
        char *log = NULL;
        double c0 = driver_now();
        int rc = cuda_nvrtc_compile(s->nv, k->src, k->name, cc, s->opt.fast_math, &image, &len, &is_cubin, &log,
                                    err, err_len);
        K->stats.ms_nvrtc += (driver_now() - c0) * 1e3;
        free(log);
        if (rc < 0) return -1;
        if (s->cache) cache_put(s->cache, &kb.key, image, len, k->src, "cu");
        K->mod[i] = cuda_module_load(s->dev, image, err, err_len);
        free(image);
        if (!K->mod[i]) return -1;
        K->stats.compiled++;
    }
    return cuda_module_function(K->mod[i], k->name, &K->fn[i], err, err_len);
}

static int prepare_kernels(cuda_sim *s, cuda_kernels *K, char *err, size_t err_len)
{
    double t0 = driver_now();
    if (nvrtc_version(s, err, err_len) < 0) return -1;
    for (int i = 0; i < K->ks.n; i++)
        if (prepare_one(s, K, i, err, err_len) < 0) return -1;
    K->stats.kernels = K->ks.n;
    K->stats.ms_total = (driver_now() - t0) * 1e3;
    return 0;
}

/* Unloads and frees the kernels of K. */
static void kernels_free(cuda_kernels *K)
{
    for (int i = 0; K->mod && i < K->ks.n; i++) cuda_module_unload(K->mod[i]);
    kset_free(&K->ks);
    free(K->mod);
    free(K->fn);
    memset(K, 0, sizeof *K);
}

/* Room for a module and a function per kernel of K's kset. 0, or -1 with a message. */
static int kernels_alloc(cuda_kernels *K, char *err, size_t err_len)
{
    K->mod = calloc((size_t)K->ks.n, sizeof *K->mod);
    K->fn = calloc((size_t)K->ks.n, sizeof *K->fn);
    if (K->mod && K->fn) return 0;
    diag_set(err, err_len, "cuda: out of memory");
    return -1;
}

/* The kernels of p with the ghost plan `plan`, generated and loaded (from the cache, else NVRTC). */
static int kernels_build(cuda_sim *s, cuda_kernels *K, const pj_program *p, const ghost_plan *plan, char *err,
                         size_t err_len)
{
    memset(K, 0, sizeof *K);
    if (kset_build_run(&K->ks, p, plan, s->opt.single, s->opt.fast_math, NULL, err, err_len) < 0) return -1;
    if (kernels_alloc(K, err, err_len) < 0 || prepare_kernels(s, K, err, err_len) < 0) {
        kernels_free(K);
        return -1;
    }
    return 0;
}

/* The stage block: options, else $PDEJIT_CUDA_BLOCK, else cuda_stage_dims'. */
static int stage_geometry(cuda_sim *s, char *err, size_t err_len)
{
    const int dim = s->st.p->dim;
    if (cuda_stage_dims(dim, s->st.g.n, s->sgrid, s->sblock) < 0 ||
        cuda_stage_dims(dim, s->st.g.n, s->cgrid, s->cblock) < 0) {
        diag_set(err, err_len, "cuda: a %lldx%lldx%lld grid exceeds the launch limits", (long long)s->st.g.n[0],
                (long long)s->st.g.n[1], (long long)s->st.g.n[2]);
        return -1;
    }
    unsigned b[3] = {s->opt.block[0], s->opt.block[1], s->opt.block[2]};
    const char *env = knob(KNOB_CUDA_BLOCK);
    if (!b[0] && env) {
        unsigned x = 0, y = 1, z = 1;
        if (sscanf(env, "%u,%u,%u", &x, &y, &z) < 1) x = 0;
        b[0] = x;
        b[1] = y;
        b[2] = z;
    }
    if (b[0]) {
        for (int a = 0; a < 3; a++) {
            if (!b[a] || a >= dim) b[a] = 1;
        }
        if ((uint64_t)b[0] * b[1] * b[2] > 1024 || b[2] > 64) {
            diag_set(err, err_len, "cuda: block %ux%ux%u is larger than a device allows", b[0], b[1], b[2]);
            return -1;
        }
        static const int64_t lim[3] = {2147483647, 65535, 65535};
        for (int a = 0; a < 3; a++) {
            int64_t g = (s->st.g.n[a] + b[a] - 1) / b[a];
            if (g > lim[a]) {
                diag_set(err, err_len, "cuda: block %ux%ux%u needs too many blocks along %c", b[0], b[1], b[2], "xyz"[a]);
                return -1;
            }
            s->sblock[a] = b[a];
            s->sgrid[a] = (unsigned)(g ? g : 1);
        }
    }
    for (int side = 0; side < 2 * dim; side++)
        if (cuda_bc_fill_dims(&s->A, side, s->fgrid[side], s->fblock[side]) < 0) {
            diag_set(err, err_len, "cuda: the fill of side %d exceeds the launch limits", side);
            return -1;
        }
    return 0;
}

cuda_sim *cuda_sim_create(const pj_program *p, const cuda_sim_options *opt, char *err, size_t err_len)
{
    grid_layout g;
    size_t esz = opt && opt->single ? sizeof(float) : sizeof(double);
    if (grid_layout_make(&g, p, esz, ROW_ALIGN_BYTES, "cuda", err, err_len) < 0) return NULL;
    if (p->n_slots * p->n_fields > CUDA_MAX_BUFS || p->n_params > CUDA_MAX_PARAMS) {
        diag_set(err, err_len, "cuda: %d buffers and %d params; the CUDA back end takes at most %d and %d",
                p->n_slots * p->n_fields, p->n_params, CUDA_MAX_BUFS, CUDA_MAX_PARAMS);
        return NULL;
    }
    cuda_sim *s = calloc(1, sizeof *s);
    if (!s) {
        diag_set(err, err_len, "cuda: out of memory");
        return NULL;
    }
    if (opt) s->opt = *opt;
    if (state_init(&s->st, p, &g, s->opt.ghosts, s->opt.seed, "cuda", err, err_len) < 0) {
        free(s);
        return NULL;
    }
    s->K.ks.init = s->K.ks.check = s->K.ks.reduce = s->K.ks.fold = -1;
    s->bytes = (size_t)grid_buffer_bytes(&g, 256);

    /* launch geometry (host side) */
    s->L.param = s->st.param;
    s->A.t = s->A.dt = 0;
    s->A.seed = s->opt.seed;
    for (int a = 0; a < 3; a++) {
        s->L.n[a] = s->st.g.n[a];
        s->L.origin[a] = a < p->dim ? p->origin[a] : 0;
        s->L.h[a] = a < p->dim && p->length[a] > 0 ? p->length[a] / (double)s->st.g.n[a] : 1.0;
        s->A.n[a] = s->st.g.n[a];
        s->A.h[a] = s->L.h[a];
        s->A.origin[a] = s->L.origin[a];
        s->A.ghost[a] = s->st.g.ghost[a];
    }
    for (int a = 0; a < 3; a++) s->L.stride[a] = s->A.stride[a] = g.stride[a];
    for (int i = 0; i < p->n_params; i++) s->A.param[i] = s->st.param[i];

    /* the CUDA C of every kernel: needs no device */
    int built = s->opt.kernels ? kset_build(&s->K.ks, p, s->opt.kernels, s->opt.n_kernels, &s->st.plan, s->opt.single,
                                            s->opt.fast_math, NULL, err, err_len)
                               : kset_build_run(&s->K.ks, p, &s->st.plan, s->opt.single, s->opt.fast_math, NULL, err,
                                                err_len);
    s->opt.kernels = NULL; /* the caller's array need not outlive the call */
    if (built < 0 || kernels_alloc(&s->K, err, err_len) < 0) {
        cuda_sim_destroy(s);
        return NULL;
    }
    if (stage_geometry(s, err, err_len) < 0) {
        cuda_sim_destroy(s);
        return NULL;
    }
    char reason[512];
    s->dev = cuda_device_open(s->opt.device, reason, sizeof reason);
    if (!s->dev) {
        diag_set(err, err_len, CUDA_BACKEND_NO_DEVICE "%s", reason);
        cuda_sim_destroy(s);
        return NULL;
    }
    /* room for the buffers? (what the device has free, less a margin for modules and the
       context's own allocations) */
    size_t free_b = 0, total_b = 0;
    if (cuda_mem_info(s->dev, &free_b, &total_b, err, err_len) < 0 ||
        grid_memory_check(s->st.nbuf, (double)s->bytes, (double)free_b - CUDA_MEMORY_MARGIN, " on the device", err,
                          err_len) < 0) {
        cuda_sim_destroy(s);
        return NULL;
    }
    s->cache = cache_open(s->opt.cache_dir, 0);
    if (prepare_kernels(s, &s->K, err, err_len) < 0) {
        cuda_sim_destroy(s);
        return NULL;
    }
    for (int b = 0; b < s->st.nbuf; b++) {
        cuda_ptr m = 0;
        if (cuda_mem_alloc(s->dev, s->bytes, &m, err, err_len) < 0) {
            cuda_sim_destroy(s);
            return NULL;
        }
        s->st.mem[b] = (void *)(uintptr_t)m;
        s->st.buf[b] = (void *)(uintptr_t)(m + (uint64_t)g.origin_off * esz);
    }
    /* n_fields int64 for the check kernel, then the int the stage kernels raise on a NaN/Inf */
    if (cuda_mem_alloc(s->dev, sizeof(int64_t) * ((size_t)p->n_fields + 1), &s->results, err, err_len) < 0 ||
        cuda_memset8(s->dev, s->results + sizeof(int64_t) * (uint64_t)p->n_fields, 0, sizeof(int64_t), err, err_len) < 0) {
        cuda_sim_destroy(s);
        return NULL;
    }
    s->parts = kir_reduce_parts(p->dim, s->st.g.n); /* a swap may bring monitors */
    if (p->reduce && p->reduce->n_outputs) {
        size_t no = (size_t)p->reduce->n_outputs;
        if (cuda_mem_alloc(s->dev, sizeof(double) * KIR_REDUCE_LANES * (size_t)s->parts * no, &s->lanes, err, err_len) < 0 ||
            cuda_mem_alloc(s->dev, sizeof(double) * no, &s->reduced, err, err_len) < 0) {
            cuda_sim_destroy(s);
            return NULL;
        }
    }
    refresh_bufs(s);
    s->A.nonfinite = s->results + sizeof(int64_t) * (uint64_t)p->n_fields;
    snprintf(s->text, sizeof s->text, "%s (sm_%d, %d SMs, driver %d, NVRTC %s)", cuda_device_name(s->dev),
             cuda_device_cc(s->dev), cuda_device_sm_count(s->dev), cuda_device_driver_version(s->dev), s->nvrtc_version);
    return s;
}

void cuda_sim_destroy(cuda_sim *s)
{
    if (!s) return;
    if (s->dev) {
        char e[256];
        cuda_synchronize(s->dev, e, sizeof e);
        for (int b = 0; s->st.mem && b < s->st.nbuf; b++)
            if (s->st.mem[b]) cuda_mem_free(s->dev, dev_addr(s->st.mem[b]), e, sizeof e);
        cuda_mem_free(s->dev, s->results, e, sizeof e);
        if (s->lanes) cuda_mem_free(s->dev, s->lanes, e, sizeof e);
        if (s->reduced) cuda_mem_free(s->dev, s->reduced, e, sizeof e);
        kernels_free(&s->K);
        cuda_device_close(s->dev);
    }
    kernels_free(&s->K);
    cuda_nvrtc_close(s->nv);
    cache_close(s->cache);
    state_free(&s->st);
    free(s);
}

/* ---- params ------------------------------------------------------------------------------ */

/* The simulation of the generic half (runtime/simulation.h) over this executor. */
static simulation self(cuda_sim *s)
{
    simulation m = {&cuda_exec_ops, s, &s->st};
    return m;
}

/* ---- stepping ---------------------------------------------------------------------------- */

static int launch(cuda_sim *s, int k, const unsigned grid[3], const unsigned block[3], const void *arg, size_t size,
                  char *err, size_t err_len)
{
    if (cuda_launch_struct(s->dev, s->K.fn[k], grid, block, arg, size, err, err_len) < 0) {
        size_t n = strlen(err);
        if (n + 40 < err_len) snprintf(err + n, err_len - n, " (kernel %s)", s->K.ks.k[k].name);
        return -1;
    }
    return 0;
}

int cuda_sim_init(cuda_sim *s, char *err, size_t err_len)
{
    for (int b = 0; b < s->st.nbuf; b++)
        if (cuda_memset8(s->dev, dev_addr(s->st.mem[b]), 0, s->bytes, err, err_len) < 0) return -1;
    s->st.t = 0;
    s->st.steps = 0;
    s->A.t = 0;
    s->A.dt = 0;
    s->A.step = s->A.stage = 0;
    if (s->K.ks.init >= 0 && launch(s, s->K.ks.init, s->sgrid, s->sblock, &s->A, sizeof s->A, err, err_len) < 0) return -1;
    return 0;
}

/* The fill of every side of `slot`, at time t: sides in the order of sim_fill_ghosts. */
static int fill(cuda_sim *s, int slot, double t, char *err, size_t err_len)
{
    const int nf = s->st.p->n_fields;
    memcpy(&s->F, &s->A, sizeof s->F);
    /* a coefficient (a field without an eq) is read from slot 0 by every stage */
    for (int f = 0; f < nf; f++) s->F.buf[f] = s->A.buf[(s->st.p->field_has_eq[f] ? slot : 0) * nf + f];
    for (int f = nf; f < s->st.nbuf; f++) s->F.buf[f] = 0;
    s->F.t = t;
    for (int i = 0; i < 2 * s->st.p->dim; i++) {
        int side = 2 * s->st.plan.axis_order[i / 2] + i % 2; /* axes in the plan's order */
        if (s->st.plan.set.hook[side]) {
            /* the hook gets the read slot's device addresses, as the fill kernels would */
            void *buf[CUDA_MAX_BUFS];
            for (int f = 0; f < nf; f++) buf[f] = (void *)(uintptr_t)s->F.buf[f];
            if (cuda_synchronize(s->dev, err, err_len) < 0 ||
                s->st.plan.set.hook[side](s->st.plan.set.hook_ctx[side], side, &s->st.g, buf, nf, t, err, err_len) < 0)
                return -1;
            continue;
        }
        if (launch(s, s->K.ks.fill[side], s->fgrid[side], s->fblock[side], &s->F, sizeof s->F, err, err_len) < 0)
            return -1;
    }
    return 0;
}

static int fill_slot(void *x, int slot, double t, char *err, size_t len) { return fill(x, slot, t, err, len); }

static int run_stage_kernel(void *x, int i, const stage_clock *c, char *err, size_t len)
{
    cuda_sim *s = x;
    s->A.t = c->t;
    s->A.dt = c->dt;
    s->A.step = c->step;
    s->A.stage = c->stage;
    return launch(s, s->K.ks.stage[i], s->sgrid, s->sblock, &s->A, sizeof s->A, err, len);
}


int cuda_sim_step(cuda_sim *s, double dt, char *err, size_t err_len)
{
    simulation m = self(s);
    return simulation_step(&m, dt, err, err_len);
}

int cuda_sim_run_kernel(cuda_sim *s, int kernel, int read_slot, double t, double dt, int first_extra,
                        const cuda_ptr *extra, int n_extra, char *err, size_t err_len)
{
    if (kernel < 0 || kernel >= s->K.ks.n || read_slot < 0 || read_slot >= s->st.p->n_slots || n_extra < 0 ||
        first_extra < 0 || first_extra + n_extra > CUDA_MAX_BUFS) {
        diag_set(err, err_len, "cuda: no kernel %d, slot %d or room for %d more buffers", kernel, read_slot, n_extra);
        return -1;
    }
    if (fill(s, read_slot, t, err, err_len) < 0) return -1;
    cuda_args a = s->A; /* the launch copies its argument */
    a.t = t;
    a.dt = dt;
    a.step = s->st.steps;
    a.stage = 1;
    for (int i = 0; i < n_extra; i++) a.buf[first_extra + i] = extra[i];
    return launch(s, kernel, s->sgrid, s->sblock, &a, sizeof a, err, err_len);
}

/* exec_ops.run: kernel id of the program once (a named kernel reads slot 0). */
static int run(void *x, pj_kernel_id id, double t, double dt, char *err, size_t err_len)
{
    cuda_sim *s = x;
    const pj_program *p = s->st.p;
    int k = id >= 0 ? (id < p->n_stages ? s->K.ks.stage[id] : -1) : id >= -PJ_KERNEL_NAMED ? s->K.ks.named[-id - 1] : -1;
    if (k < 0) {
        diag_set(err, err_len, "cuda: kernel %d of the program was not prepared", id);
        return -1;
    }
    return cuda_sim_run_kernel(s, k, id >= 0 ? p->stages[id].read_slot : 0, t, dt, 0, NULL, 0, err, err_len);
}

int cuda_sim_add_kernel(cuda_sim *s, const kir_kernel *k, char *err, size_t err_len)
{
    kspec *ks = realloc(s->K.ks.k, sizeof *ks * (size_t)(s->K.ks.n + 1));
    if (ks) s->K.ks.k = ks;
    cuda_module **mod = ks ? realloc(s->K.mod, sizeof *mod * (size_t)(s->K.ks.n + 1)) : NULL;
    if (mod) s->K.mod = mod;
    cuda_function *fn = mod ? realloc(s->K.fn, sizeof *fn * (size_t)(s->K.ks.n + 1)) : NULL;
    if (!fn) {
        diag_set(err, err_len, "cuda: out of memory");
        return -1;
    }
    s->K.fn = fn;
    int i = s->K.ks.n;
    kspec *sp = &s->K.ks.k[i];
    memset(sp, 0, sizeof *sp);
    s->K.mod[i] = NULL;
    s->K.fn[i] = NULL;
    char hex[33];
    kir_hash_hex(k, hex);
    sp->kind = KK_STAGE;
    sp->index = -1;
    snprintf(sp->name, sizeof sp->name, "pj_kernel_%s_%c", hex, s->opt.single ? 's' : 'd');
    snprintf(sp->ir, sizeof sp->ir, "%s", hex);
    cuda_options co = {s->opt.single, s->opt.fast_math, NULL};
    if (!(sp->src = cuda_codegen(k, &co, sp->name, err, err_len))) return -1;
    s->K.ks.n++; /* freed with the kset from here on */
    if (prepare_one(s, &s->K, i, err, err_len) < 0) return -1;
    s->K.stats.kernels = s->K.ks.n;
    return i;
}

void cuda_sim_set_spacing(cuda_sim *s, const double h[3])
{
    for (int a = 0; a < s->st.p->dim; a++) s->L.h[a] = s->A.h[a] = h[a];
}

int cuda_sim_set_block(cuda_sim *s, const unsigned block[3], char *err, size_t err_len)
{
    cuda_sim_options keep = s->opt;
    unsigned g[3], b[3];
    memcpy(g, s->sgrid, sizeof g);
    memcpy(b, s->sblock, sizeof b);
    for (int a = 0; a < 3; a++) s->opt.block[a] = block[a];
    if (!s->opt.block[0]) s->opt.block[0] = 1;
    int rc = stage_geometry(s, err, err_len);
    s->opt = keep;
    if (rc < 0) {
        memcpy(s->sgrid, g, sizeof g);
        memcpy(s->sblock, b, sizeof b);
    }
    return rc;
}

void cuda_sim_block(const cuda_sim *s, unsigned block[3]) { memcpy(block, s->sblock, sizeof s->sblock); }

int cuda_sim_sync(cuda_sim *s, char *err, size_t err_len) { return cuda_synchronize(s->dev, err, err_len); }

/* ---- checks ------------------------------------------------------------------------------ */

/* Runs the check kernel on every field of slot 0; first[f] = first bad linear index or >= cells. */
static int run_checks(cuda_sim *s, int64_t *first, char *err, size_t err_len)
{
    const int nf = s->st.p->n_fields;
    if (cuda_memset8(s->dev, s->results, 0x7f, sizeof(int64_t) * (size_t)nf, err, err_len) < 0) return -1;
    for (int f = 0; f < nf; f++) {
        cuda_check_args ca;
        memset(&ca, 0, sizeof ca);
        ca.buf = s->A.buf[f];
        ca.result = s->results + sizeof(int64_t) * (uint64_t)f;
        for (int a = 0; a < 3; a++) {
            ca.n[a] = s->st.g.n[a];
            ca.stride[a] = s->A.stride[a];
        }
        if (launch(s, s->K.ks.check, s->cgrid, s->cblock, &ca, sizeof ca, err, err_len) < 0) return -1;
    }
    return cuda_memcpy_dtoh(s->dev, first, s->results, sizeof(int64_t) * (size_t)nf, err, err_len);
}

/* The executor's search (engine.h): the check kernels, then the first bad field's value. */
static int find_nonfinite(void *x, int64_t *cell, double *value, char *err, size_t err_len)
{
    cuda_sim *s = x;
    const int nf = s->st.p->n_fields;
    int64_t *first = malloc(sizeof *first * (size_t)nf);
    if (!first) {
        diag_set(err, err_len, "cuda: out of memory");
        return -2;
    }
    int rc = run_checks(s, first, err, err_len) < 0 ? -2 : -1;
    int64_t cells = cuda_sim_cells(s);
    for (int f = 0; rc == -1 && f < nf; f++) {
        if (first[f] < 0 || first[f] >= cells) continue;
        int64_t c = first[f];
        int64_t idx[3] = {c % s->st.g.n[0], (c / s->st.g.n[0]) % s->st.g.n[1], c / (s->st.g.n[0] * s->st.g.n[1])};
        cuda_ptr at = s->A.buf[f] + (uint64_t)(idx[0] + idx[1] * s->A.stride[1] + idx[2] * s->A.stride[2]) * s->st.esz;
        double v = NAN;
        float x1 = 0;
        if (cuda_memcpy_dtoh(s->dev, s->opt.single ? (void *)&x1 : (void *)&v, at, s->st.esz, err, err_len) < 0) {
            rc = -2;
            break;
        }
        *value = s->opt.single ? (double)x1 : v;
        *cell = c;
        rc = f;
    }
    free(first);
    return rc;
}

int cuda_sim_check_finite(cuda_sim *s, sim_nan_report *report, char *err, size_t err_len)
{
    simulation m = self(s);
    return simulation_check_finite(&m, report, err, err_len);
}

static int take_nonfinite(void *x, char *err, size_t err_len)
{
    cuda_sim *s = x;
    cuda_ptr at = s->results + sizeof(int64_t) * (uint64_t)s->st.p->n_fields;
    int32_t flag = 0;
    if (cuda_memcpy_dtoh(s->dev, &flag, at, sizeof flag, err, err_len) < 0) return -1;
    if (!flag) return 0;
    return cuda_memset8(s->dev, at, 0, sizeof flag, err, err_len) < 0 ? -1 : 1;
}

int cuda_sim_take_nonfinite(cuda_sim *s, char *err, size_t err_len) { return take_nonfinite(s, err, err_len); }

/* ---- fields ------------------------------------------------------------------------------ */

/* Copies plane k of buffer f in chunks of whole rows (each chunk one contiguous device range,
 * from the first interior cell of its first row to the last of its last row). */
static int xfer_field(cuda_sim *s, int f, double *out, const double *in, char *err, size_t err_len)
{
    const int64_t n0 = s->st.g.n[0], n1 = s->st.g.n[1], n2 = s->st.g.n[2], s1 = s->A.stride[1], s2 = s->A.stride[2];
    int64_t rows_per = (int64_t)((64u << 20) / ((size_t)s1 * s->st.esz));
    if (rows_per < 1) rows_per = 1;
    if (rows_per > n1) rows_per = n1;
    size_t stage_bytes = (size_t)((rows_per - 1) * s1 + n0) * s->st.esz;
    char *tmp = malloc(stage_bytes);
    if (!tmp) {
        diag_set(err, err_len, "cuda: out of memory for a %zu-byte staging buffer", stage_bytes);
        return -1;
    }
    int rc = 0;
    for (int64_t k = 0; k < n2 && !rc; k++)
        for (int64_t j0 = 0; j0 < n1 && !rc; j0 += rows_per) {
            int64_t nr = n1 - j0 < rows_per ? n1 - j0 : rows_per;
            size_t span = (size_t)((nr - 1) * s1 + n0) * s->st.esz;
            uint64_t dev = s->A.buf[f] + (uint64_t)(j0 * s1 + k * s2) * s->st.esz;
            if (in) { /* read, patch the interior, write back (keeps the ghosts between rows) */
                rc = cuda_memcpy_dtoh(s->dev, tmp, dev, span, err, err_len);
                for (int64_t r = 0; r < nr && !rc; r++) {
                    const double *src = in + (k * n1 + j0 + r) * n0;
                    for (int64_t i = 0; i < n0; i++) {
                        if (s->opt.single) ((float *)tmp)[r * s1 + i] = (float)src[i];
                        else ((double *)tmp)[r * s1 + i] = src[i];
                    }
                }
                if (!rc) rc = cuda_memcpy_htod(s->dev, dev, tmp, span, err, err_len);
            } else {
                rc = cuda_memcpy_dtoh(s->dev, tmp, dev, span, err, err_len);
                for (int64_t r = 0; r < nr && !rc; r++) {
                    double *dst = out + (k * n1 + j0 + r) * n0;
                    for (int64_t i = 0; i < n0; i++)
                        dst[i] = s->opt.single ? (double)((float *)tmp)[r * s1 + i] : ((double *)tmp)[r * s1 + i];
                }
            }
        }
    free(tmp);
    return rc ? -1 : 0;
}

static int copy_out(void *x, int b, double *out, char *err, size_t len) { return xfer_field(x, b, out, NULL, err, len); }
static int copy_in(void *x, int b, const double *in, char *err, size_t len) { return xfer_field(x, b, NULL, in, err, len); }
/* buffer b's interior to the host (an adaptive step's error: state.c) */
static int fetch_buffer(void *x, int b, double *out, char *err, size_t len) { return xfer_field(x, b, out, NULL, err, len); }

int cuda_sim_get_field(cuda_sim *s, int f, double *out, char *err, size_t err_len)
{
    simulation m = self(s);
    return simulation_get_field(&m, f, out, err, err_len);
}

int cuda_sim_set_field(cuda_sim *s, int f, const double *in, char *err, size_t err_len)
{
    simulation m = self(s);
    return simulation_set_field(&m, f, in, err, err_len);
}

/* ---- queries ----------------------------------------------------------------------------- */

int64_t cuda_sim_cells(const cuda_sim *s) { return s->st.g.n[0] * s->st.g.n[1] * s->st.g.n[2]; }
const cuda_prepare_stats *cuda_sim_prepare_stats(const cuda_sim *s) { return &s->K.stats; }
const char *cuda_sim_device_text(const cuda_sim *s) { return s->text; }
cuda_device *cuda_sim_device(cuda_sim *s) { return s->dev; }

size_t cuda_sim_device_bytes(const cuda_sim *s, int *n_allocs)
{
    int n = 0;
    size_t b = 0;
    for (int i = 0; i < s->st.nbuf; i++)
        if (s->st.mem[i]) {
            n++;
            b += s->bytes;
        }
    if (n_allocs) *n_allocs = n;
    return b;
}

double cuda_sim_bytes_per_cell(const cuda_sim *s)
{
    const pj_program *p = s->st.p;
    double total = 0;
    for (int st = 0; st < p->n_stages; st++) total += kir_values_per_cell(p->stages[st].kernel);
    return total * (double)s->st.esz;
}

/* ---- the GPU behind engine.h ------------------------------------------------------------- */

static void *ops_create(const pj_program *p, const engine_options *o, int *unavailable, char *err, size_t len)
{
    /* implicit schemes: refused by engine_create (the caps below) */
    cuda_sim_options co = {.single = o->single, .fast_math = o->fast_math, .cache_dir = o->cache_dir, .ghosts = &o->ghosts,
                           .seed = o->seed, .kernels = o->kernels, .n_kernels = o->n_kernels};
    cuda_sim *s = cuda_sim_create(p, &co, err, len);
    if (!s) *unavailable = !strncmp(err, CUDA_BACKEND_NO_DEVICE, strlen(CUDA_BACKEND_NO_DEVICE));
    if (s && o->spacing) cuda_sim_set_spacing(s, o->spacing);
    return s;
}
static void ops_destroy(void *o) { cuda_sim_destroy(o); }
static int ops_init(void *o, char *err, size_t len) { return cuda_sim_init(o, err, len); }

static sim_state *ops_state(void *o, void **x)
{
    *x = o;
    return &((cuda_sim *)o)->st;
}
/* The monitors now: slot 0's ghosts filled, the lanes of every part, their fold on the device;
 * only the n_outputs results are copied back, then scaled as sim_reduce does. */
int cuda_sim_reduce(cuda_sim *s, double *values, char *err, size_t err_len)
{
    const pj_program *p = s->st.p;
    if (!p->reduce || !p->n_monitors) return 0;
    if (s->K.ks.reduce < 0 || s->K.ks.fold < 0 || !s->lanes) {
        diag_set(err, err_len, "cuda: the monitors' kernels are missing");
        return -1;
    }
    int nf = p->n_fields, no = p->reduce->n_outputs;
    if (fill(s, 0, s->st.t, err, err_len) < 0) return -1;
    cuda_args R = s->A;
    R.t = s->st.t;
    R.nonfinite = 0;
    for (int o = 0; o < no; o++) R.buf[nf + o] = s->lanes + sizeof(double) * KIR_REDUCE_LANES * (uint64_t)s->parts * (uint64_t)o;
    unsigned block[3] = {KIR_REDUCE_LANES, 32, 1}, grid[3] = {(unsigned)((s->parts + 31) / 32), 1, 1};
    if (launch(s, s->K.ks.reduce, grid, block, &R, sizeof R, err, err_len) < 0) return -1;
    cuda_args F;
    memset(&F, 0, sizeof F);
    for (int o = 0; o < no; o++) F.buf[o] = R.buf[nf + o];
    F.buf[no] = s->reduced;
    F.n[0] = s->parts;
    F.n[1] = F.n[2] = 1;
    unsigned fblock[3] = {(unsigned)no, 1, 1}, fgrid[3] = {1, 1, 1};
    if (launch(s, s->K.ks.fold, fgrid, fblock, &F, sizeof F, err, err_len) < 0) return -1;
    double *r = malloc(sizeof *r * (size_t)no);
    if (!r) {
        diag_set(err, err_len, "cuda: out of memory");
        return -1;
    }
    if (cuda_memcpy_dtoh(s->dev, r, s->reduced, sizeof *r * (size_t)no, err, err_len) < 0) {
        free(r);
        return -1;
    }
    double volume = program_integral_scale(p, s->L.h);
    int plain = program_mesh_plain(p);
    for (int i = 0; i < p->n_monitors && i < no; i++) {
        double v = r[i];
        if (p->monitor_kinds[i] == PJ_MON_INTEGRAL) v *= volume;
        else if (p->monitor_kinds[i] == PJ_MON_MEAN) v /= plain ? (double)cuda_sim_cells(s) : program_mean_divisor(p);
        values[i] = v;
    }
    free(r);
    return 0;
}

static int ops_reduce(void *o, double *values, char *err, size_t len) { return cuda_sim_reduce(o, values, err, len); }

static void ops_info(void *o, engine_info *info)
{
    cuda_sim *s = o;
    info->device = cuda_sim_device_text(s);
    info->warning = s->cache ? cache_warning(s->cache) : NULL;
    info->n_kernels = s->K.stats.kernels;
    info->from_cache = s->K.stats.from_cache;
    info->ms_prepare = s->K.stats.ms_total;
    info->ms_compiler = s->K.stats.ms_nvrtc;
    info->bytes_per_cell = cuda_sim_bytes_per_cell(s);
}

/* ---- cache explain --------------------------------------------------------------------------- */

/* `pdejit cache explain FILE --backend cuda`: for every kernel a run of p loads, hit or the key
 * component that differs from the nearest entry. The key names the device (compute capability,
 * driver) and NVRTC, so the device is opened (no buffers, nothing compiled); NVRTC is loaded only
 * when the cache has no memo of its version. */
static int ops_explain(const pj_program *p, const engine_options *o, FILE *out, char *err, size_t len)
{
    cuda_sim *s = calloc(1, sizeof *s);
    grid_layout g;
    size_t esz = o->single ? sizeof(float) : sizeof(double);
    if (!s) {
        diag_set(err, len, "cuda: out of memory");
        return -1;
    }
    s->opt = (cuda_sim_options){.single = o->single, .fast_math = o->fast_math, .cache_dir = o->cache_dir};
    int rc = grid_layout_make(&g, p, esz, ROW_ALIGN_BYTES, "cuda", err, len) == 0 &&
                     state_init(&s->st, p, &g, NULL, 0, "cuda", err, len) == 0 &&
                     kset_build_run(&s->K.ks, p, &s->st.plan, o->single, o->fast_math, NULL, err, len) == 0
                 ? 0
                 : -1;
    char reason[512];
    if (rc == 0 && !(s->dev = cuda_device_open(0, reason, sizeof reason))) {
        diag_set(err, len, CUDA_BACKEND_NO_DEVICE "%s", reason);
        rc = -1;
    }
    if (rc == 0) s->cache = cache_open(o->cache_dir, 0);
    if (rc == 0 && s->cache && nvrtc_version(s, err, len) < 0) rc = -1;
    for (int i = 0; rc == 0 && i < s->K.ks.n; i++) {
        const kspec *k = &s->K.ks.k[i];
        cuda_key_buf kb;
        cuda_backend_key(&kb, k->ir, kkind_name[k->kind], cuda_device_cc(s->dev), s->nvrtc_version,
                         cuda_device_driver_version(s->dev), o->single, o->fast_math, k->src);
        char why[1024] = "";
        int r = s->cache ? cache_explain(s->cache, &kb.key, why, sizeof why) : 0;
        fprintf(out, "%-8s %s  %s\n", kkind_name[k->kind], k->ir, r == 1 ? "hit" : why);
    }
    if (rc == 0 && s->cache && cache_warning(s->cache)) { /* the cache's warning, for the caller to show */
        diag_set(err, len, "%s", cache_warning(s->cache));
        rc = 1;
    }
    cuda_sim_destroy(s);
    return rc;
}

/* ---- hot swap ----------------------------------------------------------------------------- */

/* Another program's kernels, loaded while the simulation steps (any thread: every driver call
 * makes the primary context current), with the device memory its monitors need. */
typedef struct cuda_prepared {
    cuda_sim *s;
    cuda_kernels K;
    cuda_ptr lanes, reduced;       /* NULL: the running ones fit (or p2 has no monitors) */
    int64_t monitor_outputs;
} cuda_prepared;

static void ops_release(void *prepared)
{
    cuda_prepared *cp = prepared;
    if (!cp) return;
    char e[256];
    kernels_free(&cp->K);
    if (cp->lanes) cuda_mem_free(cp->s->dev, cp->lanes, e, sizeof e);
    if (cp->reduced) cuda_mem_free(cp->s->dev, cp->reduced, e, sizeof e);
    free(cp);
}

static int reduce_outputs(const pj_program *p) { return p->reduce ? p->reduce->n_outputs : 0; }

static void *ops_prepare(void *o, const pj_program *p2, engine_info *info, char *err, size_t len)
{
    cuda_sim *s = o;
    cuda_prepared *cp = calloc(1, sizeof *cp);
    ghost_plan plan;
    if (!cp || ghost_plan_make(&plan, p2, &s->st.plan.set) < 0) {
        free(cp);
        diag_set(err, len, "cuda: out of memory");
        return NULL;
    }
    cp->s = s;
    double t0 = driver_now();
    int rc = kernels_build(s, &cp->K, p2, &plan, err, len);
    ghost_plan_free(&plan);
    cp->K.stats.ms_total = (driver_now() - t0) * 1e3;
    cp->monitor_outputs = reduce_outputs(p2);
    if (rc == 0 && cp->monitor_outputs > reduce_outputs(s->st.p)) {
        size_t no = (size_t)cp->monitor_outputs;
        if (cuda_mem_alloc(s->dev, sizeof(double) * KIR_REDUCE_LANES * (size_t)s->parts * no, &cp->lanes, err, len) < 0 ||
            cuda_mem_alloc(s->dev, sizeof(double) * no, &cp->reduced, err, len) < 0)
            rc = -1;
    }
    if (rc < 0) {
        ops_release(cp);
        return NULL;
    }
    if (info) {
        info->n_kernels = cp->K.stats.kernels;
        info->from_cache = cp->K.stats.from_cache;
        info->ms_prepare = cp->K.stats.ms_total;
        info->ms_compiler = cp->K.stats.ms_nvrtc;
    }
    return cp;
}

/* At a step boundary: p2 takes over with the fields as they are; the old kernels are unloaded
 * once the device has run every launch queued with them. */
static int ops_swap(void *o, const pj_program *p2, void *prepared, char *err, size_t len)
{
    cuda_sim *s = o;
    cuda_prepared *cp = prepared;
    int rc = cuda_synchronize(s->dev, err, len); /* the engine checked that p2 fits (state_check_program) */
    if (rc == 0 && (rc = state_adopt(&s->st, p2)) < 0) diag_set(err, len, "cuda: out of memory");
    if (rc < 0) {
        ops_release(cp);
        return -1;
    }
    cuda_kernels old = s->K;
    s->K = cp->K;
    cp->K = old;
    if (cp->lanes) { /* larger monitors: the new buffers, the old ones freed with cp */
        cuda_ptr l = s->lanes, r = s->reduced;
        s->lanes = cp->lanes;
        s->reduced = cp->reduced;
        cp->lanes = l;
        cp->reduced = r;
    }
    for (int j = 0; j < p2->n_params; j++) s->A.param[j] = s->st.param[j];
    ops_release(cp);
    return 0;
}

static int ops_emit(const pj_program *p, const engine_options *o, FILE *out, char *err, size_t len)
{
    return cuda_backend_emit(p, o->single, o->fast_math, out, err, len);
}

/* ---- the executor (engine.h) ------------------------------------------------------------- */

/* The state's clock or params set from outside: the launch argument's copies. */
static void refresh(void *x, unsigned what)
{
    cuda_sim *s = x;
    if (what & EXEC_CLOCK) s->A.t = s->st.t;
    if (what & EXEC_PARAMS)
        for (int j = 0; j < s->st.p->n_params; j++) s->A.param[j] = s->st.param[j];
}

static void *dev_alloc(void *x, size_t bytes, char *err, size_t len)
{
    cuda_ptr p = 0;
    return cuda_mem_alloc(((cuda_sim *)x)->dev, bytes, &p, err, len) < 0 ? NULL : (void *)(uintptr_t)p;
}

static void dev_free(void *x, void *p)
{
    char e[256];
    cuda_mem_free(((cuda_sim *)x)->dev, dev_addr(p), e, sizeof e);
}

static int dev_zero(void *x, void *p, size_t bytes, char *err, size_t len)
{
    return cuda_memset8(((cuda_sim *)x)->dev, dev_addr(p), 0, bytes, err, len);
}

static int dev_copy_rows(void *x, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows,
                         char *err, size_t len)
{
    return cuda_memcpy_dtod_2d(((cuda_sim *)x)->dev, dev_addr(dst), dpitch, dev_addr((void *)src), spitch, width, rows,
                               err, len);
}

static int add_kernel(void *x, pj_kernel_id id, char *err, size_t len)
{
    const kir_kernel *k = program_kernel(((cuda_sim *)x)->st.p, id);
    if (k) return cuda_sim_add_kernel(x, k, err, len);
    diag_set(err, len, "cuda: the program has no kernel %d", id);
    return -1;
}

static int launch_extra(void *x, int kernel, double t, double dt, int first_extra, void *const *extra, int n_extra,
                        char *err, size_t len)
{
    cuda_ptr bufs[CUDA_MAX_BUFS];
    /* buffers past the launch argument's CUDA_MAX_BUFS are left out (a Jacobian's outputs beyond
       it are not stored) */
    if (first_extra >= 0 && first_extra + n_extra > CUDA_MAX_BUFS) n_extra = CUDA_MAX_BUFS - first_extra;
    if (n_extra < 0) n_extra = 0;
    for (int i = 0; i < n_extra; i++) bufs[i] = dev_addr(extra[i]);
    return cuda_sim_run_kernel(x, kernel, 0, t, dt, first_extra, bufs, n_extra, err, len);
}

static int sync_device(void *x, char *err, size_t len) { return cuda_synchronize(((cuda_sim *)x)->dev, err, len); }
static const kir_launch *geometry(void *x) { return &((cuda_sim *)x)->L; }

const exec_ops cuda_exec_ops = {
    .device = 1,
    .step = {.fill = fill_slot, .stage = run_stage_kernel, .swapped = refresh_bufs, .fetch = fetch_buffer},
    .refresh = refresh,
    .copy_out = copy_out,
    .copy_in = copy_in,
    .take_nonfinite = take_nonfinite,
    .find_nonfinite = find_nonfinite,
    .run = run,
    .alloc = dev_alloc,
    .free = dev_free,
    .zero = dev_zero,
    .copy_rows = dev_copy_rows,
    .add_kernel = add_kernel,
    .launch = launch_extra,
    .sync = sync_device,
    .geometry = geometry,
};

const backend_ops cuda_backend_ops = {
    .name = "cuda",
    .caps = ENGINE_CAP_SWAP | ENGINE_CAP_MONITORS | ENGINE_CAP_EMIT | ENGINE_CAP_EXPLAIN | ENGINE_CAP_DEVICE |
            ENGINE_CAP_SECOND_BC,
    .emit_flag = "cuda",
    .exec = &cuda_exec_ops,
    .create = ops_create,
    .destroy = ops_destroy,
    .state = ops_state,
    .init = ops_init,
    .reduce = ops_reduce,
    .info = ops_info,
    .prepare = ops_prepare,
    .swap = ops_swap,
    .release = ops_release,
    .emit = ops_emit,
    .explain = ops_explain,
};
