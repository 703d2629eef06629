/* sim.c — buffers, ghost fill, stepping, params and NaN checks of a running simulation.
 *
 * Layout: grid.h's (rows 64-byte aligned), each allocation 64-byte aligned. buf[slot*n_fields+f]
 * points at interior cell (0,0,0); swapping slots swaps pointers, never data. Ghost fill: the
 * plan of grid.h, side by side, a hook where the plan has one.
 *
 * A step:  for each stage: fill ghosts of stage.read_slot at t + t_frac*dt
 *                          run the stage kernel over all interior cells (split over threads)
 *          swap slots 0 and 1 when the scheme says so; t += dt; steps++
 *
 * Threads: par_for() is the one place that splits stage work, over the sim's cpu_pool (persistent
 * threads, each with its own range of rows in pieces that another thread takes over when it is
 * late; piece boundaries in 1D on CPU_POOL_GRAIN_1D cells so that threads never share a cache
 * line of output; each cell computed by exactly one thread). Ghost fill and checks are serial: they
 * touch a surface, or run once per output; except the fill along x and y of a large 3D mesh
 * (FILL_PAR_MIN_CELLS), a row end per row of every plane, which is split over the threads by
 * planes in one launch (256³: 1.1 ms serial, a twentieth of a 2-thread step).
 *
 * Large states: when all buffers together exceed the last-level cache, kir_launch.prefetch asks
 * the CPU kernels to prefetch the rows ahead (llvm_backend.c; +10-20 % on a 2048² step here).
 *
 * Y tiles (3D, CPU kernels): when the 2H+1 planes a stencil reads, of every buffer, exceed half
 * of the second-level cache (256² doubles: 3 MiB against 2 MiB here), a thread's run of planes
 * is walked tile by tile, TILE_L2_SHARE of the cache per tile (a launch over the run with the
 * buffers moved to the tile's first row, n[1] the tile's rows and first/beyond[1] its place, as
 * tblock.c launches rows): each plane is then read from memory once and from L2 the other 2H
 * times. The threads' pieces are then at least TILE_GRAIN_H * H planes (a piece's first tile
 * reads 2H planes again). bench step3d, 2 threads, tiles against none: 256³ 1.13x, 512x512x128
 * 1.06x; with the split fill, 1.13-1.20x the step before on 1 and 2 threads (docs/performance.md,
 * "3D on 2 threads").
 *
 * Measured choices: the tiles and the prefetch above pay on one machine and cost on another (a
 * Zen 4 VM with a 1 MiB L2 and a 32 MiB L3: 256³ 1.35x faster with both off, an Intel VM with a 2
 * MiB L2: 1.13x slower). Neither changes a bit of the result, so where sim_create turned one on by
 * itself and a stage runner (compiled kernels) runs the stages, the first steps of the run try
 * each combination in turn (TUNE_ROUNDS rounds, after one warm-up step) and keep the one whose
 * fastest step was fastest. */
#include "sim.h"
#include "diag.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "cpu_pool.h"
#include "grid.h"
#include "interp.h"
#include "knobs.h"
#include "sim_impl.h"
#include "simulation.h"

#define SIM_ALIGN 64
/* y tiles: the share of the second-level cache a tile's planes take, and the smallest piece of
   a thread's planes, in halo widths */
#define TILE_L2_SHARE 3
#define TILE_GRAIN_H 16
/* measured choices: the steps each candidate is timed */
#define TUNE_ROUNDS 3
/* ... and the most buffers a tiled launch moves (more: whole planes) */
#define TILE_BUFS 64
/* from this many cells on, the ghost fill of a 3D mesh along x and y is split over the threads */
#define FILL_PAR_MIN_CELLS (1 << 20)


/* ---- threads --------------------------------------------------------------------------- */

typedef void (*par_fn)(void *ctx, int64_t begin, int64_t end);

/* Runs fn over [0, n_outer) of the outermost axis: one contiguous range per thread, in pieces
 * that a thread which is done takes over from a late one (cpu_pool.h). */
static void par_for(const sim *s, par_fn fn, void *ctx, int64_t n_outer)
{
    int64_t cells = sim_cells(s);
    if (!s->pool || cells < SIM_PAR_MIN_CELLS || s->serial) {
        fn(ctx, 0, n_outer);
        return;
    }
    int one_d = s->st.p->dim == 1;
    cpu_pool_run_range(s->pool, fn, ctx, n_outer, one_d ? CPU_POOL_GRAIN_1D : s->tile_rows ? s->tile_grain : 1,
                       one_d ? 1 : cells / n_outer);
}

/* The y tiles of a 3D stage (see the header): s->tile_rows and s->tile_grain from the mode; 2D: X_STRIP. */
static void choose_tiles(sim *s)
{
    s->tile_rows = 0;
    s->tile_grain = 1;
    s->strip_x = sim_x_strip(s);
    if (s->st.p->dim != 3 || s->tile_mode < 0 || s->st.nbuf > TILE_BUFS) return;
    int64_t ny = s->st.g.n[1], nz = s->st.g.n[2], H = s->st.g.H, span = 2 * H + 1;
    int64_t rows = s->tile_mode;
    if (!rows) {
        double l2 = (double)sim_cache_bytes(2), row = (double)s->L.stride[1] * (double)s->st.esz * s->st.nbuf * span;
        if (row * (double)ny <= l2 / 2) return; /* the planes stay in L2 as they are */
        rows = (int64_t)(l2 / TILE_L2_SHARE / row) / 8 * 8;
        if (rows < 8) rows = 8;
    }
    if (rows >= ny) return;
    s->tile_rows = rows;
    int64_t per = nz / (s->threads > 1 ? s->threads : 1);
    s->tile_grain = TILE_GRAIN_H * H < per ? TILE_GRAIN_H * H : per > 1 ? per : 1;
}

