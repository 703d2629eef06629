/* tblock.c — temporal blocking: several explicit steps per sweep over the state (sim_step_n).
 *
 * When the state exceeds the caches, a step's speed is capped by one sweep's traffic from the
 * L3 or memory. Here the mesh is cut into bands of rows of the last axis (y in 2D, z in 3D), one per
 * thread, and each band takes K steps (Q = K * stages stage runs) in one pass:
 *
 *   rows [a - R, b + R) of slot 0 stream in (R = Q * H; a periodic last axis wraps, a mesh side
 *   with a condition clips the range; a 3D one-stage step's first run reads them in slot 0
 *   itself, tb_direct) through rings of W = Q*H + 2H + r + 1 rows per buffer,
 *   which stay in the second-level cache (wide 2D rows: the last-level cache), r rows at a time;
 *   as rows [p, p + r) come in, stage run q computes rows [p - (q+1)H, p + r - (q+1)H) (the rows its stencil reads were computed
 *   by run q-1 at this or an earlier position), one launch per run of consecutive planes (a
 *   launch ends where the ring or a periodic mesh wraps; 2D rows wider than a strip that fits
 *   the first-level cache go strip by strip along x), after the ghost cells of its read rows
 *   are filled as sim_fill_ghosts fills them (x, and y in 3D, a run of rows per call; at a mesh side the side's rule over the rows there, in
 *   the plan's axis order); the range shrinks by H per run except at a mesh side; the last
 *   run computes rows [a, b) only, and stores them straight into slot 1 of the sim (nobody
 *   reads it during the block) unless it reads the buffer it stores into (then they are copied)
 *
 * then slots 0 and 1 are swapped once. Stage runs writing the slot an earlier run still reads
 * are safe for the reason in-place ping-pong is: at each position the runs go in order, and a
 * run only overwrites rows the run before it no longer needs. Every cell is computed by the same
 * kernel from the same values with the same launch (t, dt, step and stage of its stage, `first`
 * and `beyond` of its row, so coordinates, `boundary` and rand() are the mesh's), so the state
 * is bit for bit what K calls of sim_step give; the other slots hold other values.
 *
 * It applies to explicit schemes on 2D and 3D meshes held whole by one sim (no block of a
 * decomposed run), without ghost hooks or exchanges, whose last axis is periodic for every
 * field or for none, and whose boundary coefficients read no field; it is chosen (mode 0) when a
 * thread's share of every buffer together exceeds TB_L2_TIMES second-level caches, or the whole
 * state the last-level cache (the sizes: tblock_size.c). $PDEJIT_TBLOCK (off, on, auto), $PDEJIT_TBLOCK_K, $PDEJIT_TBLOCK_ROWS,
 * $PDEJIT_TBLOCK_LAUNCH (rows per launch) and $PDEJIT_TBLOCK_STRIP (cells per strip, or off)
 * force it and its sizes (tests, benchmarks); see sim_set_tblock. The rings start at different
 * places within a page (sim_page_offset), as the sim's buffers do. */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#include "interp.h"
#include "sim_impl.h"

#define TB_ALIGN 64
/* the narrowest strip along x a launch is cut into (see tb_strip) */
#define TB_STRIP_MIN 256

typedef struct tb_set {
    int busy;              /* claimed by a running band */
    void **mem;            /* [nbuf] ring allocations: W + 2H planes each (mirrored: see tb_mirror) */
    int *fd;               /* [nbuf] mirrored: the memory file of each ring */
    int64_t *mapped;       /* [nbuf] mirrored: the ring length (rows) its second mapping is at */
    void **z;              /* [nbuf] cell (0,0,0) of physical plane 0 */
    void **bufs;           /* [nbuf] what a launch reads: the planes of one row */
    void **row0;           /* [nbuf] bufs at x = 0 while a launch goes strip by strip */
    void **fb;             /* [n_fields] the buffers a ghost fill works on */
    void **fp;             /* [n_fields] the same at the planes being filled */
    int64_t *next;         /* [stages of a block] the next row whose ghosts that stage fills */
    unsigned char *done;   /* [stages of a block] bit 0: low side filled, bit 1: high side */
    int64_t ya, yb;        /* 3D tiles: the band's rows of y [ya, yb) */
    int64_t lw[2][2];      /* the rows of y its rings hold (storage rows, ghost rows at a side
                              included), at most two pieces (a periodic y wraps) */
    int nlw;
    int64_t xa, xb;        /* 3D tiles of x: the band's cells of x [xa, xb) */
    int64_t lx[2][2];      /* the cells of x its rings hold, as lw (nlx 0: whole rows) */
    int nlx;
} tb_set;

struct tblock {
    int nsets, nbuf;
    int64_t W;             /* rows of each ring (its planes: W + 2H) */
    size_t mirror;         /* mirrored rings (tb_mirror): the bytes mapped for each; 0: copies */
    pid_t pid;             /* the process that mapped them: shared memory, not copied by fork() */
    int max_stages;
    tb_set *set;
    double *cf_mem;        /* the boundary coefficients of every stage of a block, per side */
    size_t cf_cap;
    const double *(*cf)[6]; /* [stage of the block][side] */
    int cf_stages;
};

void tblock_free(struct tblock *tb)
{
    if (!tb) return;
    for (int i = 0; i < tb->nsets; i++) {
        tb_set *st = &tb->set[i];
        for (int b = 0; st->mem && b < tb->nbuf; b++) {
            if (!tb->mirror) free(st->mem[b]);
            else if (st->mem[b]) munmap(st->mem[b], tb->mirror);
            if (st->fd && st->fd[b] >= 0) close(st->fd[b]);
        }
        free(st->mem);
        free(st->fd);
        free(st->mapped);
        free(st->z);
        free(st->bufs);
        free(st->row0);
        free(st->fb);
        free(st->fp);
        free(st->next);
        free(st->done);
    }
    free(tb->set);
    free(tb->cf_mem);
    free(tb->cf);
    free(tb);
}

void sim_set_tblock(sim *s, int mode, int k, int rows)
{
    s->tb_mode = mode < 0 ? -1 : mode > 0 ? 1 : 0;
    s->tb_k = k > 0 ? k : 0;
    s->tb_rows = rows > 0 ? rows : 0;
}

static int tb_alloc(sim *s, int64_t W, int stages);

