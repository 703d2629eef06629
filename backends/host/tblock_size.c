/* tblock_size.c — the sizes of temporal blocking (tblock.c): whether it applies and pays, the
 * steps per sweep, rows per band and per launch, the 3D tiles of rows of y (and forced cells of
 * x) for each of the candidate ring budgets, and the measured choice among those candidates on
 * the first blocks of a run (tblock_cand, tblock_measured). */
#include <math.h>
#include "sim_impl.h"

/* 2D: the rings sized from TB_LLC_SHARE of the last-level cache's share per thread where more
   steps fit there than in the L2. A launch goes strip by strip (tb_strip), so what one launch
   reads stays in the L1 whatever the rings' size; the rings' other rows come back from the L3 at
   most once per position, while each row of the band is copied in from DRAM once per sweep, a
   stall the kernel does not hide: K steps divide it by K. 8192² (1 MiB L2), K 4 -> 32: 1.5x;
   2048² on Zen 4, K 10 -> 32: 1.2-1.26x (docs/performance.md, "2D at the roof"). */
#define TB_LLC_SHARE 0.25
/* Auto: blocked when a thread's share of the state exceeds TB_L2_TIMES second-level caches, or
   the state the last-level cache. A blocked sweep computes from the L2 at the kernel's speed;
   one step per sweep streams each thread's share from the L3 (or DRAM) once per step. */
#define TB_L2_TIMES 8.0
/* rows per kernel launch in the rings: enough for TB_LAUNCH_CELLS cells, at most TB_LAUNCH_MAX
   (each row more costs a row per buffer in every ring) */
#define TB_LAUNCH_CELLS 16384.0
#define TB_LAUNCH_MAX 16
/* 3D tiles (planes too large for the L2's rings): the largest K whose tile recomputes at most
   TB_TILE_EXTRA of its rows (a stage's rows: the tile's and (Q-1-q)H more each side) */
#define TB_TILE_EXTRA 0.25
#define TB_TILE_L2 0.75
/* Auto: the tiles' rings sized for TB_TILE_L2 of the L2 times each of these (candidate c),
   measured over TB_TUNE_RUNS sweeps each from the largest down (the rings, for the largest,
   allocated before the first; the run's first sweep, with the largest, is not measured: it pays
   for faulting in pages and cold caches, which made the largest look slower than it was), the
   fastest per step kept; the measuring stops at the first
   candidate TB_TUNE_WORSE times slower than the best so far (a smaller tile recomputes more of
   its rows and takes fewer steps per sweep: the smaller ones are slower still). Beyond the L2 the
   rings are read from the L3, and more steps per sweep divide the DRAM traffic further: which
   pays depends on the machine and its load. Before, all four were measured over 2 sweeps, the
   slow ones included: a third of a 128-step 256³ Gray-Scott run (docs/performance.md). */
#define TB_TUNE_RUNS 1
#define TB_TUNE_WORSE 1.1
static const double tb_cand_l2[TBLOCK_CANDS] = {1, 2, 4, 8, 11};
/* The largest candidate's rings (about 8 MiB with a 1 MiB L2) are read from the L3 like the
   others beyond the L2, but recompute at most half of TB_TILE_EXTRA: wider tiles and fewer steps
   per sweep. A step bound by its arithmetic (Gray-Scott, two fields) gains more from computing
   fewer rows twice than from more steps per sweep: at 512x512x128, K 5 in tiles of 43 rows
   against the 8x candidate's K 6 in 23 rows, about 1.05x on 1 and 2 threads (forced sizes,
   docs/performance.md, "3D tiles: the rings allocated once, an unmeasured first sweep, a wider
   candidate"). */
static const double tb_cand_extra[TBLOCK_CANDS] = {TB_TILE_EXTRA, TB_TILE_EXTRA, TB_TILE_EXTRA, TB_TILE_EXTRA,
                                                   TB_TILE_EXTRA / 2};