/* ---- measured choices (see the header) ---------------------------------------------------- */

static void apply_candidate(sim *s, int c)
{
    choose_tiles(s);
    if (c & 1) {
        s->tile_rows = 0;
        s->tile_grain = 1;
    }
    if (s->tune_knobs & 2) s->L.prefetch = !(c & 2);
}

/* The candidates from the choices sim_create made by itself; measuring starts at the next step. */
static void arm_tuning(sim *s)
{
    s->tune_n = s->tune_left = s->tune_i = 0;
    if (!s->runner) return;
    choose_tiles(s);
    s->tune_knobs = (s->tile_mode == 0 && s->tile_rows > 0) | (!s->prefetch_forced && s->L.prefetch) << 1;
    if (!s->tune_knobs) return;
    for (int c = 0; c < 4; c++) {
        if (c & ~s->tune_knobs) continue;
        s->tune_best[s->tune_n] = HUGE_VAL;
        s->tune_cand[s->tune_n++] = c;
    }
    s->tune_left = 1 + TUNE_ROUNDS * s->tune_n;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Around a step while measuring: before (begin = 1) applies the candidate whose turn it is, after
 * records its time; after the last, applies the fastest. */
static void tune_step(sim *s, int begin, double *t0)
{
    int k = s->tune_i ? (s->tune_i - 1) % s->tune_n : 0; /* step 0: warm-up, the first candidate */
    if (begin) {
        apply_candidate(s, s->tune_cand[k]);
        *t0 = now_seconds();
        return;
    }
    double t = now_seconds() - *t0;
    if (s->tune_i && t < s->tune_best[k]) s->tune_best[k] = t;
    s->tune_i++;
    if (--s->tune_left) return;
    int best = 0;
    for (int i = 1; i < s->tune_n; i++)
        if (s->tune_best[i] < s->tune_best[best]) best = i;
    s->tune_choice = s->tune_cand[best];
    apply_candidate(s, s->tune_choice);
}

int sim_tuned_choice(const sim *s) { return !s->tune_n ? -1 : s->tune_left ? -2 : s->tune_choice; }

void sim_set_tiles(sim *s, int64_t rows)
{
    s->tile_mode = rows < 0 ? -1 : rows;
    choose_tiles(s);
    arm_tuning(s);
}

int64_t sim_tile_rows(const sim *s) { return s->tile_rows; }

/* ---- creation -------------------------------------------------------------------------- */

static double rd(const sim *s, const void *b, int64_t at)
{
    return s->single ? (double)((const float *)b)[at] : ((const double *)b)[at];
}

static void wr(const sim *s, void *b, int64_t at, double v)
{
    if (s->single) ((float *)b)[at] = (float)v;
    else ((double *)b)[at] = v;
}

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/* The boundary coefficient buffers of s->st.p: per side with a linear condition, the output number
 * of a, b, c per field and room for every output at every face cell. */
static int setup_coefs(sim *s, char *err, size_t err_len)
{
    const pj_program *p = s->st.p;
    for (int side = 0; side < 6; side++) {
        free(s->coef[side]);
        s->coef[side] = NULL;
        s->coef_valid[side] = 0;
        s->coef_uni[side] = 0;
    }
    for (int side = 0; side < 2 * p->dim; side++) {
        int any = 0, all_const = 1;
        for (int f = 0; f < p->n_fields; f++) {
            for (int c = 0; c < 4; c++) s->coef_out[f][side][c] = -1;
            if (p->bc[f][side].kind != PJ_BC_LINEAR) continue;
            any = 1;
            if (!p->bc[f][side].constant) all_const = 0;
        }
        if (!any) continue;
        const kir_kernel *k = p->bc_kernel[side];
        if (!k || k->kind != KIR_BC || k->side != side) {
            diag_set(err, err_len, "sim: side %d has a linear boundary condition but no bc kernel", side);
            return -1;
        }
        for (int o = 0; o < k->n_outputs; o++) {
            const kir_output *out = &k->outputs[o];
            if (out->slot >= 0 && out->slot < 4 && out->field >= 0 && out->field < p->n_fields &&
                s->coef_out[out->field][side][out->slot] < 0)
                s->coef_out[out->field][side][out->slot] = o;
        }
        int64_t nface = interp_face_cells(&s->L, side);
        s->coef[side] = malloc(sizeof(double) * (size_t)(k->n_outputs ? k->n_outputs : 1) * (size_t)nface);
        if (!s->coef[side]) {
            diag_set(err, err_len, "sim: %s", strerror(ENOMEM));
            return -1;
        }
        s->coef_const[side] = all_const;
    }
    return 0;
}

/* The size of cache level `want` of CPU 0 as Linux describes it (want 0: the largest level; in a
 * VM, what the VM is given: sysconf may report the whole host's), else sysconf's, else 32 MiB
 * (the largest) or 1 MiB (level 2). */
static size_t cache_level_bytes(int want)
{
    size_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 16; i++) {
        char path[96], text[32];
        int level = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f) break;
        if (fscanf(f, "%d", &level) != 1) level = 0;
        fclose(f);
        if (want && level != want) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if ((f = fopen(path, "r"))) { /* an instruction cache holds no data */
            int instruction = fgets(text, sizeof text, f) && !strncmp(text, "Instruction", 11);
            fclose(f);
            if (instruction) continue;
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "r");
        if (!f) continue;
        unsigned long long v = 0;
        char unit = 0;
        if (fgets(text, sizeof text, f) && sscanf(text, "%llu%c", &v, &unit) >= 1 && level >= best_level) {
            size_t scale = unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : unit == 'G' ? (size_t)1 << 30 : 1;
            best = (size_t)v * scale;
            best_level = level;
        }
        fclose(f);
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (!best && !want) {
        long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (v > 0) best = (size_t)v;
    }
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
    if (!best && want == 2) {
        long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
        if (v > 0) best = (size_t)v;
    }
#endif
    return best ? best : want == 1 ? (size_t)32 << 10 : want == 2 ? (size_t)1 << 20 : (size_t)32 << 20;
}

