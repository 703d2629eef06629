/* llvm_internal.h — what the CPU back end's files share (not part of its interface, llvm_backend.h):
 *
 *   llvm_backend.c    the ORC LLJIT and host target; llvm_compile (IR text -> optimised IR, object),
 *                     llvm_load / llvm_unload
 *   llvm_ir.c         kernel IR -> LLVM IR text (llvm_gen_ir): the module, the kernel function, its
 *                     loop nest, one node, the stores, libm / libmvec declarations and attributes
 *   llvm_ir_reduce.c  the loop nest of a reduction kernel (KIR_REDUCE)
 *   llvm_ir_split.c   a large kernel cut into segment functions, and the passes it gets
 *   llvm_ir_carry.c   the x loop's loads carried from its previous step (x-metric kernels)
 *   llvm_ir_rows.c    the second row of a 2D kernel's two-row pass
 *
 * The IR generator's state (gen) and text buffer (sbuf), the launch struct as LLVM IR, and the
 * entry points each file offers the others. */
#ifndef PJ_LLVM_INTERNAL_H
#define PJ_LLVM_INTERNAL_H
#include <stddef.h>

#include "kir.h"
#include "llvm_backend.h"

/* The IR below describes kir_launch field by field: keep the two in step. */
_Static_assert(offsetof(kir_launch, buf) == 0 && offsetof(kir_launch, param) == 8 &&
                   offsetof(kir_launch, t) == 16 && offsetof(kir_launch, dt) == 24 &&
                   offsetof(kir_launch, n) == 32 && offsetof(kir_launch, stride) == 56 &&
                   offsetof(kir_launch, h) == 80 && offsetof(kir_launch, origin) == 104 &&
                   offsetof(kir_launch, nonfinite) == 128 && offsetof(kir_launch, prefetch) == 136 &&
                   offsetof(kir_launch, stage) == 140 && offsetof(kir_launch, seed) == 144 &&
                   offsetof(kir_launch, step) == 152 && offsetof(kir_launch, first) == 160 &&
                   offsetof(kir_launch, beyond) == 184 && sizeof(kir_launch) == 208,
               "kir_launch layout changed: update LAUNCH_TYPE in llvm_internal.h");
#define LAUNCH_TYPE                                                                          \
    "%pj.launch = type { i8**, double*, double, double, [3 x i64], [3 x i64], [3 x double], " \
    "[3 x double], i32*, i32, i32, i64, i64, [3 x i64], [3 x i64] }\n"
enum { LF_BUF, LF_PARAM, LF_T, LF_DT, LF_N, LF_STRIDE, LF_H, LF_ORIGIN, LF_NONFINITE, LF_PREFETCH, LF_STAGE, LF_SEED,
       LF_STEP, LF_FIRST, LF_BEYOND };

/* A growing text buffer; `oom` is sticky and checked once at the end. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
    int oom;
} sbuf;
/* Appends printf-style text to b (llvm_ir.c). */
void sb_printf(sbuf *b, const char *fmt, ...);

/* glibc's vector math library at the host's width (fast-math kernels only). */
typedef struct vecmath_isa {
    char isa;            /* the vector ABI letter: 'e' AVX-512, 'd' AVX2, 'b' SSE */
    int lanes_double, lanes_float;
} vecmath_isa;
typedef struct vecmath {
    vecmath_isa isa[2];  /* every width the host can call: the vectoriser picks its factor */
    int n_isa;
    char name[24];       /* "libmvec-avx512" ...: the cache key's vecmath */
} vecmath;

/* One pointer per distinct (buffer, dy, dz): the start of the row the x loop walks. */
typedef struct row { int buf, dy, dz, loaded; } row;

