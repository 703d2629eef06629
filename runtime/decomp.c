/* decomp.c — a mesh decomposed over MPI processes through PETSc's DMDA, and the ghost exchange
 * between the blocks as a PetscSF (see decomp.h). */
#include "decomp.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diag.h"

#ifndef PJ_IMPLICIT_MODULE /* the launcher's environment: the library's, with or without PETSc */
/* The first of the variables `names` that is set, as a number (Open MPI's, then MPICH / Hydra's
 * and Slurm's PMI), or `otherwise`. */
static long launcher_value(const char *const *names, long otherwise)
{
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return strtol(v, NULL, 10);
    }
    return otherwise;
}

static int process_count(long n) { return n > 1 && n < 1000000 ? (int)n : 1; }

int decomp_launched_size(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", NULL};
    return process_count(launcher_value(names, 1));
}

int decomp_launched_rank(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", NULL};
    return (int)launcher_value(names, 0);
}

int decomp_launched_local_size(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE", NULL};
    return process_count(launcher_value(names, decomp_launched_size()));
}
#endif

#if defined(PJ_HAVE_PETSC) && defined(PJ_IMPLICIT_MODULE)
/* In the module libpdejit-implicit.so (implicit_module.h), with PETSc: the library's functions
 * through its table. */
#include <petscdmda.h>
#include <petscsf.h>
#include "implicit_module.h"
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif
#define diag_set module_diag_set
#define grid_layout_block implicit_module_host->grid_layout_block

struct decomp {
    const pj_program *p;
    MPI_Comm comm;
    int rank, size, dim, H;
    int procs[3];
    int periodic[3];
    int64_t mesh_n[3];
    int64_t *start[3];     /* per axis, the first cell of each column of processes; [procs] = mesh_n */
    int *rank_of;          /* the process of column (c0, c1, c2): [c0 + procs0 * (c1 + procs1 * c2)] */
    grid_block *blocks;    /* every process's block */
    grid_block block;      /* this one's */
    DM da;
    PetscSF sf;            /* the exchange, built at the first one (it needs the buffers' layout) */
    size_t sf_esz;
    int64_t sf_origin_off;
    PetscInt sf_leaves;
    decomp_stats st;
};

static int petsc_started;

static void petsc_finish(void)
{
    PetscBool done = PETSC_FALSE;
    PetscFinalized(&done);
    if (!done) PetscFinalize();
}

int decomp_petsc_start(char *err, size_t err_len)
{
    if (petsc_started) return 0;
    PetscBool done = PETSC_FALSE;
    PetscInitialized(&done);
    if (!done) {
        PetscOptionsSetValue(NULL, "-no_signal_handler", NULL);
        /* A process not started by mpirun is an Open MPI singleton, whose MPI_Init forks and execs
         * an orted daemon (in case it later spawns processes, which pdejit never does): most of
         * the start-up's wall time (docs/performance.md, "Start-up"). Open MPI's
         * ess_singleton_isolated skips it; set unless the environment says otherwise; it means
         * nothing under mpirun (no singleton there). */
        setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
        /* A singleton talks to itself only: Open MPI's ob1 messaging (its self transport), not the
         * UCX one it would otherwise load, probe and set aside: 13 ms less CPU at every implicit
         * start (108.6 -> 95.1 ms, medians of 7, docs/performance.md); unless the environment says */
        if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE") && !getenv("PMIX_SIZE"))
            setenv("OMPI_MCA_pml", "ob1", 0);
#ifdef __SANITIZE_ADDRESS__
        __lsan_disable(); /* what MPI's start keeps for the process's life is not a leak of ours */
#endif
        PetscErrorCode e = PetscInitializeNoArguments();
#ifdef __SANITIZE_ADDRESS__
        __lsan_enable();
#endif
        if (e) {
            diag_set(err, err_len, "PETSc (and MPI) could not start: PetscInitialize failed (%d)", (int)e);
            return -1;
        }
        /* an MPI run must end through MPI_Finalize, or the launcher reports the process as failed */
        atexit(petsc_finish);
    }
    if (!getenv("PDEJIT_PETSC_TRACE")) PetscPushErrorHandler(PetscReturnErrorHandler, NULL);
    petsc_started = 1;
    return 0;
}

