/* sim_impl.h — the inside of a sim (sim.c), shared with the modules that step it in other ways
 * (tblock.c: several steps per sweep). Not a public header: library code only. */
#ifndef PJ_SIM_IMPL_H
#define PJ_SIM_IMPL_H
#include "cpu_pool.h"
#include "grid.h"
#include "sim.h"
#include "state.h"
#include "thread_choice.h"

/* 3D tiles, auto: the ring budgets measured on a run's first blocks (tblock_size.c) */
#define TBLOCK_CANDS 5
#define TBLOCK_MAX_K 32 /* steps per sweep at most */

struct sim {
    sim_state st;          /* program, layout, plan, buffers, clock, params, failure (state.h) */
    int single;
    int threads;
    cpu_pool *pool;        /* NULL: one thread */
    void **fill_buf;       /* per field: the buffer a ghost fill works on (sim_fill_ghosts) */
    uint64_t fill_skip;    /* fields (below 64) whose ghosts sim_fill_ghosts leaves alone (sim_skip_fill) */
    kir_launch L;
    int32_t nonfinite;     /* set by stage kernels that stored a NaN/Inf (kir_launch.nonfinite) */
    sim_stage_runner runner;
    void *runner_ctx;
    /* boundary coefficients per side: [n_outputs][face cells], and per field and side the
     * output numbers of a, b, c (-1: absent, reads as 0) */
    double *coef[6];
    int coef_valid[6], coef_const[6];
    uint64_t coef_uni[6];  /* bit o: output o of s->coef[side] has the same bits on every face cell */
    int (*coef_out)[6][4];
    struct tblock *tb;     /* temporal blocking (tblock.c), NULL until first used */
    int tb_mode;           /* -1 off, 0 when it pays, 1 always (tblock.h) */
    int tb_k, tb_rows;     /* forced steps per sweep and rows per band (0: chosen) */
    int tb_launch;         /* forced rows per kernel launch in the rings (0: chosen) */
    int tb_strip;          /* forced cells per strip of a launch in 2D (0: chosen, -1: whole rows) */
    int tb_tile;           /* forced rows of y per tile of a 3D block (0: chosen, -1: whole planes) */
    int tb_tile_x;         /* forced cells of x per tile of a 3D block (0: chosen) */
    double tb_sec[TBLOCK_CANDS]; /* 3D tiles, auto: the best seconds per step measured of each candidate */
    int tb_runs[TBLOCK_CANDS], tb_pick; /* the sweeps measured of each; the one kept + 1 (0: still measuring) */
    int tb_warm;                        /* 3D tiles, auto: the first sweep (not measured) is done */
    int tb_allocs;         /* rings allocated (tblock.c), a count: measuring allocates them once */
    int64_t tb_swept;      /* steps taken in blocked sweeps (sim_tblock_done) */
    int tb_last_k;         /* the last whole sweep's steps (not cut short by its block's end), 3D
                              tile rows of y and cells of x */
    int64_t tb_last_ty, tb_last_tx;
    int64_t tile_mode;     /* y tiles of a 3D stage: -1 off, 0 when they pay, > 0 forced rows */
    int64_t tile_rows;     /* rows per y tile in effect (0: whole planes) */
    int64_t tile_grain;    /* planes: the threads' pieces start at multiples of it */
    int64_t strip_x;       /* cells per x strip of a 2D stage in effect (0: whole rows; sim_x_strip) */
    /* choices made by measurement (sim.c, "measured choices"): candidate c's bit 0 turns the y
     * tiles off, bit 1 the row prefetch; the first steps try them in turn */
    int prefetch_forced;   /* sim_set_prefetch was called: the prefetch is not measured */
    int tune_knobs;        /* bit 0: the tiles are measured, bit 1: the prefetch */
    int tune_n, tune_cand[4], tune_choice;
    int tune_left, tune_i; /* steps still to measure, steps measured */
    double tune_best[4];   /* the fastest step seen under each candidate, seconds */
    double tune_t0;        /* when the step being measured started */
    int tuning;            /* 1 while a step is measured */
    /* default threads: whether they pay, measured on the steps (thread_choice.h); serial: this
       step's stages run on the calling thread */
    thread_choice tc;
    int serial;
    double tc_t0;
};

/* below this many cells a stage runs on the calling thread: waking threads costs more */
#define SIM_PAR_MIN_CELLS 4096

/* What one ghost fill along an axis covers (sim_fill_axis): the whole buffer of the layout, or
 * a band of the last axis (a tile of tblock.c) with its own count of cells along that axis. */
