/* grid.h — one grid and ghost-fill layer for every back end: the checks a program must pass
 * before any buffer is allocated, the layout of the buffers, and the ghost fill as data.
 *
 * Layout: every buffer (one per slot and field) has the same shape: H ghost layers on both
 * sides of each axis below the dimension (H = the program's halo), rows padded so that the
 * first interior cell of every row starts on a row_align-byte boundary, and 3D planes of
 * GRID_PAGE_PAD_MIN bytes or more padded to a whole number of 4 KiB pages (at most 1/16 more
 * memory: host/tblock.c maps a ring of such planes twice in a row). Cell (i, j, k) is element
 * origin_off + i + j*stride[1] + k*stride[2] of the allocation; rows of one plane are
 * stride[1] apart, planes stride[2] (not always ext[1] rows).
 *
 * Ghost fill: sides in the order x low, x high, y low, y high, z low, z high, each over the
 * allocated extent of the other axes (so the last axis filled sets the corners). Per side and
 * field the plan says how: copy the periodic partner, mirror (dn = 0), or solve the linear
 * condition a*u + b*dn(u) = c of the side's bc kernel for ghost m: g = (c - u_m*(a/2 - b/d)) /
 * (a/2 + b/d), d = (2m-1)h, u_m the interior cell mirrored about the face. A side may instead
 * be handed to a hook (ghost cells "exchanged with a neighbour", when a domain is split over
 * processes), and the plan may be homogeneous (c read as 0: the fill of a difference of two
 * states, as a Jacobian-vector product needs). Back ends run the plan; they decide none of it. */
#ifndef PJ_GRID_H
#define PJ_GRID_H
#include <stddef.h>
#include <stdint.h>
#include "program.h"

#define GRID_PAGE 4096
#define GRID_PAGE_PAD_MIN (16 * GRID_PAGE)

/* A block of the mesh: what one process holds of a decomposed run (runtime/decomp.h). */
typedef struct grid_block {
    int64_t first[3];      /* the mesh index of the block's cell 0 */
    int64_t n[3];          /* the block's cells (1 beyond the dimension) */
} grid_block;

typedef struct grid_layout {
    int dim, H;            /* ghost layers per side, along each axis below dim */
    int row_align;         /* bytes */
    int64_t n[3];          /* interior cells; 1 beyond dim */
    int64_t ghost[3];      /* H below dim, 0 beyond */
    int64_t lo[3];         /* first allocated index per axis (-ghost) */
    int64_t ext[3];        /* allocated indices per axis (n + 2*ghost) */
    int64_t stride[3];     /* elements between neighbours; stride[0] = 1 */
    int64_t origin_off;    /* elements from an allocation's start to cell (0,0,0) */
    size_t elems;          /* elements per buffer */
    size_t esz;            /* bytes per element */
    double h[3], origin[3]; /* of the mesh: a block's cell (i, j, k) is the mesh's cell first + (i, j, k) */
    int64_t first[3];      /* the block's place in the mesh (zero: the layout is the whole mesh) */
    int64_t beyond[3];     /* the mesh's cells after the block's last, per axis */
} grid_layout;

/* Checks p (dimension, fields, slots, stages and their read slots; no axis with fewer cells
 * than the ghost layers) and lays out its buffers for elements of esz bytes, rows aligned to
 * row_align bytes. 0, or -1 with a message that starts with `who` ("sim", "cuda"). */
int grid_layout_make(grid_layout *g, const pj_program *p, size_t esz, int row_align, const char *who, char *err,
                     size_t err_len);
/* The same for one block of p's mesh (NULL: the whole mesh): n is the block's, h and origin the
 * mesh's, first and beyond say where the block lies. */
int grid_layout_block(grid_layout *g, const pj_program *p, const grid_block *block, size_t esz, int row_align,
                      const char *who, char *err, size_t err_len);

