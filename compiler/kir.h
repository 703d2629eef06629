/* kir.h — the kernel IR: one typed DAG per kernel, the single input of every back end.
 *
 * A kernel is evaluated once per cell of a region (the interior cells for a stage or an
 * initial value, the boundary cells of one side for a boundary condition). Its nodes are
 * kept in one array in topological order (operands before users) and hash-consed on
 * construction, so common subexpressions exist once and constants are folded as they are
 * built. Nothing in a kernel names anything the user wrote: fields and params are numbers,
 * so the canonical hash does not change when the user renames or reformats.
 *
 *   builder:   kir_new, kir_const/param/leaf/load/coord, kir_op, kir_add_output
 *   passes:    kir_finish (drop dead nodes, hash) -> kir_verify between passes
 *   queries:   kir_halo, kir_hash_hex, kir_print
 *   derivatives: derive_jacobian (derive.h) builds a KIR_JACOBIAN kernel from a stage kernel
 *
 * Memory: a kernel owns its arrays (malloc); kir_free releases them. Nothing here aborts: out
 * of memory while building is the sticky k->failed, reported by kir_verify. */
#ifndef PJ_KIR_H
#define PJ_KIR_H
#include <stdint.h>
#include <stdio.h>
#include "kir_ops.h"

typedef enum kir_op {
#define X(name, text, arity, type, libm, user, deriv) KIR_##name,
    KIR_OPS(X)
#undef X
    KIR_N_OPS
} kir_op;

typedef enum kir_type { KIR_F, KIR_B } kir_type;

/* How the LLVM back end calls a libm op: the `how` of the libm column of kir_ops.h. */
enum {
    KIR_LIBM_CALL = 0,      /* a call of the libm function (exp, expf) */
    KIR_LIBM_INTRINSIC = 1, /* the LLVM intrinsic of the same name instead (llvm.fabs.f64): exact */
    KIR_LIBM_VEC = 2,       /* glibc's vector math library (libmvec) has its variants */
    KIR_LIBM_BUILTIN = 4,   /* LLVM knows the function: under fast math it may widen it itself */
};

typedef struct kir_op_info {
    const char *text;
    int arity;
    kir_type type;
    const char *cfn;     /* libm function (double), or NULL */
    const char *ffn;     /* its float twin (expf), or NULL */
    int libm;            /* KIR_LIBM_* bits of a libm function */
    const char *user;    /* the function a problem calls it by (arity arguments), or NULL */
} kir_op_info;
extern const kir_op_info kir_ops[KIR_N_OPS];

#define KIR_MAX_DIM 3
#define KIR_MAX_OFFSET 100

typedef struct kir_node {
    uint8_t op, type;
    uint8_t axis;        /* SPACING, COORD; RAND: 0 rand(), 2 randn() */
    int8_t half;         /* COORD: offset in half cells from the cell centre */
    int8_t off[3];       /* LOAD, RAND: cell offset along x, y, z */
    int16_t slot;        /* LOAD: which buffer set (see kir_launch.buf) */
    int32_t index;       /* LOAD: field number; PARAM: param number; RAND: call site */
    int32_t arg[3];      /* operand node ids, -1 when unused */
    double value;        /* CONST */
    uint64_t hash;       /* structural: op, immediates and operands' hashes */
} kir_node;

/* What a kernel writes: the value of `node` into buffer (slot, field) at the cell.
 * For KIR_BC kernels `slot` says which coefficient (0: a, 1: b, 2: c of a*u + b*dn(u) = c). */
typedef struct kir_output { int slot, field, node; } kir_output;

typedef enum kir_kind {
    KIR_STAGE,   /* one stage of a time step: reads slots at offsets, writes slots at the cell */
    KIR_INIT,    /* initial values: no loads, writes slot 0 */
    KIR_BC,      /* boundary coefficients on one side; COORD on the side's axis is the face */
    KIR_PARAMS,  /* param values: output i (field = i) may read PARAM j < i only */
    KIR_RHS,     /* the right-hand side F(U): reads slot 0 (U) at offsets, output (1, f) = F of
                    field f (a buffer apart: no write where a neighbour reads); the time schemes
                    (scheme.c) compose the stage kernels from it */
    KIR_JACOBIAN,/* derivatives of a stage-like kernel (compiler/derive.h): reads slots [0, n_slots)
                    at offsets like a stage, and output j writes buffer n_slots * n_fields + j
                    (slot n_slots + j / n_fields, field j % n_fields) at the cell */
    KIR_REDUCE,  /* reductions over the interior cells (monitors): reads slot 0 at offsets like rhs
                    (n_slots = 1); output j has slot = its kir_reduce_op and field = j, and
                    writes one partial result per part of the grid (see "Reductions" below) */
} kir_kind;