typedef struct sim_fill_span {
    int64_t n_last;        /* the buffer's interior cells along the last axis */
    int64_t q0, q1;        /* the indices of the last axis covered when filling another axis */
    int64_t off;           /* buffer index + off = mesh index along the last axis */
    int wrap;              /* 1: mesh indices outside the mesh wrap (a periodic last axis) */
    int sides;             /* filling the last axis: bit 0 its low side, bit 1 its high side */
    int64_t m0, m1;        /* 3D: the rows [m0, m1) of axis y covered when filling x or z (a tile
                              of tblock.c); m1 <= m0: the allocated extent */
    int64_t x0, x1;        /* 3D: the cells [x0, x1) of axis x covered when filling y or z (a tile
                              of tblock.c); x1 <= x0: the allocated extent */
} sim_fill_span;

/* Fills the ghost layers of buffer b (field f) along axis a over `span` with the boundary
 * coefficients cf[lo/hi] (NULL where the side has no linear rule): sim_fill_ghosts' per-axis
 * work. Sides with a hook or exchanged are left alone. */
void sim_fill_axis(sim *s, int f, void *b, int a, const double *cf[2], const sim_fill_span *span);
/* sim_fill_axis for the sides of axis a that have a linear rule (sim_fill.c): 1 when it filled
 * them (double precision, no lap(u) = c2 condition with H >= 2), 0 when the general loop must. */
int sim_fill_linear(sim *s, int f, void *b, int a, const double *cf[2], const sim_fill_span *span);
/* Sets s->coef_uni[side] from the values now in s->coef[side] (sim_fill.c; after each compute). */
void sim_coef_uniform(sim *s, int side);
/* The index range [*lo, *hi) of axis b covered when filling another axis: the span's along the
 * last axis (and its rows of y, cells of x in 3D tiles), else the allocated extent. */
void sim_span_range(const sim *s, const sim_fill_span *sp, int b, int64_t *lo, int64_t *hi);
/* The mesh index of buffer index q along axis b, for a boundary coefficient: clamped to the
 * mesh, or wrapped along a periodic last axis of a tile. */
int64_t sim_face_index(const sim *s, const sim_fill_span *sp, int b, int64_t q);
/* The whole-buffer span of s's layout. */
sim_fill_span sim_full_span(const sim *s);
/* The boundary coefficients of `side` at time t (computed into s->coef[side], once when constant). */
const double *sim_side_coefs(sim *s, int side, double t);

/* Transparent huge pages advised for a buffer of len bytes (2 MiB or more; sim.c). */
void sim_advise_huge(void *m, size_t len);
/* Cache sizes in bytes (Linux's description of CPU 0): level 0 the last level (else 32 MiB),
 * level 1 the first's data cache (else 32 KiB), level 2 the second (else 1 MiB). */
size_t sim_cache_bytes(int level);

/* Where buffer i of n starts within a SIM_PAGE: the buffers spread over the page in steps of 64
 * bytes. A kernel loads from one buffer while its stores into another are in flight; when the
 * two addresses agree in their low 12 bits the load waits for the store (4K aliasing), and
 * buffers allocated alike (mmap: page + 16 bytes) would agree all along a row. */
#define SIM_PAGE 4096
static inline size_t sim_page_offset(int i, int n)
{
    return n > 1 ? (size_t)((int64_t)i * (SIM_PAGE / 64) / n) * 64 : 0;
}

/* The step's fill and stage launch (state.h's stepper_ops, sim.c) on a sim x: the executor's
 * operations (sim_exec.c). */
int sim_fill_slot(void *x, int slot, double t, char *err, size_t len);
int sim_stage(void *x, int i, const stage_clock *c, char *err, size_t len);
/* Cells per x strip of s's 2D stages, 0 for whole rows (sim_exec.c; sim.c launches them). */
int64_t sim_x_strip(const sim *s);

/* tblock.c */
void tblock_free(struct tblock *tb);
/* The stepper's sweep strategy (state.h): K steps in one sweep where temporal blocking applies
 * and pays now (K of them taken), else 0. */
int64_t tblock_sweep(void *sim, double dt, int64_t n, char *err, size_t len);
/* tblock_size.c: the steps per sweep K for a block of at most n steps (0: blocking does not apply
 * or pay), its rows per band, rows per launch, rows of y per 3D tile (0: whole planes) and cells
 * of x (0: whole rows), with candidate ring budget `cand` */
int tblock_choose(const sim *s, int64_t n, int64_t *rows, int64_t *launch, int64_t *tile, int64_t *tile_x, int cand);
int tblock_mirrored(const sim *s);
int tblock_next(const sim *s, int64_t n, int64_t *rows, int64_t *launch, int64_t *tile, int64_t *tile_x, int *cand);
/* The candidate to sweep with now: the one kept, else the next to measure */
int tblock_cand(const sim *s);
/* 1 while the candidates are being measured (auto, nothing forced, 3D) */
int tblock_tuning(const sim *s);
/* Candidate c measured at sec seconds per step (HUGE_VAL: it has no tiles that pay) */
void tblock_measured(sim *s, int c, double sec);

#endif