/* "PxQ" or "PxQxR" into procs (1 beyond the given ones): 0, or -1 */
static int parse_layout(const char *s, int dim, int procs[3])
{
    int n = 0;
    const char *q = s;
    for (int a = 0; a < 3; a++) procs[a] = 1;
    while (*q && n < 3) {
        char *end;
        long v = strtol(q, &end, 10);
        if (end == q || v < 1 || v > 1000000) return -1;
        procs[n++] = (int)v;
        q = end;
        if (*q == 'x' || *q == 'X' || *q == ',') q++;
        else if (*q) return -1;
    }
    return *q || n != dim ? -1 : 0;
}

static const char axis_name[] = "xyz";

decomp *decomp_create(const pj_program *p, const char *layout, char *err, size_t err_len)
{
    if (decomp_petsc_start(err, err_len) < 0) return NULL;
    decomp *d = calloc(1, sizeof *d);
    if (!d) {
        diag_set(err, err_len, "out of memory");
        return NULL;
    }
    d->p = p;
    d->comm = PETSC_COMM_WORLD;
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->size);
    d->dim = p->dim;
    d->H = p->halo > 0 ? p->halo : 1;
    PetscInt want[3] = {PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE};
    for (int a = 0; a < 3; a++) {
        d->mesh_n[a] = a < p->dim ? p->n[a] : 1;
        d->periodic[a] = a < p->dim && p->periodic[a];
    }
    if (layout && *layout) {
        int pr[3];
        if (parse_layout(layout, p->dim, pr) < 0) {
            diag_set(err, err_len, "--ranks-layout %s: give %d number%s of processes along %s, as in %s", layout,
                     p->dim, p->dim > 1 ? "s" : "", p->dim == 1 ? "x" : p->dim == 2 ? "x and y" : "x, y and z",
                     p->dim == 1 ? "4" : p->dim == 2 ? "2x2" : "2x2x1");
            goto fail;
        }
        if ((long)pr[0] * pr[1] * pr[2] != d->size) {
            diag_set(err, err_len, "--ranks-layout %s makes %ld processes, but the run has %d", layout,
                     (long)pr[0] * pr[1] * pr[2], d->size);
            goto fail;
        }
        for (int a = 0; a < p->dim; a++) want[a] = pr[a];
    }
    for (int a = 0; a < p->dim; a++)
        if (want[a] != PETSC_DECIDE && want[a] > d->mesh_n[a]) {
            diag_set(err, err_len, "%d processes along %c, but the mesh has %lld cells there: a process would have none",
                     (int)want[a], axis_name[a], (long long)d->mesh_n[a]);
            goto fail;
        }
    if ((int64_t)d->size > d->mesh_n[0] * d->mesh_n[1] * d->mesh_n[2]) {
        diag_set(err, err_len, "%d processes for a mesh of %lld cells: a process would have none", d->size,
                 (long long)(d->mesh_n[0] * d->mesh_n[1] * d->mesh_n[2]));
        goto fail;
    }
    DMBoundaryType bt[3];
    for (int a = 0; a < 3; a++) bt[a] = d->periodic[a] ? DM_BOUNDARY_PERIODIC : DM_BOUNDARY_NONE;
    PetscErrorCode e;
    /* the DMDA only chooses the blocks here (stencil width 0: the halo is checked below, with the
       numbers); the exchange is the star forest built on its blocks */
    if (p->dim == 1)
        e = DMDACreate1d(d->comm, bt[0], (PetscInt)d->mesh_n[0], 1, 0, NULL, &d->da);
    else if (p->dim == 2)
        e = DMDACreate2d(d->comm, bt[0], bt[1], DMDA_STENCIL_BOX, (PetscInt)d->mesh_n[0], (PetscInt)d->mesh_n[1],
                         want[0], want[1], 1, 0, NULL, NULL, &d->da);
    else
        e = DMDACreate3d(d->comm, bt[0], bt[1], bt[2], DMDA_STENCIL_BOX, (PetscInt)d->mesh_n[0],
                         (PetscInt)d->mesh_n[1], (PetscInt)d->mesh_n[2], want[0], want[1], want[2], 1, 0, NULL, NULL,
                         NULL, &d->da);
    if (!e) e = DMSetFromOptions(d->da);
    if (!e) e = DMSetUp(d->da);
    if (e) {
        const char *text = NULL;
        char *specific = NULL;
        PetscErrorMessage(e, &text, &specific);
        diag_set(err, err_len, "the mesh (%lld x %lld x %lld cells) cannot be split over %d processes: %s",
                 (long long)d->mesh_n[0], (long long)d->mesh_n[1], (long long)d->mesh_n[2], d->size,
                 specific && *specific ? specific : text ? text : "PETSc error");
        goto fail;
    }
    PetscInt m = 1, n = 1, q = 1;
    DMDAGetInfo(d->da, NULL, NULL, NULL, NULL, &m, &n, &q, NULL, NULL, NULL, NULL, NULL, NULL);
    d->procs[0] = (int)m;
    d->procs[1] = (int)n;
    d->procs[2] = (int)q;
    const PetscInt *own[3] = {NULL, NULL, NULL};
    DMDAGetOwnershipRanges(d->da, &own[0], &own[1], &own[2]);
    for (int a = 0; a < 3; a++) {
        d->start[a] = malloc(sizeof *d->start[a] * ((size_t)d->procs[a] + 1));
        if (!d->start[a]) {
            diag_set(err, err_len, "out of memory");
            goto fail;
        }
        d->start[a][0] = 0;
        for (int c = 0; c < d->procs[a]; c++) d->start[a][c + 1] = d->start[a][c] + (a < p->dim ? own[a][c] : 1);
    }
    /* every block at least as wide as the ghost layers (a neighbour's ghosts come from one block) */
    for (int a = 0; a < p->dim; a++)
        for (int c = 0; c < d->procs[a]; c++) {
            int64_t w = d->start[a][c + 1] - d->start[a][c];
            if (d->procs[a] > 1 && w < d->H) {
                diag_set(err, err_len,
                         "the blocks are too narrow for the stencil: %d processes along %c give a block of %lld "
                         "cell%s, fewer than the %d ghost layers the stencil needs (use fewer processes along %c, "
                         "or --ranks-layout)",
                         d->procs[a], axis_name[a], (long long)w, w == 1 ? "" : "s", d->H, axis_name[a]);
                goto fail;
            }
        }
    PetscInt xs[3] = {0, 0, 0}, xm[3] = {1, 1, 1};
    DMDAGetCorners(d->da, &xs[0], &xs[1], &xs[2], &xm[0], &xm[1], &xm[2]);
    for (int a = 0; a < 3; a++) {
        d->block.first[a] = a < p->dim ? xs[a] : 0;
        d->block.n[a] = a < p->dim ? xm[a] : 1;
    }
    d->blocks = malloc(sizeof *d->blocks * (size_t)d->size);
    d->rank_of = malloc(sizeof *d->rank_of * (size_t)d->size);
    if (!d->blocks || !d->rank_of) {
        diag_set(err, err_len, "out of memory");
        goto fail;
    }
    MPI_Allgather(&d->block, (int)sizeof d->block, MPI_BYTE, d->blocks, (int)sizeof d->block, MPI_BYTE, d->comm);
    for (int r = 0; r < d->size; r++) {
        int col[3];
        for (int a = 0; a < 3; a++) {
            col[a] = 0;
            while (col[a] < d->procs[a] - 1 && d->start[a][col[a] + 1] <= d->blocks[r].first[a]) col[a]++;
        }
        d->rank_of[col[0] + d->procs[0] * (col[1] + d->procs[1] * col[2])] = r;
    }
    return d;