/* Reductions. A KIR_REDUCE kernel cuts the interior into parts: in 1D blocks of
 * KIR_REDUCE_BLOCK_1D cells, in 2D the rows (y), in 3D the planes (z): kir_reduce_parts().
 * The kernel's (begin, end) are part numbers. Within a part, cells are visited row by row, x
 * fastest; the cell at x position i of its row (1D: of its block) goes into lane i % KIR_REDUCE_LANES
 * of an accumulator in double (single-precision values are widened), lanes starting at
 * kir_reduce_identity(op) and combined with kir_reduce_combine(op, lane, value). The part's
 * result is lane 0 combined with lanes 1, 2, ... in order, stored (a double) at
 * buf[n_slots * n_fields + j][part] for output j; the caller combines parts 0, 1, ... in order
 * (kir_reduce_finish). Every back end follows this order exactly, so a result depends neither on
 * the number of threads nor on the vector width, and is the interpreter's bit for bit where the
 * values are. */
typedef enum kir_reduce_op { KIR_RED_SUM, KIR_RED_MAX, KIR_RED_MIN } kir_reduce_op;
#define KIR_REDUCE_LANES 8
#define KIR_REDUCE_BLOCK_1D 4096
/* max and min: a NaN value wins and stays (a blown-up field shows as nan) */
static inline double kir_reduce_combine(int op, double acc, double v)
{
    if (op == KIR_RED_SUM) return acc + v;
    if (op == KIR_RED_MAX) return (v > acc || v != v) ? v : acc;
    return (v < acc || v != v) ? v : acc;
}
double kir_reduce_identity(int op);
/* Parts of a grid of n cells (per axis) in dim dimensions. */
int64_t kir_reduce_parts(int dim, const int64_t n[3]);
/* Combines n_parts partial results in order. */
double kir_reduce_finish(int op, const double *part, int64_t n_parts);

/* The metric tables of a mesh's non-uniform or curvilinear axes (compiler/kir_metric.c), read by
 * METRIC nodes: computed once by the front end from the mesh, shared (counted references) by
 * every kernel that reads them, and part of each such kernel's hash. Table t of axis a holds the
 * value at mesh index g (faces: face g is the low face of cell g; cells: cell g) at
 * tab[a][t][g + KIR_METRIC_PAD], for g in [-KIR_METRIC_PAD, n + KIR_METRIC_PAD]: ghosts and
 * every cell a stencil reaches from them. Every back end reads these same doubles (rounded to
 * float in single precision), so the metric costs a load, not a pow or a select tree, per cell. */
#define KIR_METRIC_PAD 256
enum {
    KIR_MT_FACE,   /* face position X(g) */
    KIR_MT_DIST,   /* centre-to-centre distance across face g (the boundary cell's width at a side) */
    KIR_MT_INVDIST,/* 1 / DIST */
    KIR_MT_AREA,   /* face area factor: 1, r, r^2 */
    KIR_MT_VOL,    /* cell volume factor: w, (r+^2 - r-^2)/2, (r+^3 - r-^3)/3 */
    KIR_MT_INVVOL, /* 1 / VOL (0 where VOL is 0: a ghost cell astride the axis) */
    KIR_MT_LAPHI,  /* AREA(g + 1) INVDIST(g + 1) INVVOL(g): lap's coefficient through cell g's high face */
    KIR_MT_LAPLO,  /* AREA(g) INVDIST(g) INVVOL(g): through its low face */
    KIR_MT_KINDS
};
typedef struct kir_metric {
    _Atomic int refs;     /* counted references */
    int64_t len[3];       /* entries of each table of axis a: n + 1 + 2 KIR_METRIC_PAD; 0: no tables */
    double *tab[3][KIR_MT_KINDS];
    uint64_t hash;        /* of every table's contents */
} kir_metric;
extern const char *const kir_metric_names[KIR_MT_KINDS]; /* "face", "dist" ... for listings */
/* A new table set with one reference (len[] 0: fill with kir_metric_axis), NULL when out of memory. */
kir_metric *kir_metric_new(void);
/* Allocates axis a's tables for n cells (entries NaN); -1 when out of memory. */
int kir_metric_axis(kir_metric *m, int a, int64_t n);
void kir_metric_seal(kir_metric *m); /* computes the hash after the tables are filled */
kir_metric *kir_metric_ref(kir_metric *m);
void kir_metric_unref(kir_metric *m);
/* Table t of axis a at mesh index g; NaN outside the tables. */
double kir_metric_at(const kir_metric *m, int a, int t, int64_t g);