/* Rings of W rows for every buffer, one set per thread, and room for `stages` stages: 0, or -1
 * out of memory (then none are kept). */
static int tb_reserve(sim *s, int64_t W, int stages)
{
    struct tblock *tb = s->tb;
    if (tb && tb->W >= W && tb->max_stages >= stages && tb->nsets == s->threads && tb->nbuf == s->st.nbuf &&
        (!tb->mirror || tb->pid == getpid())) /* a forked child would step in its parent's rings */
        return 0;
    s->tb_allocs++;
    if (tb_alloc(s, W, stages) == 0) return 0;
    tblock_free(s->tb);
    s->tb = NULL;
    return -1;
}

/* Mirrored rings. A ring of W planes whose planes are whole pages (3D planes are padded so,
 * grid.h) is a memory file mapped at mem, and its first 2H planes (and a page, for the ring's
 * start within its page) mapped again right after plane W - 1: physical plane ph + W is then
 * plane ph itself, so the planes kept twice (ring_ph) need no copies (ring_sync's memmoves were a
 * tenth of a 3D Gray-Scott block). The file holds the largest ring reserved (tb->W); a block of a
 * shorter ring W moves the second mapping to plane W (tb_mirror_at). */
static size_t tb_plane_bytes(const sim *s) { return (size_t)s->L.stride[s->st.p->dim - 1] * s->st.esz; }

static size_t tb_tail_bytes(const sim *s) { return (size_t)(2 * s->st.g.H) * tb_plane_bytes(s) + SIM_PAGE; }

static int tb_mirror_at(const sim *s, tb_set *set, int b, int64_t W)
{
    if (set->mapped[b] == W) return 0;
    const size_t plane = tb_plane_bytes(s), tail = tb_tail_bytes(s), ring = (size_t)s->tb->W * plane;
    char *m = set->mem[b];
    if (set->mapped[b] > 0 && (size_t)set->mapped[b] * plane < ring) { /* the old second mapping: the file again */
        size_t at = (size_t)set->mapped[b] * plane, len = ring - at < tail ? ring - at : tail;
        if (mmap(m + at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, set->fd[b], (off_t)at) == MAP_FAILED) return -1;
    }
    set->mapped[b] = 0;
    if (mmap(m + (size_t)W * plane, tail, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, set->fd[b], 0) == MAP_FAILED)
        return -1;
    set->mapped[b] = W;
    return 0;
}

/* Ring b of a set as a memory file of W planes mapped once, and room for its second mapping;
 * -1 where the system has no memory files or the mappings fail. */