fail:
    decomp_destroy(d);
    return NULL;
}

void decomp_destroy(decomp *d)
{
    if (!d) return;
    if (d->sf) PetscSFDestroy(&d->sf);
    if (d->da) DMDestroy(&d->da);
    for (int a = 0; a < 3; a++) free(d->start[a]);
    free(d->rank_of);
    free(d->blocks);
    free(d);
}

int decomp_rank(const decomp *d) { return d->rank; }
int decomp_size(const decomp *d) { return d->size; }
const grid_block *decomp_block(const decomp *d) { return &d->block; }
const grid_block *decomp_blocks(const decomp *d) { return d->blocks; }
void decomp_layout(const decomp *d, int procs[3])
{
    for (int a = 0; a < 3; a++) procs[a] = d->procs[a];
}

/* the column of processes that holds mesh index v along axis a (v within the mesh) */
static int column_of(const decomp *d, int a, int64_t v)
{
    int lo = 0, hi = d->procs[a] - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (d->start[a][mid] <= v) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* 1 when the block's side lies inside the mesh or on a periodic axis: its ghosts are exchanged */
static int side_exchanged(const decomp *d, int side)
{
    int a = side / 2, hi = side % 2;
    if (a >= d->dim) return 0;
    if (d->periodic[a]) return 1;
    return hi ? d->block.first[a] + d->block.n[a] < d->mesh_n[a] : d->block.first[a] > 0;
}

/* The star forest of the exchange for buffers laid out as g: a leaf per ghost cell of an
 * exchanged side (corners and edges included), its root the same place of the mesh in the block
 * that owns it (wrapped on periodic axes; a place beyond the mesh's boundary is a ghost cell the
 * owner fills by its condition). Indices count elements from the allocation's start. */
static int build_sf(decomp *d, const grid_layout *g, char *err, size_t err_len)
{
    grid_layout *gl = malloc(sizeof *gl * (size_t)d->size);
    if (!gl) {
        diag_set(err, err_len, "out of memory");
        return -1;
    }
    for (int r = 0; r < d->size; r++)
        if (grid_layout_block(&gl[r], d->p, &d->blocks[r], g->esz, g->row_align, "exchange", err, err_len) < 0) {
            free(gl);
            return -1;
        }
    int exch[6];
    for (int side = 0; side < 6; side++) exch[side] = side_exchanged(d, side);
    /* two passes: count, then fill */
    PetscInt n_leaves = 0, *ilocal = NULL;
    PetscSFNode *iremote = NULL;
    for (int pass = 0; pass < 2; pass++) {
        PetscInt k_leaf = 0;
        for (int64_t k = g->lo[2]; k < g->lo[2] + g->ext[2]; k++)
            for (int64_t j = g->lo[1]; j < g->lo[1] + g->ext[1]; j++) {
                int row_ghost = (j < 0 || j >= g->n[1]) || (k < 0 || k >= g->n[2]);
                for (int64_t i = g->lo[0]; i < g->lo[0] + g->ext[0]; i++) {
                    if (!row_ghost && i == 0 && g->n[0] > 0) i = g->n[0]; /* skip the row's interior */
                    if (i >= g->lo[0] + g->ext[0]) break;
                    int64_t c[3] = {i, j, k};
                    int any = 0;
                    for (int a = 0; a < d->dim; a++) {
                        if (c[a] < 0 && exch[2 * a]) any = 1;
                        if (c[a] >= g->n[a] && exch[2 * a + 1]) any = 1;
                    }
                    if (!any) continue;
                    if (pass == 0) {
                        k_leaf++;
                        continue;
                    }
                    int col[3] = {0, 0, 0};
                    int64_t G[3] = {0, 0, 0};
                    for (int a = 0; a < d->dim; a++) {
                        G[a] = d->block.first[a] + c[a];
                        if (d->periodic[a]) G[a] = ((G[a] % d->mesh_n[a]) + d->mesh_n[a]) % d->mesh_n[a];
                        int64_t inside = G[a] < 0 ? 0 : G[a] >= d->mesh_n[a] ? d->mesh_n[a] - 1 : G[a];
                        col[a] = column_of(d, a, inside);
                    }
                    int owner = d->rank_of[col[0] + d->procs[0] * (col[1] + d->procs[1] * col[2])];
                    const grid_layout *go = &gl[owner];
                    int64_t at = go->origin_off, here = g->origin_off;
                    for (int a = 0; a < d->dim; a++) {
                        at += (G[a] - d->blocks[owner].first[a]) * go->stride[a];
                        here += c[a] * g->stride[a];
                    }
                    ilocal[k_leaf] = (PetscInt)here;
                    iremote[k_leaf].rank = owner;
                    iremote[k_leaf].index = (PetscInt)at;
                    k_leaf++;
                }
            }
        if (pass == 0) {
            n_leaves = k_leaf;
            ilocal = malloc(sizeof *ilocal * (size_t)(n_leaves + 1));
            iremote = malloc(sizeof *iremote * (size_t)(n_leaves + 1));
            if (!ilocal || !iremote) {
                free(ilocal);
                free(iremote);
                free(gl);
                diag_set(err, err_len, "out of memory");
                return -1;
            }
        }
    }
    free(gl);
    if ((double)g->elems > (double)PETSC_MAX_INT) {
        free(ilocal);
        free(iremote);
        diag_set(err, err_len, "a block of %.3g elements is too large for this PETSc's %d-byte indices",
                 (double)g->elems, (int)sizeof(PetscInt));
        return -1;
    }
    PetscErrorCode e = PetscSFCreate(d->comm, &d->sf);
    if (!e) e = PetscSFSetGraph(d->sf, (PetscInt)g->elems, n_leaves, ilocal, PETSC_OWN_POINTER, iremote,
                                PETSC_OWN_POINTER);
    else {
        free(ilocal);
        free(iremote);
    }
    if (!e) e = PetscSFSetUp(d->sf);
    if (e) {
        diag_set(err, err_len, "the ghost exchange could not be set up: PETSc error %d", (int)e);
        if (d->sf) PetscSFDestroy(&d->sf);
        d->sf = NULL;
        return -1;
    }
    d->sf_esz = g->esz;
    d->sf_origin_off = g->origin_off;
    d->sf_leaves = n_leaves;
    return 0;
}

static int exchange(void *ctx, const grid_layout *g, void *const *buf, int n_fields, char *err, size_t err_len)
{
    decomp *d = ctx;
    if (!d->sf && build_sf(d, g, err, err_len) < 0) return -1;
    double t0 = MPI_Wtime();
    MPI_Datatype unit = g->esz == sizeof(float) ? MPI_FLOAT : MPI_DOUBLE;
    PetscErrorCode e = 0;
    for (int f = 0; f < n_fields && !e; f++) {
        char *base = (char *)buf[f] - d->sf_origin_off * (int64_t)g->esz;
        e = PetscSFBcastBegin(d->sf, unit, base, base, MPI_REPLACE);
    }
    for (int f = 0; f < n_fields && !e; f++) {
        char *base = (char *)buf[f] - d->sf_origin_off * (int64_t)g->esz;
        e = PetscSFBcastEnd(d->sf, unit, base, base, MPI_REPLACE);
    }
    if (e) {
        diag_set(err, err_len, "the ghost exchange failed: PETSc error %d", (int)e);
        return -1;
    }
    d->st.exchanges++;
    d->st.seconds += MPI_Wtime() - t0;
    d->st.bytes += (double)d->sf_leaves * (double)g->esz * n_fields;
    return 0;
}

void decomp_get_stats(const decomp *d, decomp_stats *st) { *st = d->st; }

void decomp_ghosts(decomp *d, ghost_settings *gs)
{
    for (int side = 0; side < 6; side++) gs->exchanged[side] = (unsigned char)side_exchanged(d, side);
    gs->exchange = exchange;
    gs->exchange_ctx = d;
}

int decomp_any(decomp *d, int mine)
{
    int v = mine != 0, all = 0;
    MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MAX, d->comm);
    return all;
}