/* 1 when the program and the sim allow blocking at all. */
static int tb_applies(const sim *s)
{
    const pj_program *p = s->st.p;
    if (p->dim < 2 || PJ_SCHEME_IMPLICIT(p->scheme) || p->n_stages < 1 || p->n_slots < 2) return 0;
    if (s->st.plan.set.exchange) return 0;
    for (int side = 0; side < 6; side++)
        if (s->st.plan.set.hook[side] || s->st.plan.set.exchanged[side]) return 0;
    for (int a = 0; a < 3; a++)
        if (s->st.g.first[a] || s->st.g.beyond[a]) return 0;
    for (int side = 0; side < 2 * p->dim; side++) { /* coefficients that read the fields: not ahead */
        const kir_kernel *k = s->coef[side] ? p->bc_kernel[side] : NULL;
        for (int i = 0; k && i < k->n_nodes; i++)
            if (k->nodes[i].op == KIR_LOAD) return 0;
    }
    int last = p->dim - 1, periodic = 0, other = 0;
    for (int f = 0; f < p->n_fields; f++)
        for (int hi = 0; hi < 2; hi++) {
            if (s->st.plan.rule[f * 6 + 2 * last + hi] == GHOST_PERIODIC) periodic = 1;
            else other = 1;
        }
    return !(periodic && other);
}

/* The steps per sweep, rows per band and rows per launch for a block of at most n steps: 0 when
 * blocking does not apply or pay. Rows per launch: enough for TB_LAUNCH_CELLS cells (at most
 * TB_LAUNCH_MAX). A thread's rings hold nbuf * (K*S*H + 4H + r + 1) planes: K is the most that
 * fit in 3/4 of its second-level cache (at most TBLOCK_MAX_K; 2D: or in TB_LLC_SHARE of its share of
 * the last-level cache, when more fit there); one band per thread, K smaller when
 * a band would recompute more than an eighth of its rows. Auto: see TB_L2_TIMES. */
/* 1 when the y sides of every field are periodic or none is (3D tiles wrap y or clip it). */
static int tb_y_uniform(const sim *s)
{
    int periodic = 0, other = 0;
    for (int f = 0; f < s->st.p->n_fields; f++)
        for (int hi = 0; hi < 2; hi++) {
            if (s->st.plan.rule[f * 6 + 2 + hi] == GHOST_PERIODIC) periodic = 1;
            else other = 1;
        }
    return !(periodic && other);
}

/* 3D tiles for a block of K steps (K0, else the largest that pays), r planes per launch: a
 * tile's rings (its cells and R + H more each side, W planes, every buffer) in TB_TILE_L2 of the
 * second-level cache times candidate c's multiple, and at most TB_TILE_EXTRA of its cells
 * recomputed per stage on average ((Q-1)H / 2 more each side). Tiles cut x too only when
 * forced ($PDEJIT_TBLOCK_TILE=ROWSxCELLS): their rows' short runs in the mesh-wide rings defeat
 * the hardware prefetchers (512x512x128: 1.3-2x slower than whole rows, docs/performance.md).
 * K, the tile's rows of y in *Ty and cells of x in *Tx (0: whole rows); 0 when none fits (a
 * periodic y or x: a tile with its reach, R + H each side, is smaller than the mesh). */