static int tb_mirror(const sim *s, tb_set *set, int b, int64_t W)
{
    const size_t ring = (size_t)W * tb_plane_bytes(s);
    set->fd[b] = memfd_create("pdejit-ring", MFD_CLOEXEC);
    if (set->fd[b] < 0 || ftruncate(set->fd[b], (off_t)ring) < 0) return -1;
    void *m = mmap(NULL, s->tb->mirror, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return -1;
    set->mem[b] = m;
    if (mmap(m, ring, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, set->fd[b], 0) == MAP_FAILED) return -1;
    return tb_mirror_at(s, set, b, W);
}

/* The mirrored rings of every set moved to rings of W rows (a block's). 0, or -1. */
static int tb_mirror_all(sim *s, int64_t W)
{
    for (int i = 0; s->tb->mirror && i < s->tb->nsets; i++)
        for (int b = 0; b < s->tb->nbuf; b++)
            if (tb_mirror_at(s, &s->tb->set[i], b, W) < 0) return -1;
    return 0;
}

/* 1 when the rings are mirrored (tests). */
int tblock_mirrored(const sim *s)
{
    return s->tb && s->tb->mirror;
}

static int tb_alloc_as(sim *s, int64_t W, int stages, int mirror)
{
    const pj_program *p = s->st.p;
    int last = p->dim - 1, H = s->st.g.H;
    tblock_free(s->tb);
    struct tblock *tb = s->tb = calloc(1, sizeof *tb);
    if (!tb) return -1;
    tb->nsets = s->threads;
    tb->nbuf = s->st.nbuf;
    tb->W = W;
    tb->max_stages = stages;
    tb->set = calloc((size_t)tb->nsets, sizeof *tb->set);
    if (!tb->set) return -1;
    int64_t st = s->L.stride[last], P = s->st.g.origin_off - s->st.g.ghost[last] * st;
    size_t bytes = (size_t)((W + 2 * H) * st) * s->st.esz;
    bytes = (bytes + TB_ALIGN - 1) / TB_ALIGN * TB_ALIGN + SIM_PAGE; /* room to stagger them */
    if (mirror) tb->mirror = (size_t)W * tb_plane_bytes(s) + tb_tail_bytes(s);
    tb->pid = getpid();
    for (int i = 0; i < tb->nsets; i++) {
        tb_set *set = &tb->set[i];
        set->fd = malloc(sizeof *set->fd * (size_t)s->st.nbuf);
        set->mapped = calloc((size_t)s->st.nbuf, sizeof *set->mapped);
        if (!set->fd || !set->mapped) return -1;
        for (int b = 0; b < s->st.nbuf; b++) set->fd[b] = -1;
        set->mem = calloc((size_t)s->st.nbuf, sizeof *set->mem);
        set->z = calloc((size_t)s->st.nbuf, sizeof *set->z);
        set->bufs = calloc((size_t)s->st.nbuf, sizeof *set->bufs);
        set->row0 = calloc((size_t)s->st.nbuf, sizeof *set->row0);
        set->fb = calloc((size_t)p->n_fields, sizeof *set->fb);
        set->fp = calloc((size_t)p->n_fields, sizeof *set->fp);
        set->next = calloc((size_t)stages, sizeof *set->next);
        set->done = calloc((size_t)stages, 1);
        if (!set->mem || !set->z || !set->bufs || !set->row0 || !set->fb || !set->fp || !set->next || !set->done) return -1;
        for (int b = 0; b < s->st.nbuf; b++) {
            /* planes laid out as a whole-mesh buffer's: cell (0,0) of a plane P elements in */
            if (mirror) { /* zeros already */
                if (tb_mirror(s, set, b, W) < 0) return -1;
            } else {
                set->mem[b] = aligned_alloc(TB_ALIGN, bytes);
                if (!set->mem[b]) return -1;
                sim_advise_huge(set->mem[b], bytes); /* a tile's rows span many 4 KiB pages */
                memset(set->mem[b], 0, bytes);
            }
            set->z[b] = (char *)set->mem[b] + sim_page_offset(b, s->st.nbuf) + (size_t)P * s->st.esz;
        }
    }
    return 0;
}

/* Mirrored rings where the planes are whole pages (3D planes of 64 KiB or more) and the system
 * maps memory files; copied twins (ring_sync) elsewhere. */
static int tb_alloc(sim *s, int64_t W, int stages)
{
    const int64_t st = s->L.stride[s->st.p->dim - 1];
    const long page = sysconf(_SC_PAGESIZE);
    int mirror = s->st.p->dim == 3 && page == SIM_PAGE && (st * (int64_t)s->st.esz) % page == 0 && W > 2 * s->st.g.H;
    if (mirror && tb_alloc_as(s, W, stages, 1) == 0) return 0;
    return tb_alloc_as(s, W, stages, 0);
}

/* The boundary coefficients of each of the block's `stages` stage runs (times ts[q]), for every
 * side with a linear condition: what sim_fill_ghosts would compute before that stage. The
 * launch they are evaluated with is the sim's as it would be then (before[q]). */
static int tb_coefs(sim *s, int stages, const double *ts, const kir_launch *before)
{
    struct tblock *tb = s->tb;
    const pj_program *p = s->st.p;
    size_t need = 0;
    for (int side = 0; side < 2 * p->dim; side++)
        if (s->coef[side] && !s->coef_const[side])
            need += (size_t)stages * (size_t)(p->bc_kernel[side]->n_outputs ? p->bc_kernel[side]->n_outputs : 1) *
                    (size_t)interp_face_cells(&s->L, side);
    if (tb->cf_stages < stages) {
        free(tb->cf);
        tb->cf = calloc((size_t)stages, sizeof *tb->cf);
        if (!tb->cf) return -1;
        tb->cf_stages = stages;
    }
    if (need > tb->cf_cap) {
        free(tb->cf_mem);
        tb->cf_mem = malloc(sizeof(double) * need);
        if (!tb->cf_mem) {
            tb->cf_cap = 0;
            return -1;
        }
        tb->cf_cap = need;
    }
    double *at = tb->cf_mem;
    for (int q = 0; q < stages; q++)
        for (int side = 0; side < 6; side++) {
            tb->cf[q][side] = NULL;
            if (side >= 2 * p->dim || !s->coef[side]) continue;
            if (s->coef_const[side]) {
                tb->cf[q][side] = sim_side_coefs(s, side, ts[q]);
                continue;
            }
            kir_launch bl = before[q];
            bl.t = ts[q];
            interp_bc(p->bc_kernel[side], &bl, s->single, at);
            tb->cf[q][side] = at;
            at += (size_t)(p->bc_kernel[side]->n_outputs ? p->bc_kernel[side]->n_outputs : 1) *
                  (size_t)interp_face_cells(&s->L, side);
        }
    return 0;
}

typedef struct tb_job {
    sim *s;
    int K;
    int64_t B, N, W;
    int64_t r;             /* rows per launch: each stage computes up to r rows per position */
    int64_t strip;         /* 2D: cells of a launch's strips along x (see tb_strip), 0: whole rows */
    int periodic;
    double dt;
    const double *ts;      /* [K * stages] each stage's time */
    const kir_launch *L0;  /* the sim's launch at the block's start */
    const int *map;        /* [(K + 1) * nbuf] per step, the ring holding each slot's buffer */
    const unsigned char *writes; /* [stages * nbuf] the buffers a stage kernel stores into */
    const int *final;      /* [nbuf] the field whose new state the block's last stage run stores
                              into buffer bi (straight into slot 1 of the sim), else -1 */
    const unsigned char *copied; /* [n_fields] fields with an eq whose new state is copied out */
    int64_t Ty, Ny;        /* 3D: rows of y per tile (0: whole planes), and the mesh's */
    int yper;              /* a periodic y (a tile's rows wrap) */
    int64_t Tx, Nx;        /* 3D: cells of x per tile (0: whole rows), and the mesh's */
    int xper;              /* a periodic x */
    int direct;            /* the block's first stage run reads slot 0 of the sim (its ghosts
                              filled whole before the block), no rows copied into the rings */
} tb_job;

static int64_t wrap(int64_t m, int64_t N) { return ((m % N) + N) % N; }

/* Start of plane (row in 2D) r of a buffer whose cell (0,0,0) is z. */
static char *plane(const sim *s, void *z, int64_t r)
{
    int last = s->st.p->dim - 1;
    int64_t st = s->L.stride[last], P = s->st.g.origin_off - s->st.g.ghost[last] * st;
    return (char *)z + (r * st - P) * (int64_t)s->st.esz;
}

/* The rings. Row x of a band lives in physical plane wrap(x, W) + H; the first H and the last H
 * rows of the ring are also kept in the H planes before and after it, so that rows x-H .. x+H
 * are always consecutive planes (what a kernel and a ghost fill read around row x). */
static int64_t ring_ph(const tb_job *j, int64_t x) { return wrap(x, j->W) + j->s->st.g.H; }

static char *ring_cell(const tb_job *j, void *z, int64_t ph)
{
    return (char *)z + ph * j->s->L.stride[j->s->st.p->dim - 1] * (int64_t)j->s->st.esz;
}

/* The storage rows of y that hold a tile's rows [u0, u1) (a periodic y wraps them, else they
 * are clipped to the mesh): at most two pieces, their count returned. */
static int axis_pieces(int64_t N, int per, int64_t u0, int64_t u1, int64_t pc[2][2])
{
    int n = 0;
    if (!per) {
        u0 = u0 < 0 ? 0 : u0;
        u1 = u1 > N ? N : u1;
    } else if (u0 < 0 && u1 > 0) {
        pc[n][0] = u0 + N;
        pc[n++][1] = N;
        u0 = 0;
    } else if (u0 < 0) {
        u0 += N;
        u1 += N;
    } else if (u1 > N && u0 < N) {
        pc[n][0] = u0;
        pc[n++][1] = N;
        u0 = 0;
        u1 -= N;
    } else if (u0 >= N) {
        u0 -= N;
        u1 -= N;
    }
    if (u0 < u1) {
        pc[n][0] = u0;
        pc[n++][1] = u1;
    }
    return n;
}

static int y_pieces(const tb_job *j, int64_t u0, int64_t u1, int64_t pc[2][2])
{
    return axis_pieces(j->Ny, j->yper, u0, u1, pc);
}

/* The same along x (tiles of x: cells [u0, u1)); 0 pieces when the tiles are whole rows. */
static int x_pieces(const tb_job *j, int64_t u0, int64_t u1, int64_t pc[2][2])
{
    return j->Tx ? axis_pieces(j->Nx, j->xper, u0, u1, pc) : 0;
}

/* The pieces with the ghost cells at a mesh side (of N cells) they reach. */
static void axis_ghosts(const tb_job *j, int64_t N, int n, int64_t pc[2][2])
{
    for (int i = 0; i < n; i++) {
        if (pc[i][0] == 0) pc[i][0] = -j->s->st.g.H;
        if (pc[i][1] == N) pc[i][1] = N + j->s->st.g.H;
    }
}

/* Rows [a, b) of y of the plane whose cell (0,0) is src, copied into the plane whose cell (0,0)
 * is dst: their cells in the nx pieces [px[2i], px[2i+1]) of x, or (nx 0) whole with their x
 * ghosts. */
static void copy_rows(const tb_job *j, char *dst, const char *src, int64_t a, int64_t b, int nx, const int64_t *px)
{
    const sim *s = j->s;
    const int64_t st1 = s->L.stride[1], esz = (int64_t)s->st.esz;
    if (!nx) {
        const int64_t off = (s->st.g.lo[0] + a * st1) * esz;
        memcpy(dst + off, src + off, (size_t)((b - a - 1) * st1 + s->st.g.ext[0]) * s->st.esz);
        return;
    }
    for (int64_t y = a; y < b; y++)
        for (int i = 0; i < nx; i++) {
            const int64_t off = (px[2 * i] + y * st1) * esz;
            memcpy(dst + off, src + off, (size_t)((px[2 * i + 1] - px[2 * i]) * esz));
        }
}

/* After physical plane ph of ring z changed: its other copy made equal (a tile's rows only). */
static void ring_sync(const tb_job *j, const tb_set *set, void *z, int64_t ph)
{
    int64_t W = j->W, H = j->s->st.g.H, m, other = -1;
    if (ph < H) m = ph - H + W;
    else if (ph >= W + H) m = ph - W - H;
    else m = ph - H;
    if (ph != m + H) other = m + H;
    else if (m < H) other = m + W + H;
    else if (m >= W - H) other = m - W + H;
    if (other < 0 || j->s->tb->mirror) return; /* mirrored: the same memory */
    if (j->Ty) {
        for (int i = 0; i < set->nlw; i++)
            copy_rows(j, ring_cell(j, z, other), ring_cell(j, z, ph), set->lw[i][0], set->lw[i][1], set->nlx, &set->lx[0][0]);
        return;
    }
    size_t bytes = (size_t)j->s->L.stride[j->s->st.p->dim - 1] * j->s->st.esz;
    memcpy(plane(j->s, z, other), plane(j->s, z, ph), bytes);
}

typedef struct tb_band_ctx {
    int64_t lo, E;
    int at_lo, at_hi;
} tb_band_ctx;

/* Rows [y0, y1) of a band from row y0 on that are consecutive planes of the rings and of the
 * mesh: up to where the ring wraps, and (a periodic last axis) where the mesh index wraps. */
static int64_t ring_run(const tb_job *j, int64_t lo, int64_t y0, int64_t y1)
{
    int64_t n = j->W - wrap(y0, j->W);
    if (j->periodic) {
        int64_t m = j->N - wrap(lo + y0, j->N);
        if (m < n) n = m;
    }
    return y1 - y0 < n ? y1 - y0 : n;
}

/* After rows [y0, y0 + n) of ring z changed (consecutive planes): the copies of those kept twice
 * made equal. */
static void ring_sync_rows(const tb_job *j, const tb_set *set, void *z, int64_t y0, int64_t n)
{
    const int64_t W = j->W, H = j->s->st.g.H;
    for (int64_t y = y0; y < y0 + n; y++) {
        int64_t w = wrap(y, W);
        if (w < H || w >= W - H) ring_sync(j, set, z, w + H);
    }
}

/* Stage q's input rows of y in a tile (the rows it computes and H more each side), as storage
 * pieces with the ghost rows at a mesh side; *fill_y: 1 when they reach the ghost rows' sources
 * (rows within H of a side), so that the ghost rows of y are filled. */
static int y_input(const tb_job *j, const tb_set *set, int q, int64_t pc[2][2], int *fill_y)
{
    const int64_t H = j->s->st.g.H, Q = (int64_t)j->K * j->s->st.p->n_stages, d = (Q - q) * H;
    int n = y_pieces(j, set->ya - d, set->yb + d, pc);
    *fill_y = 0;
    for (int i = 0; i < n; i++)
        if (pc[i][0] < H || pc[i][1] > j->Ny - H) *fill_y = 1;
    axis_ghosts(j, j->Ny, n, pc);
    return n;
}

/* One axis' ghost fill of the buffers stage q reads (set->fb) over `span`; in a tile, x and the
 * last axis over the tile's input rows of y, y where they reach a side's sources. */
static void fill_span_axis(const tb_job *j, tb_set *set, int q, int ax, sim_fill_span span)
{
    sim *s = j->s;
    const int nf = s->st.p->n_fields;
    const double *cf[2] = {s->tb->cf[q][2 * ax], s->tb->cf[q][2 * ax + 1]};
    void *const *fb = set->fp;
    if (!j->Ty) {
        for (int f = 0; f < nf; f++) sim_fill_axis(s, f, fb[f], ax, cf, &span);
        return;
    }
    int64_t pc[2][2], px[2][2] = {{0, 0}};
    int fill_y, n = y_input(j, set, q, pc, &fill_y), fill_x = 1, nx = 1;
    if (j->Tx) { /* tiles of x: the stage's input cells of x, as its rows of y */
        const int64_t d = ((int64_t)j->K * s->st.p->n_stages - q) * s->st.g.H;
        nx = x_pieces(j, set->xa - d, set->xb + d, px);
        fill_x = 0;
        for (int i = 0; i < nx; i++)
            if (px[i][0] < s->st.g.H || px[i][1] > j->Nx - s->st.g.H) fill_x = 1;
        axis_ghosts(j, j->Nx, nx, px);
    }
    for (int k = 0; k < nx; k++) {
        span.x0 = px[k][0];
        span.x1 = px[k][1];
        if (ax == 1) {
            for (int f = 0; fill_y && f < nf; f++) sim_fill_axis(s, f, fb[f], ax, cf, &span);
            continue;
        }
        for (int i = 0; i < n && (ax != 0 || (fill_x && k == 0)); i++) {
            span.m0 = pc[i][0];
            span.m1 = pc[i][1];
            for (int f = 0; f < nf; f++) sim_fill_axis(s, f, fb[f], ax, cf, &span);
        }
    }
}

/* The ghost cells along the other axes of rows [y0, y1) of the buffers stage q reads (set->fb),
 * as sim_fill_ghosts fills them in those rows (planes in 3D: each plane's x and y ghosts are its
 * own, so a run of planes is filled axis after axis as one plane is). */
static void fill_rows(const tb_job *j, tb_set *set, const tb_band_ctx *c, int q, int64_t y0, int64_t y1)
{
    sim *s = j->s;
    int last = s->st.p->dim - 1, nf = s->st.p->n_fields;
    for (int64_t y = y0, n; y < y1; y += n) {
        n = ring_run(j, c->lo, y, y1);
        int64_t ph = ring_ph(j, y);
        sim_fill_span span = {n, 0, n, c->lo + y, j->periodic, 0, 0, 0, 0, 0};
        for (int f = 0; f < nf; f++) set->fp[f] = ring_cell(j, set->fb[f], ph);
        for (int x = 0; x < s->st.p->dim; x++) {
            int ax = s->st.plan.axis_order[x];
            if (ax != last) fill_span_axis(j, set, q, ax, span);
        }
        for (int f = 0; f < nf; f++) ring_sync_rows(j, set, set->fb[f], y, n);
    }
}

/* The ghost rows at a mesh side (hi 0: before row 0, 1: after row E-1) of the buffers stage q
 * reads, with the H rows inside, every axis in the plan's order (the corners as the whole
 * mesh's fill sets them). */
static void fill_side(const tb_job *j, tb_set *set, const tb_band_ctx *c, int q, int hi)
{
    sim *s = j->s;
    int nf = s->st.p->n_fields, H = s->st.g.H;
    int64_t base = hi ? ring_ph(j, c->E) - H : ring_ph(j, 0); /* physical plane of index 0 below */
    sim_fill_span span = hi ? (sim_fill_span){H, 0, 2 * H, c->lo + c->E - H, j->periodic, 2, 0, 0, 0, 0}
                            : (sim_fill_span){H, -H, H, c->lo, j->periodic, 1, 0, 0, 0, 0};
    for (int f = 0; f < nf; f++) set->fp[f] = ring_cell(j, set->fb[f], base);
    for (int x = 0; x < s->st.p->dim; x++) fill_span_axis(j, set, q, s->st.plan.axis_order[x], span);
    for (int f = 0; f < nf; f++)
        for (int64_t r = span.q0; r < span.q1; r++) ring_sync(j, set, set->fb[f], base + r);
}

/* Stage i's kernel on rows [0, n) of L (buffers set->bufs), strip by strip along x when the rows
 * are wider than j->strip cells: a strip's rows then stay in the first-level cache from one row
 * to the next. A strip is a block of the row for the kernel (first and beyond), so coordinates,
 * `boundary` and rand() are the row's. */
static void tb_launch(const tb_job *j, tb_set *set, int i, kir_launch *L, int64_t n, int q)
{
    sim *s = j->s;
    if (j->Ty) { /* a tile: the stage's rows of y, (Q-1-q)H more each side than the tile's */
        const int64_t H = s->st.g.H, d = ((int64_t)j->K * s->st.p->n_stages - 1 - q) * H, st1 = s->L.stride[1];
        int64_t pc[2][2], px[2][2] = {{0, j->Nx}};
        int np = y_pieces(j, set->ya - d, set->yb + d, pc), nx = j->Tx ? x_pieces(j, set->xa - d, set->xb + d, px) : 1;
        for (int bi = 0; bi < s->st.nbuf; bi++) set->row0[bi] = set->bufs[bi];
        for (int k = 0; k < np * nx; k++) {
            const int64_t *y = pc[k / nx], *x = px[k % nx];
            for (int bi = 0; bi < s->st.nbuf; bi++)
                set->bufs[bi] = (char *)set->row0[bi] + (y[0] * st1 + x[0]) * (int64_t)s->st.esz;
            L->n[1] = y[1] - y[0];
            L->first[1] = y[0];
            L->beyond[1] = j->Ny - y[1];
            L->n[0] = x[1] - x[0];
            L->first[0] = x[0];
            L->beyond[0] = j->Nx - x[1];
            if (s->runner) s->runner(s->runner_ctx, i, L, 0, n);
            else interp_stage(s->st.p->stages[i].kernel, L, s->single, 0, n);
        }
        for (int bi = 0; bi < s->st.nbuf; bi++) set->bufs[bi] = set->row0[bi];
        L->n[1] = j->Ny;
        L->first[1] = 0;
        L->beyond[1] = 0;
        L->n[0] = j->Nx;
        L->first[0] = 0;
        L->beyond[0] = 0;
        return;
    }
    const int64_t nx = j->L0->n[0], X = j->strip > 0 && j->strip < nx ? j->strip : nx;
    for (int bi = 0; bi < s->st.nbuf; bi++) set->row0[bi] = set->bufs[bi];
    for (int64_t x = 0; x < nx; x += X) {
        int64_t w = nx - x < X ? nx - x : X;
        for (int bi = 0; bi < s->st.nbuf; bi++) set->bufs[bi] = (char *)set->row0[bi] + x * (int64_t)s->st.esz;
        L->n[0] = w;
        L->first[0] = j->L0->first[0] + x;
        L->beyond[0] = j->L0->beyond[0] + nx - x - w;
        if (s->runner) s->runner(s->runner_ctx, i, L, 0, n);
        else interp_stage(s->st.p->stages[i].kernel, L, s->single, 0, n);
    }
    for (int bi = 0; bi < s->st.nbuf; bi++) set->bufs[bi] = set->row0[bi];
    L->n[0] = nx;
    L->first[0] = j->L0->first[0];
    L->beyond[0] = j->L0->beyond[0];
}

/* Band [a, b): rows [lo, lo + E) stream through the rings once, r rows at a time (j->r). At
 * position p, rows [p, p + r) of slot 0 come in, then stage q (0-based over the block) computes
 * rows [p - (q+1)H, p + r - (q+1)H), whose stencil rows the stage before has just computed, in
 * one launch per run of consecutive planes; the last stage's rows in [a, b) go out to slot 1. */
static void tb_band(tb_job *j, tb_set *set, int64_t a, int64_t b)
{
    sim *s = j->s;
    const pj_program *p = s->st.p;
    const int nf = p->n_fields, last = p->dim - 1, H = s->st.g.H, S = p->n_stages, Q = j->K * S, nbuf = s->st.nbuf;
    const int64_t N = j->N, R = (int64_t)Q * H, r = j->r;
    const int64_t row_elems = s->L.stride[last];
    const size_t plane_bytes = (size_t)row_elems * s->st.esz;
    tb_band_ctx c;
    if (j->periodic) {
        c.lo = a - R;
        c.E = b + R - c.lo;
        c.at_lo = c.at_hi = 0;
    } else {
        c.lo = a - R > 0 ? a - R : 0;
        int64_t hi = b + R < N ? b + R : N;
        c.E = hi - c.lo;
        c.at_lo = c.lo == 0;
        c.at_hi = hi == N;
    }
    const int64_t E = c.E, lo = c.lo;
    if (j->Ty) {
        set->nlw = y_pieces(j, set->ya - R, set->yb + R, set->lw);
        axis_ghosts(j, j->Ny, set->nlw, set->lw);
        set->nlx = x_pieces(j, set->xa - R, set->xb + R, set->lx);
        axis_ghosts(j, j->Nx, set->nlx, set->lx);
    }
    for (int q = 0; q < Q; q++) {
        set->next[q] = c.at_lo ? 0 : (int64_t)q * H;
        set->done[q] = 0;
    }
    kir_launch L = *j->L0;
    L.buf = set->bufs;
    L.prefetch = 0;
    L.dt = j->dt;
    const int *mapK = j->map + (size_t)j->K * nbuf;
    for (int64_t pos = 0; pos < E + R; pos += r) {
        for (int64_t y = pos; !j->direct && y < pos + r && y < E; y++) { /* row y of every field of slot 0 comes in */
            int64_t ph = ring_ph(j, y), m = j->periodic ? wrap(lo + y, N) : lo + y;
            for (int f = 0; f < nf; f++) {
                if (j->Ty) /* the tile's rows within reach */
                    for (int i = 0; i < set->nlw; i++)
                        copy_rows(j, ring_cell(j, set->z[f], ph), (char *)s->st.buf[f] + m * row_elems * (int64_t)s->st.esz,
                                  set->lw[i][0], set->lw[i][1], set->nlx, &set->lx[0][0]);
                else
                    memcpy(plane(s, set->z[f], ph), plane(s, s->st.buf[f], m), plane_bytes);
                ring_sync(j, set, set->z[f], ph);
            }
        }
        for (int q = 0; q < Q; q++) {
            int64_t x0 = pos - (int64_t)(q + 1) * H, x1 = x0 + r;
            int64_t c_lo = c.at_lo ? 0 : (int64_t)(q + 1) * H, c_hi = c.at_hi ? E : E - (int64_t)(q + 1) * H;
            if (x0 < c_lo) x0 = c_lo;
            if (x1 > c_hi) x1 = c_hi;
            if (x0 >= x1) continue;
            const int k = q / S, i = q % S;
            const int *map = j->map + (size_t)k * nbuf;
            const pj_stage *sg = &p->stages[i];
            for (int f = 0; f < nf; f++) set->fb[f] = set->z[map[(p->field_has_eq[f] ? sg->read_slot : 0) * nf + f]];
            const int direct = j->direct && q == 0; /* reads slot 0 of the sim, its ghosts filled */
            if (direct) set->next[q] = E;
            if (!direct && c.at_lo && !(set->done[q] & 1) && x0 - H < 0) {
                fill_side(j, set, &c, q, 0);
                set->done[q] |= 1;
            }
            int64_t limit = x1 - 1 + H;
            if (c.at_hi && limit > E - 1) limit = E - 1;
            if (set->next[q] <= limit) {
                fill_rows(j, set, &c, q, set->next[q], limit + 1);
                set->next[q] = limit + 1;
            }
            if (!direct && c.at_hi && !(set->done[q] & 2) && x1 - 1 + H >= E) {
                fill_side(j, set, &c, q, 1);
                set->done[q] |= 2;
            }
            const int out = q == Q - 1; /* the last run: the band's own rows, into slot 1 of the sim */
            if (out && x0 < a - lo) x0 = a - lo;
            if (out && x1 > b - lo) x1 = b - lo;
            L.t = j->ts[q];
            L.step = j->L0->step + k;
            L.stage = i + 1;
            for (int64_t x = x0, n; x < x1; x += n) {
                n = ring_run(j, lo, x, x1);
                int64_t ph = ring_ph(j, x), m = j->periodic ? wrap(lo + x, N) : lo + x;
                for (int bi = 0; bi < nbuf; bi++)
                    set->bufs[bi] = out && j->final[bi] >= 0 ? (char *)s->st.buf[nf + j->final[bi]] + m * row_elems * (int64_t)s->st.esz
                                    : direct && bi < nf ? (char *)s->st.buf[bi] + m * row_elems * (int64_t)s->st.esz
                                                        : ring_cell(j, set->z[map[bi]], ph);
                L.first[last] = m;
                L.n[last] = n;
                L.beyond[last] = N - m - n;
                tb_launch(j, set, i, &L, n, q);
                for (int bi = 0; bi < nbuf; bi++)
                    if (j->writes[i * nbuf + bi] && !(out && j->final[bi] >= 0)) ring_sync_rows(j, set, set->z[map[bi]], x, n);
                for (int f = 0; out && f < nf; f++)
                    if (j->copied[f])
                        for (int64_t y = x; y < x + n; y++) {
                            if (j->Ty) /* the tile's rows (and cells of x) */
                                copy_rows(j, (char *)s->st.buf[nf + f] + (lo + y) * row_elems * (int64_t)s->st.esz,
                                          ring_cell(j, set->z[mapK[f]], ring_ph(j, y)), set->ya, set->yb, j->Tx ? 1 : 0,
                                          (const int64_t[2]){set->xa, set->xb});
                            else
                                memcpy(plane(s, s->st.buf[nf + f], lo + y), plane(s, set->z[mapK[f]], ring_ph(j, y)), plane_bytes);
                        }
            }
        }
    }
}

static void tb_range(void *ctx, int64_t begin, int64_t end)
{
    tb_job *j = ctx;
    struct tblock *tb = j->s->tb;
    tb_set *set = NULL;
    for (int i = 0; !set; i = (i + 1) % tb->nsets) /* one free set per running thread */
        if (!__atomic_exchange_n(&tb->set[i].busy, 1, __ATOMIC_ACQUIRE)) set = &tb->set[i];
    const int64_t xt = j->Tx ? (j->Nx + j->Tx - 1) / j->Tx : 1, tiles = j->Ty ? (j->Ny + j->Ty - 1) / j->Ty * xt : 1;
    for (int64_t band = begin; band < end; band++) {
        int64_t zb = band / tiles, yt = band % tiles / xt, xi = band % tiles % xt;
        int64_t a = zb * j->B, b = a + j->B < j->N ? a + j->B : j->N;
        set->ya = yt * j->Ty;
        set->yb = set->ya + j->Ty < j->Ny ? set->ya + j->Ty : j->Ny;
        set->xa = xi * j->Tx;
        set->xb = set->xa + j->Tx < j->Nx ? set->xa + j->Tx : j->Nx;
        tb_band(j, set, a, b);
    }
    __atomic_store_n(&set->busy, 0, __ATOMIC_RELEASE);
}

/* The cells of a launch's strips along x in 2D (0: whole rows): the rows of one strip that a
 * launch row reads and writes (2H + 1 of each field, and one of each) in half the first-level
 * cache, the row cut into equal strips of a multiple of 16 cells (64-byte aligned). A row of the
 * ring is then read from the L2 once, not 2H + 1 times (2048² here: strips of 688 cells; with
 * the staggered rings and the last run's direct stores, 1.38x faster a blocked step on 1
 * thread, 1.13x on 2: docs/performance.md). */
static int64_t tb_strip(const sim *s)
{
    const int64_t nx = s->st.g.n[0];
    if (s->tb_strip) return s->tb_strip;
    if (s->st.p->dim != 2) return 0;
    double row = (double)s->st.esz * s->st.p->n_fields * (2 * s->st.g.H + 2);
    int64_t X = (int64_t)((double)sim_cache_bytes(1) / 2 / row), parts;
    if (X < TB_STRIP_MIN) X = TB_STRIP_MIN;
    if (X >= nx) return 0;
    parts = (nx + X - 1) / X;
    return ((nx + parts - 1) / parts + 15) / 16 * 16;
}

/* 1 when a 3D block's first stage run can read slot 0 of the sim where its rows are (no copies
 * into the rings): one stage a step (euler) that reads slot 0 only and stores into other slots,
 * every field with an equation (a coefficient field is read at every stage), no field whose
 * ghosts sim_fill_ghosts leaves alone. Its ghosts are then filled whole before the block (as
 * sim_step fills them); the rows the later runs read come from the rings as before. The copies
 * were a sixth of a 256³ Gray-Scott block's time, from memory into the rings at memmove's pace;
 * the kernel's loads of the same rows overlap its arithmetic. */
static int tb_direct(const sim *s)
{
    const pj_program *p = s->st.p;
    if (p->dim != 3 || p->n_stages != 1 || p->stages[0].read_slot != 0 || s->fill_skip) return 0;
    for (int f = 0; f < p->n_fields; f++)
        if (!p->field_has_eq[f]) return 0;
    const kir_kernel *k = p->stages[0].kernel;
    for (int i = 0; i < k->n_nodes; i++)
        if (k->nodes[i].op == KIR_LOAD && k->nodes[i].slot != 0) return 0;
    for (int o = 0; o < k->n_outputs; o++)
        if (k->outputs[o].slot == 0) return 0;
    return 1;
}

/* K steps of dt in one sweep of bands of B rows. 0, or -1 out of memory (nothing stepped). */
static int tb_run(sim *s, double dt, int K, int64_t B, int64_t r, int64_t Ty, int64_t Tx)
{
    const pj_program *p = s->st.p;
    const int S = p->n_stages, nf = p->n_fields, last = p->dim - 1, nbuf = s->st.nbuf, H = s->st.g.H;
    const int64_t W = (int64_t)K * S * H + 2 * H + r + 1;
    if (tb_reserve(s, W, K * S) < 0) return -1;
    if (tb_mirror_all(s, W) < 0) { /* the mappings failed: none kept */
        tblock_free(s->tb);
        s->tb = NULL;
        return -1;
    }
    double *ts = malloc(sizeof *ts * (size_t)(K * S));
    kir_launch *before = malloc(sizeof *before * (size_t)(K * S));
    int *map = malloc(sizeof *map * (size_t)((K + 1) * nbuf)), *final = malloc(sizeof *final * (size_t)nbuf);
    unsigned char *writes = calloc((size_t)(S * nbuf), 1), *copied = calloc((size_t)nf, 1);
    int rc = -1;
    if (!ts || !before || !map || !final || !writes || !copied) goto done;
    /* the times and launches sim_step would have: t advanced by adding dt step after step */
    kir_launch L = s->L;
    double t = s->st.t;
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < S; i++) {
            before[k * S + i] = L;
            stage_clock c = state_stage_clock(p, i, t, s->st.steps + k, dt);
            ts[k * S + i] = c.t;
            L.t = c.t;
            L.dt = c.dt;
            L.step = c.step;
            L.stage = c.stage;
        }
        t += dt;
    }
    /* which ring holds each slot's buffer at each step (Euler swaps slots 0 and 1) */
    for (int b = 0; b < nbuf; b++) map[b] = b;
    for (int k = 1; k <= K; k++) {
        int *m = map + (size_t)k * nbuf;
        memcpy(m, m - nbuf, sizeof *m * (size_t)nbuf);
        state_swap_slots(&s->st, m);
    }
    for (int i = 0; i < S; i++) {
        const kir_kernel *k = p->stages[i].kernel;
        for (int o = 0; o < k->n_outputs; o++) {
            int bi = k->outputs[o].slot * nf + k->outputs[o].field;
            if (bi >= 0 && bi < nbuf) writes[i * nbuf + bi] = 1;
        }
    }
    /* the last stage run stores the new state of a field straight into slot 1 where the buffer it
       stores into is the one slot 0 holds after the block and the run does not read it (an
       in-place stage, rk2's second, reads what it overwrites); the other fields' are copied out */
    for (int f = 0; f < nf; f++) copied[f] = (unsigned char)p->field_has_eq[f];
    const kir_kernel *lk = p->stages[S - 1].kernel;
    for (int bi = 0; bi < nbuf; bi++) {
        final[bi] = -1;
        int read = 0;
        for (int id = 0; id < lk->n_nodes; id++)
            if (lk->nodes[id].op == KIR_LOAD && lk->nodes[id].slot * nf + lk->nodes[id].index == bi) read = 1;
        for (int f = 0; f < nf && writes[(S - 1) * nbuf + bi] && !read; f++)
            if (p->field_has_eq[f] && map[(size_t)(K - 1) * nbuf + bi] == map[(size_t)K * nbuf + f]) {
                final[bi] = f;
                copied[f] = 0;
            }
    }
    if (tb_coefs(s, K * S, ts, before) < 0) goto done;
    kir_launch L0 = s->L;
    L0.step = s->st.steps;
    int periodic = s->st.plan.rule[2 * last] == GHOST_PERIODIC;
    tb_job j = {s, K, B, s->st.g.n[last], W, r, tb_strip(s), periodic, dt, ts, &L0, map, writes, final, copied,
                Ty, s->st.g.n[1], s->st.plan.rule[2] == GHOST_PERIODIC, Tx, s->st.g.n[0], s->st.plan.rule[0] == GHOST_PERIODIC,
                tb_direct(s)};
    if (j.direct) sim_fill_ghosts(s, 0, ts[0]); /* as sim_step's first stage would */
    const int64_t tiles = Ty ? (j.Ny + Ty - 1) / Ty * (Tx ? (j.Nx + Tx - 1) / Tx : 1) : 1, R = (int64_t)K * S * H;
    int64_t bands = (j.N + B - 1) / B * tiles, band_cells = (B + 2 * R) * (sim_cells(s) / j.N) * K * S;
    if (Ty) band_cells = band_cells / j.Ny * (Ty + 2 * R);
    if (Tx) band_cells = band_cells / j.Nx * (Tx + 2 * R);
    /* a pool the thread choice let go (sim.c: one thread chosen) comes back: sweeps are not measured */
    if (!s->pool && s->threads > 1) s->pool = cpu_pool_create(s->threads);
    if (!s->pool || s->threads < 2) tb_range(&j, 0, bands);
    else cpu_pool_run_range(s->pool, tb_range, &j, bands, 1, band_cells);
    for (int f = 0; f < nf; f++) { /* the new state is in slot 1 */
        if (!p->field_has_eq[f]) continue;
        void *m = s->st.mem[f]; s->st.mem[f] = s->st.mem[nf + f]; s->st.mem[nf + f] = m;
        m = s->st.buf[f]; s->st.buf[f] = s->st.buf[nf + f]; s->st.buf[nf + f] = m;
    }
    for (int k = 0; k < K; k++) s->st.t += dt;
    s->st.steps += K;
    s->L.t = s->st.t;
    s->L.dt = dt;
    s->L.step = s->st.steps - 1;
    s->L.stage = S;
    rc = 0;