int decomp_agree(decomp *d, int failed, char *err, size_t err_len)
{
    int mine = failed ? d->rank : d->size, lowest = d->size;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, d->comm);
    if (lowest == d->size) return 0;
    char text[1024] = "";
    if (d->rank == lowest) snprintf(text, sizeof text, "%s", err && err_len ? err : "failed");
    MPI_Bcast(text, (int)sizeof text, MPI_CHAR, lowest, d->comm);
    if (d->rank != lowest) diag_set(err, err_len, "process %d of %d: %s", lowest, d->size, text);
    return 1;
}

void decomp_reduce(decomp *d, double *v, int n, int op)
{
    if (n <= 0) return;
    MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, op == 0 ? MPI_SUM : op == 1 ? MPI_MAX : MPI_MIN, d->comm);
}

int64_t decomp_min64(decomp *d, int64_t v)
{
    int64_t all = v;
    MPI_Allreduce(&v, &all, 1, MPI_INT64_T, MPI_MIN, d->comm);
    return all;
}

void decomp_bcast(decomp *d, void *data, size_t n, int from) { MPI_Bcast(data, (int)n, MPI_BYTE, from, d->comm); }
void decomp_barrier(decomp *d) { MPI_Barrier(d->comm); }

static int64_t block_cells(const grid_block *b) { return b->n[0] * b->n[1] * b->n[2]; }