size_t sim_cache_bytes(int level)
{
    static size_t bytes[3]; /* the same answers every time: asked once */
    int i = level == 1 || level == 2 ? level : 0;
    size_t b = __atomic_load_n(&bytes[i], __ATOMIC_RELAXED);
    if (!b) {
        b = cache_level_bytes(i);
        __atomic_store_n(&bytes[i], b, __ATOMIC_RELAXED);
    }
    return b;
}

static int fits_in_memory(const grid_layout *g, const pj_program *p, char *err, size_t err_len)
{
    const char *which;
    double available = grid_host_memory_limit(&which);
    return grid_memory_check(p->n_slots * p->n_fields, grid_buffer_bytes(g, SIM_ALIGN), available, which, err,
                             err_len);
}

int sim_memory_check(const pj_program *p, int single, char *err, size_t err_len)
{
    grid_layout g;
    if (grid_layout_make(&g, p, single ? sizeof(float) : sizeof(double), SIM_ALIGN, "sim", err, err_len) < 0)
        return -1;
    return fits_in_memory(&g, p, err, err_len);
}

/* Transparent huge pages for a large buffer, where the system leaves them to the program
 * (/sys/kernel/mm/transparent_hugepage/enabled = madvise): its first writes then fault in 2 MiB
 * pages, not 4 KiB ones, 512 times fewer faults (the first evaluation of a 10^6-cell term
 * spent more time in page faults than in its kernel). Advice only: nothing fails without. */
void sim_advise_huge(void *m, size_t len)
{
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (len < 2 * huge) return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)m + page - 1) / page * page, hi = ((uintptr_t)m + len) / page * page;
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