typedef struct kir_kernel {
    kir_kind kind;
    int dim;             /* 1, 2 or 3 */
    int n_fields, n_params, n_slots;
    int side;            /* KIR_BC: 0 left 1 right 2 bottom 3 top 4 back 5 front */
    char name[32];       /* "stage1", "init", "bc.left": for messages and listings */
    kir_node *nodes;
    int n_nodes, cap_nodes;
    int *table;          /* open-addressing hash-cons table of node ids, -1 empty */
    int table_cap;
    kir_output *outputs;
    int n_outputs, cap_outputs;
    uint8_t hash[16];    /* canonical hash, valid after kir_finish */
    int failed;          /* out of memory while building: sticky; kir_verify reports it */
    kir_metric *metric;  /* the tables METRIC nodes read (a reference), or NULL */
} kir_kernel;

/* NULL when out of memory. */
kir_kernel *kir_new(kir_kind kind, int dim, int n_fields, int n_params, int n_slots, const char *name);
void kir_free(kir_kernel *k);
kir_kernel *kir_clone(const kir_kernel *k);   /* NULL when out of memory */
/* A finished kernel of outputs [first, first + n) of k and the nodes they need (a Jacobian's
 * outputs move to the subset's positions). NULL when out of memory. */
kir_kernel *kir_subset(const kir_kernel *k, int first, int n);

/* Builders return a node id. Each folds constants and reuses an identical existing node. Out of
 * memory sets k->failed; from then on builders return node 0 (which exists) and change nothing. */
int kir_const(kir_kernel *k, double value);
int kir_param(kir_kernel *k, int index);
int kir_leaf(kir_kernel *k, kir_op op);                 /* TIME, DT */
int kir_spacing(kir_kernel *k, int axis);
int kir_coord(kir_kernel *k, int axis, int half);
int kir_load(kir_kernel *k, int slot, int field, const int off[3]);
/* rand() (part 0: uniform in [0, 1)) or randn() (part 2: standard normal) of call site `site` at
 * the cell at offset off (compiler/noise.h). Stage, init and rhs kernels only. */
int kir_rand(kir_kernel *k, int site, int part, const int off[3]);
/* 1 when the face between the cells at offsets off and off + 1 along axis is a side of the mesh
 * (`boundary` in face context), else 0. */
int kir_edge(kir_kernel *k, int axis, int off);
/* Table t of m along axis at the mesh index of the cell + off: k takes a reference to m (a kernel
 * reads one table set: another fails the kernel). */
int kir_metric_node(kir_kernel *k, kir_metric *m, int axis, int t, int off);
int kir_op1(kir_kernel *k, kir_op op, int a);
int kir_op2(kir_kernel *k, kir_op op, int a, int b);
int kir_op3(kir_kernel *k, kir_op op, int a, int b, int c);
/* Converts between F and B as needed: a boolean used as a number is 1/0, a number used as a
 * condition is "not zero". */
int kir_as_f(kir_kernel *k, int node);
int kir_as_b(kir_kernel *k, int node);
void kir_add_output(kir_kernel *k, int slot, int field, int node);
/* Rebuilds every node of src in dst through the builders (so they fold and share nodes with
 * what dst already holds), a load of slot s becoming a load of slot_map[s] — or, for a field f
 * with field_slot && field_slot[f] >= 0, of slot field_slot[f] whatever s. node_map[i]
 * receives the dst id of src node i (src->n_nodes entries). src and dst must agree on the
 * dimension, fields and params. */
void kir_import(kir_kernel *dst, const kir_kernel *src, const int *slot_map, const int *field_slot, int *node_map);
/* kir_import with every load of field subst_field (any slot, any offset) replaced by dst's node
 * subst_node (subst_field < 0: none): an expression with a field set to a value (compiler/algebraic.c). */