static int tb_tiles(const sim *s, int64_t r, int K0, int64_t *Ty, int64_t *Tx, int cand)
{
    const pj_program *p = s->st.p;
    const int H = s->st.g.H, S = p->n_stages, xy = s->tb_tile_x > 0;
    const int64_t Ny = s->st.g.n[1], Nx = s->st.g.n[0];
    const int yper = s->st.plan.rule[2] == GHOST_PERIODIC, xper = s->st.plan.rule[0] == GHOST_PERIODIC;
    const double cell = (double)s->st.esz * s->st.nbuf;
    const double budget = (double)sim_cache_bytes(2) * TB_TILE_L2 * tb_cand_l2[cand];
    *Ty = *Tx = 0;
    for (int K = K0 ? K0 : TBLOCK_MAX_K; K >= 2; K--) {
        int64_t R = (int64_t)K * S * H, W = R + 2 * H + r + 1, m = 2 * R + 2 * H, X = 0, T;
        double A = budget / ((double)W * cell); /* cells of a ring's plane */
        if (xy) X = s->tb_tile_x;
        T = s->tb_tile > 0 ? s->tb_tile : (int64_t)(A / (double)(xy ? X + m : s->L.stride[1])) - m;
        if (T < 1) continue;
        double extra = (double)(K * S - 1) * H * (1.0 / (double)T + (X ? 1.0 / (double)X : 0));
        if (!s->tb_tile && !K0 && extra > tb_cand_extra[cand]) continue;
        if (X >= Nx || (X && xper && X + m > Nx) || (X && T >= Ny)) X = 0; /* whole rows */
        if (T >= Ny) return K; /* whole planes */
        if (yper && T + m > Ny) return K0 ? K : 0;
        int64_t parts = (Ny + T - 1) / T;
        *Ty = (Ny + parts - 1) / parts;
        *Tx = X;
        return K;
    }
    return 0;
}

int tblock_choose(const sim *s, int64_t n, int64_t *rows, int64_t *launch, int64_t *tile, int64_t *tile_x, int cand)
{
    *rows = *launch = *tile = *tile_x = 0; /* no stale sizes for a caller when there are none */
    if (s->tb_mode < 0 || n < 2 || !tb_applies(s)) return 0;
    const pj_program *p = s->st.p;
    int last = p->dim - 1, H = s->st.g.H, S = p->n_stages;
    int64_t N = s->st.g.n[last];
    double plane = (double)s->L.stride[last] * (double)s->st.esz, nbuf = (double)s->st.nbuf;
    int K = s->tb_k;
    int64_t B = s->tb_rows, r = s->tb_launch;
    if (!r) {
        double cells = (double)sim_cells(s) / (double)N; /* interior cells of a row (plane) */
        r = (int64_t)((TB_LAUNCH_CELLS + cells - 1) / cells);
        if (r > TB_LAUNCH_MAX) r = TB_LAUNCH_MAX;
    }
    if (r > N) r = N;
    if (r < 1) r = 1;
    if (s->tb_mode == 0) {
        double state = plane * (double)s->st.g.ext[last] * nbuf, llc = (double)sim_cache_bytes(0);
        double share = state / (s->threads > 1 ? s->threads : 1);
        if (share <= TB_L2_TIMES * (double)sim_cache_bytes(2) && state <= llc) return 0;
    }
    if (!K) {
        double planes = (double)sim_cache_bytes(2) * 0.75 / (plane * nbuf);
        K = (int)((planes - 4 * H - 2 - (double)(r - 1)) / (S * H));
        if (p->dim == 2) { /* 2D: the rings from the LLC's share where more steps fit there */
            double llc = (double)sim_cache_bytes(0) * TB_LLC_SHARE / (s->threads > 1 ? s->threads : 1);
            int k3 = (int)((llc / (plane * nbuf) - 4 * H - 2 - (double)(r - 1)) / (S * H));
            if (k3 > K) K = k3;
        }
        if (K > TBLOCK_MAX_K) K = TBLOCK_MAX_K;
    }
    int64_t Ty = 0, tiles = 1;
    double ring = plane * nbuf * (double)((int64_t)K * S * H + 2 * H + r + 1);
    if (p->dim == 3 && s->tb_tile >= 0 && (s->tb_tile > 0 || K < 2 || ring > (double)sim_cache_bytes(2) * TB_TILE_L2) &&
        tb_y_uniform(s)) {
        int64_t rt = s->tb_launch ? r : 1;
        int kt = tb_tiles(s, rt, s->tb_k, &Ty, tile_x, cand);
        if (kt >= 2 || !s->tb_k) K = kt;
        if (Ty) {
            r = rt;
            tiles = (s->st.g.n[1] + Ty - 1) / Ty * (*tile_x ? (s->st.g.n[0] + *tile_x - 1) / *tile_x : 1);
        }
    }
    if (K > n) K = (int)n;
    if (K < 2) return 0;
    if (!B && tiles >= s->threads) B = N; /* the tiles are the threads' work: whole columns */
    if (!B) {
        B = (N + s->threads - 1) / s->threads;
        while (!s->tb_k && B < 8 * 2 * (int64_t)K * S * H && K > 2) K--;
        if (B < 8 * 2 * (int64_t)K * S * H && s->tb_mode == 0) return 0; /* too much recomputed */
    }
    if (B > N) B = N;
    if (B < 1) return 0;
    *rows = B;
    *launch = r;
    *tile = Ty;
    return K;
}