/* counts and displacements of every block, in cells, on rank 0 */
static int block_counts(decomp *d, int **counts, int **displs)
{
    *counts = *displs = NULL;
    if (d->rank != 0) return 0;
    *counts = malloc(sizeof **counts * (size_t)d->size);
    *displs = malloc(sizeof **displs * (size_t)d->size);
    if (!*counts || !*displs) return -1;
    int64_t at = 0;
    for (int r = 0; r < d->size; r++) {
        (*counts)[r] = (int)block_cells(&d->blocks[r]);
        (*displs)[r] = (int)at;
        at += block_cells(&d->blocks[r]);
    }
    return 0;
}

/* copies between the blocks one after another (packed) and the mesh's order */
static void unpack_blocks(decomp *d, const double *packed, double *mesh, int to_mesh)
{
    int64_t at = 0;
    for (int r = 0; r < d->size; r++) {
        const grid_block *b = &d->blocks[r];
        for (int64_t k = 0; k < b->n[2]; k++)
            for (int64_t j = 0; j < b->n[1]; j++) {
                int64_t m = b->first[0] + d->mesh_n[0] * ((b->first[1] + j) + d->mesh_n[1] * (b->first[2] + k));
                if (to_mesh) memcpy(mesh + m, packed + at, sizeof *mesh * (size_t)b->n[0]);
                else memcpy((double *)packed + at, mesh + m, sizeof *mesh * (size_t)b->n[0]);
                at += b->n[0];
            }
    }
}