done:
    free(ts);
    free(before);
    free(map);
    free(final);
    free(writes);
    free(copied);
    return rc;
}

static double tb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int64_t tblock_sweep(void *x, double dt, int64_t n, char *err, size_t len)
{
    (void)err;
    (void)len;
    sim *s = x;
    int64_t B = 0, r = 1, Ty = 0, Tx = 0;
    int c, first = tblock_cand(s), K = tblock_next(s, n, &B, &r, &Ty, &Tx, &c);
    if (n >= 2 && tblock_tuning(s)) {
        for (int i = first; i > c; i--) tblock_measured(s, i, HUGE_VAL); /* skipped: no tiles that pay */
        if (K < 2) { /* not the smallest either: the best of those measured is kept */
            tblock_measured(s, c, HUGE_VAL);
            c = tblock_cand(s);
            K = tblock_choose(s, n, &B, &r, &Ty, &Tx, c);
        }
    }
    if (K < 2) return 0;
    if (tblock_tuning(s) && Ty) { /* rings for every candidate before the first is timed */
        /* each candidate's own steps per sweep, not this block's: a later block of more steps
           would allocate (and clear) the rings again, inside its measuring */
        int64_t Wmax = 0;
        int Kmax = 0;
        for (int i = 0; i < TBLOCK_CANDS; i++) {
            int64_t Bc = 0, rc = 1, Tc = 0, Xc = 0;
            int Kc = tblock_choose(s, TBLOCK_MAX_K, &Bc, &rc, &Tc, &Xc, i);
            if (Kc < 2) continue; /* no tiles that pay: it sizes nothing */
            int64_t Wc = (int64_t)Kc * s->st.p->n_stages * s->st.g.H + 2 * s->st.g.H + rc + 1;
            Wmax = Wc > Wmax ? Wc : Wmax;
            Kmax = Kc > Kmax ? Kc : Kmax;
        }
        if (tb_reserve(s, Wmax, Kmax * s->st.p->n_stages) < 0) return 0;
    }
    double t0 = tb_now();
    if (tb_run(s, dt, K, B, r, Ty, Tx) < 0) return 0; /* tb_run fails only out of memory: step alone */
    s->tb_swept += K;
    if (K < n || !s->tb_last_k) { /* a sweep of the size chosen, not one cut short by the block's end */
        s->tb_last_k = K;
        s->tb_last_ty = Ty;
        s->tb_last_tx = Tx;
    }
    if (tblock_tuning(s)) {
        int64_t B0, r0, T0 = Ty, X0;
        if (!Ty) tblock_choose(s, n, &B0, &r0, &T0, &X0, 0);
        if (!T0) s->tb_pick = c + 1; /* the smallest has no tiles: none has, nothing to choose */
        else if (!s->tb_warm) s->tb_warm = 1; /* the first sweep also faults in pages, warms the caches */
        else tblock_measured(s, c, (tb_now() - t0) / K);
    }
    return K;
}