/* The SIM_ALIGN-aligned start of allocation m (made with SIM_ALIGN bytes to spare). */
static void *aligned_base(void *m)
{
    return (void *)(((uintptr_t)m + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN);
}

sim *sim_create(const pj_program *p, const sim_options *opt, char *err, size_t err_len)
{
    grid_layout g;
    size_t esz = opt && opt->single ? sizeof(float) : sizeof(double);
    if (grid_layout_block(&g, p, opt ? opt->block : NULL, esz, SIM_ALIGN, "sim", err, err_len) < 0) return NULL;
    if (fits_in_memory(&g, p, err, err_len) < 0) return NULL;
    sim *s = calloc(1, sizeof *s);
    if (!s) {
        diag_set(err, err_len, "sim: %s", strerror(ENOMEM));
        return NULL;
    }
    if (state_init(&s->st, p, &g, opt ? opt->ghosts : NULL, opt ? opt->seed : 0, "sim", err, err_len) < 0) {
        free(s);
        return NULL;
    }
    s->single = opt && opt->single;
    s->threads = opt && opt->threads > 0 ? opt->threads : 0;
    for (int a = 0; a < 3; a++) s->L.stride[a] = g.stride[a];
    s->fill_buf = calloc((size_t)p->n_fields, sizeof *s->fill_buf);
    s->coef_out = calloc((size_t)p->n_fields, sizeof *s->coef_out);
    if (!s->fill_buf || !s->coef_out) goto oom;
    /* calloc, not aligned_alloc + memset: a large block comes from fresh pages the kernel hands
       out zeroed, so nothing is touched here (a 10^6-cell term's six buffers cost ~50 % of its
       cached start when written with zeros); a page is made when first written, and one that
       is only ever read (slot 0 of a term's output) never is. SIM_ALIGN more bytes make room
       to align cell (0,0,0)'s allocation. */
    size_t bytes = round_up((int64_t)(s->st.g.elems * s->st.esz), SIM_ALIGN);
    for (int i = 0; i < s->st.nbuf; i++) {
        s->st.mem[i] = calloc(1, bytes + SIM_ALIGN + SIM_PAGE);
        if (!s->st.mem[i]) goto oom;
        sim_advise_huge(s->st.mem[i], bytes + SIM_ALIGN + SIM_PAGE);
        s->st.buf[i] = (char *)aligned_base(s->st.mem[i]) + sim_page_offset(i, s->st.nbuf) + (size_t)s->st.g.origin_off * s->st.esz;
    }
    s->L.buf = s->st.buf;
    s->L.nonfinite = &s->nonfinite;
    s->L.seed = s->st.seed;
    s->L.prefetch = (double)bytes * s->st.nbuf > (double)sim_cache_bytes(0);
    s->L.param = s->st.param;
    for (int a = 0; a < 3; a++) {
        s->L.n[a] = g.n[a];
        s->L.first[a] = g.first[a];
        s->L.beyond[a] = g.beyond[a];
        s->L.origin[a] = g.origin[a];
        s->L.h[a] = g.h[a];
    }
    if (setup_coefs(s, err, err_len) < 0) {
        sim_destroy(s);
        return NULL;
    }
    /* no pool (one thread) when asked for one, or when threads cannot start: runs serially */
    if (s->threads != 1) s->pool = cpu_pool_create(s->threads);
    s->threads = s->pool ? cpu_pool_threads(s->pool) : 1;
    /* the default threads (none asked for) are measured against one on the first steps */
    thread_choice_init(&s->tc, !(opt && opt->threads > 0) && s->pool && sim_cells(s) >= SIM_PAR_MIN_CELLS);
    s->runner = NULL;
    /* temporal blocking (tblock.c): off, on or when it pays, and forced sizes, for tests and benchmarks */
    const char *tb = knob(KNOB_TBLOCK);
    int mode = !tb || !strcmp(tb, "auto") ? 0 : !strcmp(tb, "off") || !strcmp(tb, "0") ? -1 : 1;
    sim_set_tblock(s, mode, (int)knob_int(KNOB_TBLOCK_K, 0), (int)knob_int(KNOB_TBLOCK_ROWS, 0));
    int64_t tl = knob_int(KNOB_TBLOCK_LAUNCH, 0); /* rows per launch in the rings */
    s->tb_launch = tl > 0 ? (int)tl : 0;
    const char *ts = knob(KNOB_TBLOCK_STRIP); /* cells per strip of a launch: n, or off */
    s->tb_strip = ts && !strcmp(ts, "off") ? -1 : knob_int(KNOB_TBLOCK_STRIP, 0) > 0 ? (int)knob_int(KNOB_TBLOCK_STRIP, 0) : 0;
    const char *tt = knob(KNOB_TBLOCK_TILE); /* a 3D block's tiles: ROWS of y, ROWSxCELLS (and of x), or off */
    int t_y = 0, t_x = 0;
    if (tt && sscanf(tt, "%dx%d", &t_y, &t_x) < 1) t_y = 0;
    s->tb_tile = tt && !strcmp(tt, "off") ? -1 : t_y > 0 ? t_y : 0;
    s->tb_tile_x = s->tb_tile > 0 && t_x > 0 ? t_x : 0;
    const char *ty = knob(KNOB_TILE_Y); /* off, auto or rows: forced y tiles */
    int64_t rows = knob_int(KNOB_TILE_Y, 0);
    sim_set_tiles(s, !ty || !strcmp(ty, "auto") ? 0 : !strcmp(ty, "off") ? -1 : rows > 0 ? rows : -1);
    return s;
oom:
    diag_set(err, err_len, "sim: %s", strerror(ENOMEM));
    sim_destroy(s);
    return NULL;
}

void sim_destroy(sim *s)
{
    if (!s) return;
    cpu_pool_destroy(s->pool);
    if (s->st.mem)
        for (int i = 0; i < s->st.nbuf; i++) free(s->st.mem[i]);
    state_free(&s->st);
    free(s->fill_buf);
    free(s->coef_out);
    for (int i = 0; i < 6; i++) free(s->coef[i]);
    tblock_free(s->tb);
    free(s);
}

/* ---- params ---------------------------------------------------------------------------- */

int sim_set_param(sim *s, const char *name, double value)
{
    simulation m = {&sim_exec_ops, s, &s->st};
    return simulation_set_param(&m, name, value);
}

const double *sim_params(const sim *s) { return s->st.param; }

void sim_set_stage_runner(sim *s, sim_stage_runner run, void *ctx)
{
    s->runner = run;
    s->runner_ctx = run ? ctx : NULL;
    arm_tuning(s);
}

/* ---- ghost fill ------------------------------------------------------------------------ */

const double *sim_side_coefs(sim *s, int side, double t)
{
    if (s->coef_const[side] && s->coef_valid[side]) return s->coef[side];
    kir_launch bl = s->L;
    bl.t = t;
    interp_bc(s->st.p->bc_kernel[side], &bl, s->single, s->coef[side]);
    sim_coef_uniform(s, side);
    s->coef_valid[side] = 1;
    return s->coef[side];
}

sim_fill_span sim_full_span(const sim *s)
{
    int last = s->st.p->dim - 1;
    sim_fill_span sp = {s->st.g.n[last], s->st.g.lo[last], s->st.g.lo[last] + s->st.g.ext[last], 0, 0, 3, 0, 0, 0, 0};
    return sp;
}

/* Fills the ghost layers of one buffer along axis a, over the allocated extent of the other
 * axes (their ghost layers included, so that the last axis filled sets the corners; along the
 * last axis the span's range). Ghost m
 * (1..H from the face) pairs with interior cell m mirrored about the face, at distance
 * d = (2m-1)h: periodic copies the cell n-m (low side) / m-1 (high side), mirror copies the
 * partner, linear solves a*(g+u)/2 + b*(g-u)/d = c for g. Rows in another axis' ghost layers
 * take the coefficients of the nearest boundary cell (a later axis overwrites them anyway). */
/* The common cases without per-cell decisions: both sides periodic, or copies of interior
 * values (zero gradient) — whole rows at a time along y and z, H values per row along x. */
static int fill_axis_copy(sim *s, int f, void *b, int a, const sim_fill_span *sp)
{
    ghost_rule lo_rule = s->st.plan.rule[f * 6 + 2 * a], hi_rule = s->st.plan.rule[f * 6 + 2 * a + 1];
    if (lo_rule == GHOST_LINEAR || hi_rule == GHOST_LINEAR || lo_rule != hi_rule || s->st.plan.set.hook[2 * a] ||
        s->st.plan.set.hook[2 * a + 1] || s->st.plan.set.exchanged[2 * a] || s->st.plan.set.exchanged[2 * a + 1])
        return 0;
    int periodic = lo_rule == GHOST_PERIODIC;
    int H = s->st.g.H, last = s->st.p->dim - 1;
    int do_lo = a != last || (sp->sides & 1), do_hi = a != last || (sp->sides & 2);
    int64_t n = a == last ? sp->n_last : s->st.g.n[a], st = s->L.stride[a];
    size_t esz = s->st.esz;
    char *base = b;
    if (a > 0) {
        /* a ghost row (plane line) of the full x extent is a copy of one interior row */
        int b1 = a == 2 ? 1 : 2;
        int64_t sq = s->L.stride[b1], q0, q1, x0, x1;
        sim_span_range(s, sp, b1, &q0, &q1);
        sim_span_range(s, sp, 0, &x0, &x1);
        size_t len = (size_t)(x1 - x0) * esz;
        for (int64_t q = q0; q < q1; q++) {
            int64_t line = x0 + q * sq;
            for (int m = 1; m <= H; m++) {
                int64_t lo_src = periodic ? n - m : m - 1, hi_src = periodic ? m - 1 : n - m;
                /* signed offsets: a ghost row lies before cell (0,0,0) */
                if (do_lo)
                    memcpy(base + (line - m * st) * (int64_t)esz, base + (line + lo_src * st) * (int64_t)esz, len);
                if (do_hi)
                    memcpy(base + (line + (n - 1 + m) * st) * (int64_t)esz, base + (line + hi_src * st) * (int64_t)esz,
                           len);
            }
        }
        return 1;
    }
    if (!do_lo || !do_hi) return 0; /* 1D tiles do not exist: the general loop */
    /* along x: H values at each end of every row (typed copies: no memcpy call per value).
       The rows of one plane, ghosts included, are evenly spaced by stride[1]; 1D: one row. */
    const int64_t st1 = s->L.stride[1];
    int64_t nrows = 1, first = 0;
    if (s->st.p->dim == 2) { /* rows of the span */
        nrows = sp->q1 - sp->q0;
        first = sp->q0 * st1;
    } else if (s->st.p->dim == 3 && sp->q1 - sp->q0 > 1) { /* plane by plane (padded planes: grid.h) */
        sim_fill_span one = *sp;
        for (int64_t q = sp->q0; q < sp->q1; q++) {
            one.q0 = q;
            one.q1 = q + 1;
            fill_axis_copy(s, f, b, a, &one);
        }
        return 1;
    } else if (s->st.p->dim == 3) { /* whole planes of the span, or a tile's rows of one plane */
        int64_t m0 = sp->m1 > sp->m0 ? sp->m0 : s->st.g.lo[1];
        nrows = sp->m1 > sp->m0 ? (sp->m1 - sp->m0) : s->st.g.ext[1] * (sp->q1 - sp->q0);
        first = m0 * st1 + sp->q0 * s->L.stride[2];
    }
    const int64_t lo_src1 = periodic ? n - 1 : 0, hi_src1 = periodic ? 0 : n - 1;
#define FILL_ROWS(T)                                                                             \
    {                                                                                            \
        T *row = (T *)b + first;                                                                 \
        if (H == 1) {                                                                            \
            for (int64_t r = 0; r < nrows; r++, row += st1) {                                    \
                row[-1] = row[lo_src1];                                                          \
                row[n] = row[hi_src1];                                                           \
            }                                                                                    \
        } else {                                                                                 \
            for (int64_t r = 0; r < nrows; r++, row += st1)                                      \
                for (int m = 1; m <= H; m++) {                                                   \
                    row[-m] = row[periodic ? n - m : m - 1];                                     \
                    row[n - 1 + m] = row[periodic ? m - 1 : n - m];                              \
                }                                                                                \
        }                                                                                        \
    }
    if (esz == sizeof(double))
        FILL_ROWS(double)
    else
        FILL_ROWS(float)
#undef FILL_ROWS
    return 1;
}

void sim_fill_axis(sim *s, int f, void *b, int a, const double *cf[2], const sim_fill_span *sp)
{
    if (fill_axis_copy(s, f, b, a, sp) || sim_fill_linear(s, f, b, a, cf, sp)) return;
    int b0 = a == 0 ? 1 : 0, b1 = a == 2 ? 1 : 2, H = s->st.g.H, last = s->st.p->dim - 1;
    int64_t n = a == last ? sp->n_last : s->st.g.n[a], st = s->L.stride[a];
    double ha = s->L.h[a];
    int64_t nface0 = s->st.g.n[b0], nface = s->st.g.n[b0] * s->st.g.n[b1];
    int64_t q0, q1, r0, r1;
    sim_span_range(s, sp, b1, &q0, &q1);
    sim_span_range(s, sp, b0, &r0, &r1);
    for (int64_t q = q0; q < q1; q++)
        for (int64_t r = r0; r < r1; r++) {
            int64_t line = r * s->L.stride[b0] + q * s->L.stride[b1]; /* index 0 along a */
            int64_t fc = sim_face_index(s, sp, b0, r) + nface0 * sim_face_index(s, sp, b1, q);
            for (int hi = 0; hi < 2; hi++) {
                int side = 2 * a + hi;
                if (s->st.plan.set.hook[side] || s->st.plan.set.exchanged[side]) continue; /* filled by the hook, exchange */
                if (a == last && !(sp->sides & (1 << hi))) continue; /* not a side of this span */
                ghost_rule rule = s->st.plan.rule[f * 6 + side];
                for (int m = 1; m <= H; m++) {
                    int64_t g = hi ? n - 1 + m : -m;       /* the ghost cell */
                    int64_t in = hi ? n - m : m - 1;       /* its mirror inside */
                    double v;
                    if (rule == GHOST_PERIODIC) {
                        v = rd(s, b, line + (hi ? m - 1 : n - m) * st);
                    } else if (rule == GHOST_LINEAR) {
                        const double *C = cf[hi];
                        const int *oi = s->coef_out[f][side];
                        double ca = oi[0] >= 0 ? C[oi[0] * nface + fc] : 0;
                        double cb = oi[1] >= 0 ? C[oi[1] * nface + fc] : 0;
                        double cc = oi[2] >= 0 && !s->st.plan.set.homogeneous ? C[oi[2] * nface + fc] : 0;
                        double d = (2 * m - 1) * ha, u = rd(s, b, line + in * st);
                        v = (cc - u * (ca / 2 - cb / d)) / (ca / 2 + cb / d);
                        if (m == 2 && oi[3] >= 0 && n >= 2) {
                            /* lap(u) = c2 at the face: the mean of the second differences at the
                               first cell and the first ghost, (u1 - u0 - g1 + g2) / (2 h^2) */
                            double c2 = s->st.plan.set.homogeneous ? 0 : C[oi[3] * nface + fc];
                            double g1 = rd(s, b, line + (hi ? n : -1) * st);
                            double u0 = rd(s, b, line + (hi ? n - 1 : 0) * st), u1 = rd(s, b, line + (hi ? n - 2 : 1) * st);
                            v = 2 * ha * ha * c2 + g1 + u0 - u1;
                        }
                    } else {
                        v = rd(s, b, line + in * st);
                    }
                    wr(s, b, line + g * st, v);
                }
            }
        }
}

/* The fills along one or two axes (x, y of a 3D mesh) of planes [begin, end) of the allocated z
 * extent, axis after axis. */
typedef struct fill_job {
    sim *s;
    int n_axes, axis[2];
    const double *cf[2][2];
} fill_job;

static void run_fill_range(void *ctx, int64_t begin, int64_t end)
{
    fill_job *j = ctx;
    sim *s = j->s;
    sim_fill_span span = sim_full_span(s);
    span.q0 = s->st.g.lo[2] + begin;
    span.q1 = s->st.g.lo[2] + end;
    for (int k = 0; k < j->n_axes; k++)
        for (int f = 0; f < s->st.p->n_fields; f++)
            if (f >= 64 || !(s->fill_skip >> f & 1)) sim_fill_axis(s, f, s->fill_buf[f], j->axis[k], j->cf[k], &span);
}

/* The boundary coefficients of the sides of axis a with a linear rule at time t (NULL: none). */
static void axis_coefs(sim *s, int a, double t, const double *cf[2])
{
    for (int hi = 0; hi < 2; hi++) {
        cf[hi] = NULL;
        if (s->coef[2 * a + hi] && !s->st.plan.set.hook[2 * a + hi] && !s->st.plan.set.exchanged[2 * a + hi])
            cf[hi] = sim_side_coefs(s, 2 * a + hi, t);
    }
}

static void axis_hooks(sim *s, int a, double t)
{
    for (int hi = 0; hi < 2; hi++) {
        int side = 2 * a + hi;
        if (s->st.plan.set.hook[side] && !s->st.failed &&
            s->st.plan.set.hook[side](s->st.plan.set.hook_ctx[side], side, &s->st.g, s->fill_buf, s->st.p->n_fields, t, s->st.error,
                                   sizeof s->st.error) < 0)
            s->st.failed = 1;
    }
}

void sim_fill_ghosts(sim *s, int slot, double t)
{
    const pj_program *p = s->st.p;
    /* the buffers the stages read: a coefficient (a field without an eq) always from slot 0 */
    for (int f = 0; f < p->n_fields; f++) s->fill_buf[f] = s->st.buf[(p->field_has_eq[f] ? slot : 0) * p->n_fields + f];
    const int split = p->dim == 3 && s->pool && sim_cells(s) >= FILL_PAR_MIN_CELLS;
    for (int i = 0; i < p->dim; i++) {
        int a = s->st.plan.axis_order[i];
        if (split && a != 2) {
            /* x and y of a large 3D mesh: plane by plane over the threads, both in one launch
               when no hook runs between them and the second's coefficients (which may read the
               fields) are not needed */
            fill_job j = {s, 1, {a, 0}, {{NULL, NULL}, {NULL, NULL}}};
            axis_coefs(s, a, t, j.cf[0]);
            int b = i + 1 < p->dim ? s->st.plan.axis_order[i + 1] : 2;
            if (b != 2 && !s->st.plan.set.hook[2 * a] && !s->st.plan.set.hook[2 * a + 1] && !s->coef[2 * b] &&
                !s->coef[2 * b + 1]) {
                j.axis[1] = b;
                j.n_axes = 2;
            }
            cpu_pool_run_range(s->pool, run_fill_range, &j, s->st.g.ext[2], 1, s->st.g.ext[1] * 2 * s->st.g.H * j.n_axes);
            for (int k = 0; k < j.n_axes; k++) axis_hooks(s, j.axis[k], t);
            i += j.n_axes - 1;
            continue;
        }
        const double *cf[2];
        axis_coefs(s, a, t, cf);
        sim_fill_span span = sim_full_span(s);
        for (int f = 0; f < p->n_fields; f++)
            if (f >= 64 || !(s->fill_skip >> f & 1)) sim_fill_axis(s, f, s->fill_buf[f], a, cf, &span);
        axis_hooks(s, a, t);
    }
    if (s->st.plan.set.exchange && !s->st.failed &&
        s->st.plan.set.exchange(s->st.plan.set.exchange_ctx, &s->st.g, s->fill_buf, p->n_fields, s->st.error, sizeof s->st.error) < 0)
        s->st.failed = 1;
}

sim_state *sim_state_of(sim *s) { return &s->st; }

const char *sim_error(const sim *s) { return s->st.failed ? s->st.error : NULL; }

void sim_skip_fill(sim *s, int f, int skip)
{
    if (f < 0 || f >= 64) return;
    s->fill_skip = skip ? s->fill_skip | (uint64_t)1 << f : s->fill_skip & ~((uint64_t)1 << f);
}


/* ---- stepping -------------------------------------------------------------------------- */

typedef struct stage_job { sim *s; int stage; const kir_kernel *k; } stage_job;

/* The stage over planes [begin, end) in y tiles of s->tile_rows rows (2D: rows in x strips of
 * s->strip_x cells): a launch per tile, the buffers moved to its first cell (at most TILE_BUFS). */
static int run_tiles(sim *s, int stage, int64_t begin, int64_t end)
{
    if (s->st.nbuf > TILE_BUFS) return 0;
    kir_launch L = s->L;
    void *bufs[TILE_BUFS];
    L.buf = bufs;
    for (int64_t nx = s->st.g.n[0], x0 = 0, w; s->strip_x && x0 < nx; x0 += w) {
        w = nx - x0 < s->strip_x ? nx - x0 : s->strip_x;
        for (int b = 0; b < s->st.nbuf; b++) bufs[b] = (char *)s->L.buf[b] + x0 * (int64_t)s->st.esz;
        L.n[0] = w;
        L.first[0] = s->L.first[0] + x0;
        L.beyond[0] = s->L.beyond[0] + (nx - x0 - w);
        s->runner(s->runner_ctx, stage, &L, begin, end);
    }
    if (s->strip_x) return 1;
    const int64_t ny = s->st.g.n[1], rows = s->tile_rows, step = s->L.stride[1] * (int64_t)s->st.esz;
    for (int64_t y0 = 0; y0 < ny; y0 += rows) {
        int64_t n1 = ny - y0 < rows ? ny - y0 : rows;
        for (int b = 0; b < s->st.nbuf; b++) bufs[b] = (char *)s->L.buf[b] + y0 * step;
        L.n[1] = n1;
        L.first[1] = s->L.first[1] + y0;
        L.beyond[1] = s->L.beyond[1] + (ny - y0 - n1);
        s->runner(s->runner_ctx, stage, &L, begin, end);
    }
    return 1;
}

static void run_stage_range(void *ctx, int64_t begin, int64_t end)
{
    stage_job *j = ctx;
    if (j->s->runner && (j->s->tile_rows || j->s->strip_x) && run_tiles(j->s, j->stage, begin, end)) return;
    if (j->s->runner) j->s->runner(j->s->runner_ctx, j->stage, &j->s->L, begin, end);
    else interp_stage(j->k, &j->s->L, j->s->single, begin, end);
}

static void run_init_range(void *ctx, int64_t begin, int64_t end)
{
    stage_job *j = ctx;
    interp_stage(j->k, &j->s->L, j->s->single, begin, end);
}

typedef struct eval_job {
    const sim *s;
    sim_stage_runner run;
    void *ctx;
    int stage;
    const kir_kernel *k;
    const kir_launch *L;
} eval_job;

static void run_eval_range(void *ctx, int64_t begin, int64_t end)
{
    eval_job *j = ctx;
    if (j->run) j->run(j->ctx, j->stage, j->L, begin, end);
    else interp_stage(j->k, j->L, j->s->single, begin, end);
}

int sim_run_kernel(sim *s, int read_slot, double t, double dt, sim_stage_runner run, void *ctx, int stage,
             const kir_kernel *k, kir_launch *L)
{
    if (s->st.failed) return -1;
    if (read_slot >= 0) sim_fill_ghosts(s, read_slot, t);
    if (s->st.failed) return -1;
    s->L.t = t;
    s->L.dt = dt;
    if (!L) {
        L = &s->L;
        if (!run) {
            run = s->runner;
            ctx = s->runner_ctx;
        }
    } else {
        L->t = t;
        L->dt = dt;
    }
    eval_job j = {s, run, ctx, stage, k, L};
    par_for(s, run_eval_range, &j, s->st.g.n[s->st.p->dim - 1]);
    s->L.t = s->st.t;
    return 0;
}

void sim_init(sim *s)
{
    size_t bytes = round_up((int64_t)(s->st.g.elems * s->st.esz), SIM_ALIGN);
    for (int i = 0; i < s->st.nbuf; i++) memset((char *)s->st.buf[i] - (size_t)s->st.g.origin_off * s->st.esz, 0, bytes);
    s->st.t = 0;
    s->st.steps = 0;
    s->L.t = 0;
    s->L.dt = 0;
    s->L.step = 0;
    s->L.stage = 0;
    if (s->st.p->init) {
        stage_job j = {s, -1, s->st.p->init};
        par_for(s, run_init_range, &j, s->st.g.n[s->st.p->dim - 1]);
    }
}

/* ---- the step (state.h's stepper) ------------------------------------------------------ */

int sim_fill_slot(void *x, int slot, double t, char *err, size_t len)
{
    sim *s = x;
    sim_fill_ghosts(s, slot, t);
    if (!s->st.failed) return 0;
    diag_set(err, len, "%s", s->st.error);
    return -1;
}

/* Stage i over the interior on the sim's threads; while the first steps measure (see the
 * header), the step's time runs from its first stage's launch to its last's end. */
int sim_stage(void *x, int i, const stage_clock *c, char *err, size_t len)
{
    (void)err;
    (void)len;
    sim *s = x;
    const pj_program *p = s->st.p;
    if (i == 0 && s->tune_left > 0) {
        s->tuning = 1;
        tune_step(s, 1, &s->tune_t0);
    } else if (i == 0 && s->tc.active) { /* the tiles and prefetch first, then the threads */
        int park;
        s->serial = thread_choice_begin(&s->tc, &park);
        if (!s->serial && !s->pool && !(s->pool = cpu_pool_create(s->threads))) s->serial = 1;
        if (park && !s->tc.calibrating) { /* one thread chosen: the workers leave (a thread asleep */
            cpu_pool_destroy(s->pool);    /* still cost a loaded machine's runs time), and come */
            s->pool = NULL;               /* back when it is measured again (or for tblock.c) */
        } else if (park) cpu_pool_park(s->pool); /* no worker spins through the serial steps */
        s->tc_t0 = now_seconds();
    }
    s->L.t = c->t;
    s->L.dt = c->dt;
    s->L.step = c->step;
    s->L.stage = c->stage;
    stage_job j = {s, i, p->stages[i].kernel};
    par_for(s, run_stage_range, &j, s->st.g.n[p->dim - 1]);
    if (i == p->n_stages - 1 && s->tuning) {
        s->tuning = 0;
        tune_step(s, 0, &s->tune_t0);
    } else if (i == p->n_stages - 1 && s->tc.active && s->tc_t0 > 0) {
        thread_choice_end(&s->tc, now_seconds() - s->tc_t0);
        s->tc_t0 = 0;
    }
    return 0;
}

int sim_step(sim *s, double dt)
{
    simulation m = {&sim_exec_ops, s, &s->st};
    return simulation_step(&m, dt, NULL, 0); /* one step: no sweep */
}

int sim_step_n(sim *s, double dt, int64_t n)
{
    simulation m = {&sim_exec_ops, s, &s->st};
    return simulation_step_n(&m, dt, n, NULL, 0);
}

int sim_eval(sim *s, pj_kernel_id id, double t, double dt)
{
    if (s->st.failed) return -1;
    const kir_kernel *k = program_kernel(s->st.p, id);
    if (!k) {
        snprintf(s->st.error, sizeof s->st.error, "the program has no kernel %d", id);
        s->st.failed = 1;
        return -1;
    }
    sim_fill_ghosts(s, id >= 0 ? s->st.p->stages[id].read_slot : 0, t); /* named kernels read slot 0 */
    if (s->st.failed) return -1;
    s->L.t = t;
    s->L.dt = dt;
    /* rand() in an implicit equation: the same numbers at every evaluation within a step (F and its
       Jacobian must describe one function), new ones at the next */
    s->L.step = s->st.steps;
    s->L.stage = 1;
    stage_job j = {s, id, k};
    par_for(s, run_stage_range, &j, s->st.g.n[s->st.p->dim - 1]);
    s->L.t = s->st.t;
    return 0;
}

void sim_set_clock(sim *s, double t, int64_t steps)
{
    simulation m = {&sim_exec_ops, s, &s->st};
    simulation_set_clock(&m, t, steps);
}

sim_state *sim_get_state(sim *s) { return &s->st; }

const grid_layout *sim_layout(const sim *s) { return &s->st.g; }

/* ---- queries --------------------------------------------------------------------------- */

static int64_t cell_at(const sim *s, int64_t i, int64_t j, int64_t k)
{
    return i + j * s->L.stride[1] + k * s->L.stride[2];
}

int sim_check_finite(const sim *s, sim_nan_report *report)
{
    simulation m = {&sim_exec_ops, (sim *)s, (sim_state *)&s->st};
    return simulation_check_finite(&m, report, NULL, 0);
}

double sim_time(const sim *s) { return s->st.t; }
int64_t sim_steps(const sim *s) { return s->st.steps; }
int64_t sim_cells(const sim *s) { return s->st.g.n[0] * s->st.g.n[1] * s->st.g.n[2]; }
int sim_threads(const sim *s) { return s->threads; }
int sim_threads_measured_slower(const sim *s) { return s->tc.active && !s->tc.calibrating && s->tc.chosen_serial; }
int sim_threads_in_use(const sim *s)
{
    if (sim_cells(s) < SIM_PAR_MIN_CELLS) return 1; /* par_for runs such meshes serially */
    return sim_threads_measured_slower(s) ? 1 : s->threads;
}
const pj_program *sim_program(const sim *s) { return s->st.p; }

void sim_get_field(const sim *s, int f, double *out)
{
    const void *b = s->st.buf[f];
    for (int64_t k = 0; k < s->st.g.n[2]; k++)
        for (int64_t j = 0; j < s->st.g.n[1]; j++) {
            int64_t row = cell_at(s, 0, j, k);
            if (!s->single) { /* a row at a time */
                memcpy(out, (const double *)b + row, sizeof(double) * (size_t)s->st.g.n[0]);
                out += s->st.g.n[0];
                continue;
            }
            for (int64_t i = 0; i < s->st.g.n[0]; i++) *out++ = rd(s, b, row + i);
        }
}

void sim_set_field(sim *s, int f, const double *in)
{
    void *b = s->st.buf[f];
    for (int64_t k = 0; k < s->st.g.n[2]; k++)
        for (int64_t j = 0; j < s->st.g.n[1]; j++) {
            int64_t row = cell_at(s, 0, j, k);
            if (!s->single) {
                memmove((double *)b + row, in, sizeof(double) * (size_t)s->st.g.n[0]);
                in += s->st.g.n[0];
                continue;
            }
            for (int64_t i = 0; i < s->st.g.n[0]; i++) wr(s, b, row + i, *in++);
        }
}

const kir_launch *sim_launch(sim *s) { return &s->L; }
void sim_set_spacing(sim *s, const double h[3])
{
    for (int a = 0; a < s->st.p->dim; a++) s->L.h[a] = h[a];
}
void sim_set_prefetch(sim *s, int on)
{
    s->L.prefetch = on != 0;
    s->prefetch_forced = 1;
    arm_tuning(s);
}

int sim_take_nonfinite(sim *s)
{
    return __atomic_exchange_n(&s->nonfinite, 0, __ATOMIC_RELAXED) != 0;
}

int sim_replace_program(sim *s, const pj_program *p2, char *err, size_t err_len)
{
    const pj_program *p = s->st.p;
    if (state_check_program(&s->st, p2, err, err_len) < 0) return -1;
    s->st.p = p2;
    tblock_free(s->tb); /* its scratch has the old program's shape */
    s->tb = NULL;
    int rc = setup_coefs(s, err, err_len);
    if (rc == 0 && (rc = state_adopt(&s->st, p2)) < 0) diag_set(err, err_len, "sim: out of memory");
    if (rc < 0) {
        s->st.p = p;
        setup_coefs(s, NULL, 0);
        return -1;
    }
    return 0;
}