int decomp_gather(decomp *d, const double *block, double *mesh)
{
    int *counts, *displs, ok = 1;
    double *packed = NULL;
    if (block_counts(d, &counts, &displs) < 0) ok = 0;
    if (d->rank == 0 && ok) {
        packed = malloc(sizeof *packed * (size_t)(d->mesh_n[0] * d->mesh_n[1] * d->mesh_n[2]));
        if (!packed) ok = 0;
    }
    if (decomp_any(d, !ok)) {
        free(counts);
        free(displs);
        free(packed);
        return -1;
    }
    MPI_Gatherv(block, (int)block_cells(&d->block), MPI_DOUBLE, packed, counts, displs, MPI_DOUBLE, 0, d->comm);
    if (d->rank == 0) unpack_blocks(d, packed, mesh, 1);
    free(counts);
    free(displs);
    free(packed);
    return 0;
}

int decomp_scatter(decomp *d, const double *mesh, double *block)
{
    int *counts, *displs, ok = 1;
    double *packed = NULL;
    if (block_counts(d, &counts, &displs) < 0) ok = 0;
    if (d->rank == 0 && ok) {
        packed = malloc(sizeof *packed * (size_t)(d->mesh_n[0] * d->mesh_n[1] * d->mesh_n[2]));
        if (!packed) ok = 0;
        else unpack_blocks(d, packed, (double *)mesh, 0);
    }
    if (decomp_any(d, !ok)) {
        free(counts);
        free(displs);
        free(packed);
        return -1;
    }
    MPI_Scatterv(packed, counts, displs, MPI_DOUBLE, block, (int)block_cells(&d->block), MPI_DOUBLE, 0, d->comm);
    free(counts);
    free(displs);
    free(packed);
    return 0;
}

const decomp_ops decomp_module_ops = {decomp_create, decomp_destroy, decomp_rank,   decomp_size,    decomp_block,
                                      decomp_blocks, decomp_layout,  decomp_ghosts, decomp_any,     decomp_agree,
                                      decomp_reduce, decomp_min64,   decomp_bcast,  decomp_barrier, decomp_gather,
                                      decomp_scatter, decomp_get_stats};