/* The candidate sizes to sweep with now: the one kept, else the next to measure (when neither
 * the steps per sweep nor the tiles are forced; otherwise the first). */
int tblock_cand(const sim *s)
{
    if (s->tb_pick) return s->tb_pick - 1;
    if (s->tb_mode < 0 || s->tb_k || s->tb_tile || s->st.p->dim != 3) return 0;
    for (int c = TBLOCK_CANDS - 1; c >= 0; c--)
        if (s->tb_runs[c] < TB_TUNE_RUNS) return c;
    return 0;
}

/* 1 while the candidates are being measured (auto, nothing forced, 3D). */
int tblock_tuning(const sim *s)
{
    return !s->tb_pick && s->tb_mode >= 0 && !s->tb_k && !s->tb_tile && s->st.p->dim == 3;
}

/* Candidate c measured at sec seconds per step (HUGE_VAL: it has no tiles); after the smallest
 * candidate's last sweep, or a candidate's TB_TUNE_WORSE times slower than the best of the larger
 * ones, the fastest is kept. */
void tblock_measured(sim *s, int c, double sec)
{
    if (!s->tb_runs[c]++ || sec < s->tb_sec[c]) s->tb_sec[c] = sec;
    if (sec == HUGE_VAL) s->tb_runs[c] = TB_TUNE_RUNS;
    if (s->tb_runs[c] < TB_TUNE_RUNS) return;
    int best = TBLOCK_CANDS - 1;
    for (int i = TBLOCK_CANDS - 2; i >= c; i--)
        if (s->tb_sec[i] < s->tb_sec[best]) best = i;
    if (c == 0 || (best != c && s->tb_sec[c] != HUGE_VAL && s->tb_sec[c] > TB_TUNE_WORSE * s->tb_sec[best]))
        s->tb_pick = best + 1;
}

/* What the next block takes: candidate *c and its steps per sweep; while the candidates are
 * measured, the next one whose tiles pay (tblock_sweep counts the others as measured). */
int tblock_next(const sim *s, int64_t n, int64_t *B, int64_t *r, int64_t *Ty, int64_t *Tx, int *c)
{
    *c = tblock_cand(s);
    int K = tblock_choose(s, n, B, r, Ty, Tx, *c);
    while (K < 2 && *c > 0 && tblock_tuning(s)) K = tblock_choose(s, n, B, r, Ty, Tx, --*c);
    return K;
}

int sim_tblock_steps(const sim *s, int64_t n)
{
    int64_t B = 0, r = 1, Ty = 0, Tx = 0;
    int c;
    return tblock_next(s, n, &B, &r, &Ty, &Tx, &c);
}

int64_t sim_tblock_done(const sim *s, int *k, int64_t *tile_y, int64_t *tile_x)
{
    *k = s->tb_last_k;
    *tile_y = s->tb_last_ty;
    *tile_x = s->tb_last_tx;
    return s->tb_swept;
}

int sim_tblock_tile(const sim *s, int *cand, int *tile_x)
{
    int64_t B = 0, r = 1, Ty = 0, Tx = 0;
    int c;
    tblock_next(s, TBLOCK_MAX_K, &B, &r, &Ty, &Tx, &c);
    *cand = tblock_tuning(s) ? -1 : c;
    *tile_x = (int)Tx;
    return (int)Ty;
}