/* Memory, checked before any buffer is allocated: a simulation holds n_buffers buffers (one per
 * slot and field) of the layout's elements, halos included, each allocation rounded up to
 * alloc_align bytes. grid_memory_check compares that with `available` bytes and, when it does
 * not fit, says "the problem needs 38.4 GB (12 buffers of 3.2 GB); 22.9 GB are available" (then
 * `where`, e.g. " on the device", when not NULL) and returns -1. Every back end uses it; the host
 * ones with grid_host_memory_available(). */
#define GRID_NEEDS_PREFIX "the problem needs "
double grid_buffer_bytes(const grid_layout *g, size_t alloc_align);
int grid_memory_check(int n_buffers, double buffer_bytes, double available, const char *where, char *err,
                      size_t err_len);
/* The host memory a new simulation may take, in bytes, and what limits it (hostmem.c): the
 * smallest of MemAvailable of /proc/meminfo; the cgroup v2 limit's remainder (memory.max -
 * memory.current) and the cgroup v1 one (memory.limit_in_bytes - memory.usage_in_bytes), each in
 * the process's group of /proc/self/cgroup and every group above it; and the address-space limit
 * (RLIMIT_AS, ulimit -v) less the process's VmSize. $PDEJIT_MEMORY_AVAILABLE (bytes, e.g. 8e9)
 * stands instead of all of these when set (tests). Infinity when none can be read. *which (may
 * be NULL) is set to the words naming the smallest limit for grid_memory_check's `where`, e.g.
 * " (the cgroup v1 limit)", or "" when it came from the variable or nothing limits. */
double grid_host_memory_available(void);
double grid_host_memory_limit(const char **which);
/* The same, reading the files under `root` ("" for the real /proc and /sys) and taking
 * `rlimit_as` bytes (negative: none) as the address-space limit: for tests. */
double grid_host_memory_at(const char *root, double rlimit_as, const char **which);

/* How one field's ghost cells on one side are filled. */
typedef enum ghost_rule { GHOST_MIRROR, GHOST_PERIODIC, GHOST_LINEAR } ghost_rule;

/* Fills the ghost layers of `side` (0 left .. 5 front) of every field of one slot in place of the
 * physical condition: buf[f] is field f's cell (0,0,0) (a host pointer, or a device address on
 * the GPU), laid out as g says. Returns 0, or -1 with a message. */
typedef int (*ghost_hook_fn)(void *ctx, int side, const grid_layout *g, void *const *buf, int n_fields, double t,
                             char *err, size_t err_len);

/* What a simulation is told at its creation, beyond its program (zeroed: the physical conditions). */
/* Fills, at once, the ghost cells of every exchanged side of one slot (ghost_settings): from the
 * blocks of other processes, or across a periodic wrap; called after the sides with rules are
 * filled, so that it may also take the cells other blocks filled by their rules. 0, or -1. */
typedef int (*ghost_exchange_fn)(void *ctx, const grid_layout *g, void *const *buf, int n_fields, char *err,
                                 size_t err_len);

/* What a simulation is told at its creation, beyond its program (zeroed: the physical conditions). */
typedef struct ghost_settings {
    int homogeneous;       /* linear rules with c = 0 */
    ghost_hook_fn hook[6]; /* NULL: the side's rules; else the hook fills that side */
    void *hook_ctx[6];
    unsigned char exchanged[6]; /* 1: the side's ghost cells come from `exchange` (a decomposed mesh) */
    ghost_exchange_fn exchange;
    void *exchange_ctx;
} ghost_settings;

typedef struct ghost_plan {
    int n_sides;           /* 2 * dim */
    ghost_rule *rule;      /* [field * 6 + side] */
    const kir_kernel *bc[6]; /* the side's KIR_BC kernel (a, b, c per field), NULL without linear rules */
    int axis_order[3];     /* the axes in fill order: those with conditions first, periodic ones last
                              (so a periodic wrap copies the corners the other axes' conditions set,
                              as an exchange between blocks does) */
    ghost_settings set;
} ghost_plan;

/* The plan of p's boundary conditions with `settings` (may be NULL). 0, or -1 out of memory. */
int ghost_plan_make(ghost_plan *plan, const pj_program *p, const ghost_settings *settings);
void ghost_plan_free(ghost_plan *plan);

#endif