#elif defined(PJ_HAVE_PETSC)
/* In the library built with PETSc: the module's functions (implicit_loader.c opens it). A decomp
 * exists only once the module was loaded. */
#include "implicit_module.h"
static const decomp_ops *ops;

decomp *decomp_create(const pj_program *p, const char *layout, char *err, size_t err_len)
{
    const implicit_ops *m = implicit_module_ops(err, err_len);
    if (!m) return NULL;
    ops = m->decomp;
    return ops->create(p, layout, err, err_len);
}

void decomp_destroy(decomp *d) { if (d) ops->destroy(d); }
int decomp_rank(const decomp *d) { return ops->rank(d); }
int decomp_size(const decomp *d) { return ops->size(d); }
const grid_block *decomp_block(const decomp *d) { return ops->block(d); }
const grid_block *decomp_blocks(const decomp *d) { return ops->blocks(d); }
void decomp_layout(const decomp *d, int procs[3]) { ops->layout(d, procs); }
void decomp_ghosts(decomp *d, ghost_settings *gs) { ops->ghosts(d, gs); }
int decomp_any(decomp *d, int mine) { return ops->any(d, mine); }
int decomp_agree(decomp *d, int failed, char *err, size_t err_len) { return ops->agree(d, failed, err, err_len); }
void decomp_reduce(decomp *d, double *v, int n, int op) { ops->reduce(d, v, n, op); }
int64_t decomp_min64(decomp *d, int64_t v) { return ops->min64(d, v); }
void decomp_bcast(decomp *d, void *data, size_t n, int from) { ops->bcast(d, data, n, from); }
void decomp_barrier(decomp *d) { ops->barrier(d); }
int decomp_gather(decomp *d, const double *block, double *mesh) { return ops->gather(d, block, mesh); }
int decomp_scatter(decomp *d, const double *mesh, double *block) { return ops->scatter(d, mesh, block); }
void decomp_get_stats(const decomp *d, decomp_stats *st) { ops->get_stats(d, st); }

#else /* without PETSc */

int decomp_petsc_start(char *err, size_t err_len)
{
    diag_set(err, err_len, "this build of pdejit has no MPI: it was built without PETSc (-DPJ_WITH_PETSC=OFF)");
    return -1;
}

decomp *decomp_create(const pj_program *p, const char *layout, char *err, size_t err_len)
{
    (void)p;
    (void)layout;
    decomp_petsc_start(err, err_len);
    return NULL;
}

void decomp_destroy(decomp *d) { (void)d; }
void decomp_get_stats(const decomp *d, decomp_stats *st) { (void)d; memset(st, 0, sizeof *st); }
int decomp_rank(const decomp *d) { (void)d; return 0; }
int decomp_size(const decomp *d) { (void)d; return 1; }
const grid_block *decomp_block(const decomp *d) { (void)d; return NULL; }
const grid_block *decomp_blocks(const decomp *d) { (void)d; return NULL; }
void decomp_layout(const decomp *d, int procs[3]) { (void)d; procs[0] = procs[1] = procs[2] = 1; }
void decomp_ghosts(decomp *d, ghost_settings *gs) { (void)d; (void)gs; }
int decomp_any(decomp *d, int mine) { (void)d; return mine != 0; }
int decomp_agree(decomp *d, int failed, char *err, size_t err_len) { (void)d; (void)err; (void)err_len; return failed != 0; }
void decomp_reduce(decomp *d, double *v, int n, int op) { (void)d; (void)v; (void)n; (void)op; }
int64_t decomp_min64(decomp *d, int64_t v) { (void)d; return v; }
void decomp_bcast(decomp *d, void *data, size_t n, int from) { (void)d; (void)data; (void)n; (void)from; }
void decomp_barrier(decomp *d) { (void)d; }
int decomp_gather(decomp *d, const double *block, double *mesh) { (void)d; (void)block; (void)mesh; return -1; }
int decomp_scatter(decomp *d, const double *mesh, double *block) { (void)d; (void)mesh; (void)block; return -1; }

#endif