typedef struct gen {
    const kir_kernel *k;
    const llvm_options *opt;
    sbuf *b;
    const char *T;       /* "double" or "float" */
    int align;
    const char *fl;      /* fast-math flags on arithmetic, "" when strict */
    const vecmath *vm;   /* libmvec for this kernel (fast-math and present), else NULL */
    char (*name)[40];    /* the operand text of each node */
    row *rows;
    int n_rows;
    int *row_of;         /* node id (LOAD) -> row; outputs use out_row */
    int *out_row;
    /* a kernel split into segment functions (llvm_ir_split.c): */
    int n_seg;           /* 1: not split */
    int n_reg;           /* the segments computing nodes; those after them only store (commit) */
    int *seg_of;         /* node id -> its segment; -1 for a leaf (entry values, constants) */
    int *scr_of;         /* node id -> its scratch row, -1 when none */
    int *store_seg;      /* output -> the segment that stores it */
    int *mark;           /* node id -> the last segment it was imported into (walk_segment) */
    char *remat;         /* node id -> 1: computed again where a later segment uses it */
    int seg_chunk;       /* cells per call of a segment: the length of a scratch row */
    int n_red;           /* a reduce kernel's functions (groups of its outputs); 1: one function */
    int *carry_of;       /* node id (LOAD) -> the LOAD whose previous x step it is, -1 (llvm_ir_carry.c) */
    /* a 2D kernel's two-row pass (llvm_ir.c, emit_x_loop): rows y and y + 1 in one x loop */
    int two;             /* 1 while the function being emitted computes two rows a pass */
    int rem;             /* 1 when the module has the one-row function of an odd last row (and
                            two rows a pass): its loops and the x loops are not unrolled */
    int rowb;            /* 1 while the second row's nodes are emitted (llvm_emit_node) */
    char (*name_b)[40];  /* the second row's operand text of each node (a load it shares: row y's) */
    int *row_of_b;       /* node id (LOAD) -> the second row's row; -1 when shared with row y */
    int *out_row_b;
} gen;

/* llvm_ir.c: the exact constant in LLVM's hexadecimal form (a float constant is written as the double it
 * equals). */
void llvm_const_text(char *out, size_t len, double v, int single);
/* A leaf: a constant or an entry value (param, t, dt, spacing), named once (its name in g->name)
 * and never emitted in a loop body. */
int llvm_is_leaf_op(kir_op op);
/* One node in the x loop body (non-leaf, COORD or LOAD). */
void llvm_emit_node(gen *g, int id);
/* @pj.rand, rand() and randn() of compiler/noise.h (llvm_ir_noise.c) */
void llvm_emit_noise(gen *g);

/* llvm_ir_reduce.c: the loop nest of a KIR_REDUCE kernel, after its entry block: its outputs
 * [j0, j1) and the nodes they use, the x loop's metadata !loop_md; -1 when out of memory. A kernel
 * of more than LLVM_REDUCE_GROUP outputs is emitted as one function per group of that many
 * (llvm_gen_ir): LLVM's time on one function grows with the square of its monitors (its
 * scheduler and alias analysis over one long block: 1000 monitors took 10 s, 2000 42 s). */
#define LLVM_REDUCE_GROUP 128
int llvm_emit_reduce(gen *g, int n_state_bufs, int j0, int j1, int loop_md);

/* llvm_ir_split.c (see its top): whether and how a large kernel is split, its segment functions,
 * the operations of a kernel's loop body and the count above which it is large. */
int llvm_plan_split(gen *g);
int llvm_emit_segment(gen *g, const char *symbol, int t, int n_bufs);
int llvm_count_ops(const kir_kernel *k);
int llvm_large_ops(const llvm_options *opt);

/* The passes a large kernel gets instead of default<O3>: the kernel IR comes with its common
 * subexpressions shared already, so what matters is hoisting the loop-invariant operations
 * (licm), vectorising the x loop and cleaning up; its code is generated at CodeGenLevelNone with
 * SelectionDAG (init_llvm), skipping the scheduler, the greedy register allocator and loop
 * strength reduction, whose time grows fastest with the size of a loop. */
#define LARGE_PIPELINE \
    "function(early-cse,instcombine,loop-simplify,lcssa,loop-mssa(licm),loop-vectorize,instcombine,simplifycfg)"

/* llvm_ir_carry.c (see its top): which loads the x loop carries from its previous step (g->carry_of;
 * -1 when out of memory), whether node id is one they come from, their values before the x loop
 * (in its preheader, per chunk) and their phis at its top (pre: the preheader's label, self: the
 * loop's). */
int llvm_plan_carries(gen *g);
int llvm_carried_from(const gen *g, int id);
void llvm_emit_carry_inits(gen *g);
void llvm_emit_carry_phis(gen *g, const char *pre, const char *self);

/* llvm_ir.c: the row of (buf, dy, dz) in g->rows, added when new; loaded 1: the x loop reads it. */
int llvm_find_row(gen *g, int buf, int dy, int dz, int loaded);
/* llvm_ir_rows.c: g->name_b, row_of_b and out_row_b of the second row of a two-row pass. */
void llvm_plan_row_b(gen *g);

/* llvm_ir.c: writes the module text for kernel k into b; 0, or -1 with a message. vm: libmvec at
 * the host's width, NULL when absent. */
int llvm_gen_ir(const kir_kernel *k, const llvm_options *opt, const char *symbol, const char *triple,
                const char *datalayout, const char *cpu, const char *features, const vecmath *vm, sbuf *b,
                char *err, size_t err_len);

#endif
