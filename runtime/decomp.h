/* decomp.h — a mesh decomposed over the processes of an MPI run (`mpirun -np N pdejit run`),
 * through PETSc: its DMDA chooses the blocks (one per process, in its process layout, or the one
 * --ranks-layout / -da_processors_x give), and a PETSc star forest (PetscSF) built on that
 * decomposition exchanges the ghost cells between blocks, from and into pdejit's own buffers.
 *
 * The exchange makes a block's buffers what the whole mesh's would hold there: a block first
 * fills the sides that lie on the mesh's boundary by their conditions (sim.c), then every ghost
 * cell of an inner side (or of a periodic wrap) is copied from the block that owns that place —
 * its interior, or the ghost cells it filled by a condition (a corner beside the boundary). So
 * kernels read the same values as on one process, and explicit runs give the same bits whatever
 * the number of processes.
 *
 * The collectives below are what the decomposed engine (decomp_engine.c, a table wrapping a back
 * end's) needs to act on the whole mesh: fields gathered on rank 0 and scattered from it, flags,
 * sums and extremes over every process, a failure on one process agreed by all with its message.
 * Without PETSc (PJ_HAVE_PETSC unset), decomp_create says this build cannot run over MPI. Library
 * code: nothing prints or exits. */
#ifndef PJ_DECOMP_H
#define PJ_DECOMP_H
#include <stddef.h>
#include <stdint.h>
#include "grid.h"
#include "program.h"

typedef struct decomp decomp;

/* The number of processes mpirun (or another MPI launcher) started this one with, read from the
 * launcher's environment without starting MPI: 1 when not started by one. */
int decomp_launched_size(void);
/* This process's rank among them (0 when not started by one). */
int decomp_launched_rank(void);
/* The processes the launcher started on this machine (1 when not started by one). */
int decomp_launched_local_size(void);

/* Decomposes p's mesh over the processes of MPI_COMM_WORLD (starting MPI and PETSc when needed).
 * layout: NULL or "" to let the DMDA choose (PETSc's -da_processors_x/y/z options apply), else
 * "PxQ" / "PxQxR" processes along x, y, z. Refused with the numbers: a layout whose product is
 * not the number of processes, an axis with more processes than cells, a block narrower than
 * the ghost layers its stencil needs. Every process must call it (collective). NULL with a message
 * on failure (the same on every process). */
decomp *decomp_create(const pj_program *p, const char *layout, char *err, size_t err_len);
void decomp_destroy(decomp *d);

int decomp_rank(const decomp *d);
int decomp_size(const decomp *d);
/* This process's block, every process's (by rank), and the processes along each axis. */
const grid_block *decomp_block(const decomp *d);
const grid_block *decomp_blocks(const decomp *d);
void decomp_layout(const decomp *d, int procs[3]);

/* The ghost settings of this process's block: its inner sides (and periodic axes) exchanged. */
void decomp_ghosts(decomp *d, ghost_settings *gs);

/* Collectives (every process calls them, in the same order). */
/* 1 when `mine` is nonzero on any process. */
int decomp_any(decomp *d, int mine);
/* Agreement on a failure: when `failed` on some process, every process gets 1 and the message of
 * the lowest failing rank in err ("process 2 of 4: ..."); else 0 and err untouched. */
int decomp_agree(decomp *d, int failed, char *err, size_t err_len);
/* Reductions of n doubles in place: op 0 sum, 1 max, 2 min. */
void decomp_reduce(decomp *d, double *v, int n, int op);
/* The lowest of one int64 over every process. */
int64_t decomp_min64(decomp *d, int64_t v);
/* Broadcasts n bytes from process `from`. */
void decomp_bcast(decomp *d, void *data, size_t n, int from);
/* Waits for every process. */
void decomp_barrier(decomp *d);
/* The block's interior values (x fastest) gathered into the mesh's order on rank 0 (mesh may be
 * NULL elsewhere), and the reverse. 0, or -1 out of memory (on every process). */
int decomp_gather(decomp *d, const double *block, double *mesh);
int decomp_scatter(decomp *d, const double *mesh, double *block);

/* What this process's ghost exchanges took: calls, wall seconds (waits included), bytes received. */
typedef struct decomp_stats {
    int64_t exchanges;
    double seconds, bytes;
} decomp_stats;
void decomp_get_stats(const decomp *d, decomp_stats *st);

/* Starts PETSc (and MPI) once per process, its errors returned rather than printed, without
 * signal handlers of its own; the implicit solver uses it too. 0, or -1 with a message. */
int decomp_petsc_start(char *err, size_t err_len);

#endif