void kir_import_subst(kir_kernel *dst, const kir_kernel *src, const int *slot_map, const int *field_slot, int *node_map,
                      int subst_field, int subst_node);

/* Drops nodes no output reaches, renumbers, computes the canonical hash. */
void kir_finish(kir_kernel *k);
/* Checks the invariants: operand ids before users, arities, types, slots and fields in range,
 * offsets within the kernel's dimension. Returns 0, or -1 with a message in err. */
int kir_verify(const kir_kernel *k, char *err, size_t err_len);

/* halo[f] = largest |offset| of any load of field f, along any axis (0 when never loaded
 * away from the cell). halo has n_fields entries. */
void kir_halo(const kir_kernel *k, int *halo);
/* Values one evaluation moves per cell at the least: each (slot, field) it loads, once, and
 * each output it stores (what a fused pass must read and write: the bandwidth figures). */
int kir_values_per_cell(const kir_kernel *k);
/* Largest |offset| along each axis, over all fields. */
void kir_halo_axes(const kir_kernel *k, int halo[3]);
void kir_hash_hex(const kir_kernel *k, char out[33]);
/* "stage", "init", "bc", "params", "rhs" ... */
const char *kir_kind_name(kir_kind kind);
/* Prints the kernel readably; names may be NULL (then f0, p0 ...). */
void kir_print(const kir_kernel *k, FILE *out, const char *const *field_names,
               const char *const *param_names);

/* Scalar semantics of one operation, in double or in float (single != 0): used by constant
 * folding and by the interpreter. Libm functions come from the table's libm column (kir_ops.h),
 * as the interpreter's loops do. Booleans are 0.0 / 1.0. */
double kir_eval_scalar(kir_op op, double a, double b, double c, int single);

/* Everything a kernel needs at run time; identical for the interpreter and the CPU code. */
typedef struct kir_launch {
    void *const *buf;    /* [slot * n_fields + field]: address of cell (0,0,0), double* or float* */
    const double *param; /* n_params values (double even in single precision) */
    double t, dt;
    int64_t n[3];        /* interior cells along each axis; 1 beyond the dimension */
    int64_t stride[3];   /* distance in elements between neighbours along each axis; stride[0] = 1 */
    double h[3], origin[3];
    int32_t *nonfinite;  /* set to 1 by a stage kernel that stored a NaN or an infinity (may be
                            NULL: then nothing is recorded); never cleared by kernels */
    int32_t prefetch;    /* nonzero: the state is larger than the last-level cache, so CPU
                            kernels prefetch the rows the next row will read (sim.c decides) */
    /* the key of rand() and randn() (compiler/noise.h) */
    int32_t stage;       /* stage code: 0 initial values, s + 1 stage s of a step */
    uint64_t seed;       /* the key */
    int64_t step;        /* steps taken before this one */
    /* a block of a larger mesh (a process's part of a decomposed run; zero: the whole mesh):
       the mesh index of the block's cell 0, and the mesh's cells after the block's last, per
       axis. Coordinates, `boundary` and rand() are those of the whole mesh, so a block's
       kernels compute exactly what the whole mesh's would there. */
    int64_t first[3];
    int64_t beyond[3];
} kir_launch;

/* A compiled CPU stage kernel: cells with outermost index (z in 3D, y in 2D, x in 1D) in
 * [begin, end), all inner indices. */
typedef void (*kir_cpu_fn)(const kir_launch *launch, int64_t begin, int64_t end);



/* Evaluates `node` of a kernel without loads or coordinates (params, constants, t, math):
 * used for param values and constant coefficients. NaN for anything cell-dependent. Allocates
 * only for kernels of more than 1024 nodes (NaN when that fails). */
double kir_eval_uniform(const kir_kernel *k, int node, const double *params, double t);
/* The params of a KIR_PARAMS kernel, in order (a param may use earlier ones): output o into
 * param[its field], except where fixed[field] (may be NULL) is set. The one evaluator of params:
 * the front end's defaults, every executor's values after a change. */
void kir_eval_params(const kir_kernel *k, double *param, const unsigned char *fixed);
/* 1 when `node` depends on TIME or COORD (changes in time or along a boundary). */
int kir_depends_on_place_or_time(const kir_kernel *k, int node);
#endif
