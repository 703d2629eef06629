/* llvm_ir.c — kernel IR to LLVM IR text (llvm_gen_ir, called by llvm_compile in llvm_backend.c):
 * the module, the kernel function and its arguments, the loop nest, one node, the stores and the
 * non-finite check, the libm / libmvec declarations and the attributes. A reduction kernel's loop
 * nest is in llvm_ir_reduce.c, a large kernel's segment functions in llvm_ir_split.c.
 *
 * The loop nest (2D shown; 3D adds a z loop outside, 1D runs x over [begin, end)):
 *
 *   entry:  load every launch field used into SSA values (buffer base pointers, params, t,
 *           dt, n, stride, h, origin), so the loops read nothing of the launch struct but
 *           kir_launch.prefetch, once per chunk (see the chunk loop)
 *   y loop over [begin, end):  row pointers  base(slot, field) + (y + dy) * stride[1]
 *     chunk loop over [0, n[0]) (lc): the whole row, or with kir_launch.prefetch 512-byte
 *                                     chunks, each prefetching the next row ahead (CHUNK_BYTES)
 *       x loop over the chunk:  loads row[x + dx], the DAG in node order, then every store,
 *                               then the running maximum of the stored exponent fields
 *   end of row: some exponent field is all ones (NaN, inf) -> *nonfinite = 1 (the runtime
 *               then scans for the field and cell)
 *
 * A 2D stage kernel of the final tier (llvm_options.lsr) computes two rows a pass: y and y + 1 in
 * one x loop, the loads row y + 1 shares with row y loaded once (a 5-point stencil's 10 loads a
 * pair become 8) and twice the independent chains; an odd last row goes to the one-row function
 * "SYMBOL.1"; the x loops are not unrolled (docs/performance.md, "Two rows a pass"). The second
 * row's loads and names: llvm_ir_rows.c. Kernels with carried loads (llvm_ir_carry.c) keep one row.
 *
 * The x loop carries llvm.loop.parallel_accesses over one access group holding every load and
 * store: there is no loop-carried dependence by the aliasing contract (llvm_backend.h), so the
 * loop vectoriser skips its dependence analysis and run-time pointer checks. Those checks would
 * fail for an in-place update (output array == an input array read at offset 0) and silently
 * select the scalar loop; the annotation claims nothing about the order inside one cell, so the
 * loads of a cell still precede its stores.
 *
 * Math, as kir_ops.h's libm column says: fabs, sqrt, floor, ceil and fma (kir_finish's fused
 * multiply-adds) are INTRINSIC, LLVM intrinsics (exact: llvm.fma is one rounding, as C's fma in
 * the interpreter). Every other function is a call
 * to libm (exp, or expf in single) declared readnone (errno is not observed) and, in strict mode,
 * marked nobuiltin at the call: LLVM would otherwise fold calls with constant operands through the
 * double function (expf(c) = (float)exp(c), not always glibc's expf) and rewrite some (pow(2, x)
 * -> exp2(x)). A nobuiltin call is opaque to the vectoriser, so each call site names a 2-lane
 * variant that we define here as two scalar calls ("vector-function-abi-variant"); the loop is
 * vectorised at the host's width and the call is split into variant calls, so results stay
 * libm's, lane by lane. With fast_math, the functions glibc's vector math library (libmvec)
 * has (LIBMVEC: exp, log, sin, pow, atan2 ...) name its variants at the host's width (AVX-512:
 * _ZGVeN8v_exp, 8 doubles or 16 floats a call; AVX2: _ZGVdN4v_; SSE: _ZGVbN2v_) at the call
 * ("vector-function-abi-variant"), so the vectorised loop calls them: results within libmvec's
 * 4 ulp, not libm's bits, which is what --fast-math allows. libmvec is opened (RTLD_GLOBAL) when
 * the JIT is made; without it the fast-math calls of the functions LLVM knows (BUILTIN) are
 * widened by LLVM itself (llvm.exp.v8f64, a libm call per lane), the others keep our 2-lane
 * variant, and the cache key says which (`vecmath`).
 *
 * The non-finite check is two vector integer operations per store, (bits & exponent mask) and
 * an unsigned maximum, reduced once per row. It replaced `v - v`, an unordered compare and an
 * OR; bench/run.sh shows no difference in speed between the two (nor with a row sum, tried
 * too), but the maximum leaves the floating-point adder free for the update itself.
 */
#include "llvm_internal.h"
#include "diag.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows of a 2D/3D kernel are walked in chunks of CHUNK_BYTES. When the launch says so
 * (kir_launch.prefetch: the state does not fit in the last-level cache), each chunk first
 * prefetches, PREFETCH_AHEAD_BYTES further on, the part of the row that the next row will read
 * for the first time (for every buffer and z offset, the row after the one with the largest y
 * offset): the hardware prefetchers only find a row's stream once it is read, and start it
 * late. Otherwise a chunk is the whole row. */
#define CHUNK_BYTES 512
#define PREFETCH_AHEAD_BYTES 2048

#define FAST_FLAGS "reassoc nsz arcp contract afn "

/* ---- the text buffer (llvm_internal.h) ------------------------------------------------- */

void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        size_t room = b->cap - b->n;
        va_list ap;
        va_start(ap, fmt);
        int r = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (r < 0) { b->oom = 1; return; }
        if (b->s && (size_t)r < room) { b->n += (size_t)r; return; }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->n <= (size_t)r) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) { b->oom = 1; return; }
        b->s = s;
        b->cap = cap;
    }
}

/* ---- kernel IR -> LLVM IR text ----------------------------------------------------------- */

int llvm_find_row(gen *g, int buf, int dy, int dz, int loaded)
{
    for (int r = 0; r < g->n_rows; r++)
        if (g->rows[r].buf == buf && g->rows[r].dy == dy && g->rows[r].dz == dz) {
            g->rows[r].loaded |= loaded;
            return r;
        }
    g->rows[g->n_rows] = (row){buf, dy, dz, loaded};
    return g->n_rows++;
}

/* Whether row r is read and is, among the rows read of its buffer and z offset, the one with
 * the largest y offset: the row after it is what the next row reads for the first time. */
static int leads(const gen *g, int r)
{
    if (!g->rows[r].loaded) return 0;
    for (int q = 0; q < g->n_rows; q++)
        if (g->rows[q].loaded && g->rows[q].buf == g->rows[r].buf && g->rows[q].dz == g->rows[r].dz &&
            g->rows[q].dy > g->rows[r].dy)
            return 0;
    return 1;
}

/* The exact constant in LLVM's hexadecimal form (a float constant is written as the double it
 * equals). */
void llvm_const_text(char *out, size_t len, double v, int single)
{
    if (single) v = (double)(float)v;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    snprintf(out, len, "0x%016" PRIX64, bits);
}

/* Math functions LLVM maps to vector intrinsics when they are builtins (fast-math only). */
static int llvm_knows(kir_op op) { return (kir_ops[op].libm & KIR_LIBM_BUILTIN) != 0; }

/* The LLVM intrinsic a libm op is (llvm.NAME.f64), or NULL. */
static const char *intrinsic_of(kir_op op)
{
    return kir_ops[op].libm & KIR_LIBM_INTRINSIC ? kir_ops[op].cfn : NULL;
}

/* Strict: every libm call is `nobuiltin` (LLVM must neither fold it at compile time, which it
 * does for expf through the double function, nor rewrite it, e.g. pow(2, x) -> exp2(x)) and gets
 * our 2-lane variant. Fast-math: LLVM may treat the functions it knows as builtins. */
static int needs_variant(const llvm_options *opt, kir_op op)
{
    return kir_ops[op].cfn && !intrinsic_of(op) && (!opt->fast_math || !llvm_knows(op));
}

/* The functions libmvec has a variant of (double and float, every width). */
static int in_libmvec(kir_op op) { return (kir_ops[op].libm & KIR_LIBM_VEC) != 0; }

/* The call of `op` goes to libmvec when vectorised (fast-math kernels with libmvec). */
static int uses_libmvec(const gen *g, kir_op op) { return g->vm && kir_ops[op].cfn && in_libmvec(op); }

/* The call of `op` goes through our 2-lane variant (two libm calls). */
static int uses_variant(const gen *g, kir_op op) { return needs_variant(g->opt, op) && !uses_libmvec(g, op); }

/* libmvec's name of op's variant: _ZGVeN8v_exp, _ZGVeN16vv_powf ... */
static int libmvec_lanes(const gen *g, int i) { return g->opt->single ? g->vm->isa[i].lanes_float : g->vm->isa[i].lanes_double; }

static void libmvec_name(const gen *g, int i, char *out, size_t len, kir_op op)
{
    snprintf(out, len, "_ZGV%cN%d%s_%s", g->vm->isa[i].isa, libmvec_lanes(g, i), kir_ops[op].arity > 1 ? "vv" : "v",
             g->opt->single ? kir_ops[op].ffn : kir_ops[op].cfn);
}

/* libm name in the kernel's precision: exp / expf. */
static void libm_name(char *out, size_t len, kir_op op, int single)
{
    snprintf(out, len, "%s", single ? kir_ops[op].ffn : kir_ops[op].cfn);
}

static void emit_decls(gen *g, const char *used_ops)
{
    sbuf *b = g->b;
    const char *T = g->T, *sfx = g->opt->single ? "f32" : "f64";
    int n_variants = 0;
    for (int op = 0; op < KIR_N_OPS; op++) {
        if (!used_ops[op] || !kir_ops[op].cfn) continue;
        const char *intr = intrinsic_of((kir_op)op);
        if (intr) {
            sb_printf(b, "declare %s @llvm.%s.%s(%s", T, intr, sfx, T);
            sb_printf(b, kir_ops[op].arity == 3 ? ", %s, %s)\n" : ")\n", T, T);
            continue;
        }
        char fn[32];
        libm_name(fn, sizeof fn, (kir_op)op, g->opt->single);
        int ar = kir_ops[op].arity;
        sb_printf(b, "declare %s @%s(%s%s%s) #1\n", T, fn, T, ar > 1 ? ", " : "", ar > 1 ? T : "");
        if (uses_libmvec(g, (kir_op)op)) {
            for (int i = 0; i < g->vm->n_isa; i++) {
                char vn[48], vt[32];
                libmvec_name(g, i, vn, sizeof vn, (kir_op)op);
                snprintf(vt, sizeof vt, "<%d x %s>", libmvec_lanes(g, i), T);
                sb_printf(b, "declare %s @%s(%s%s%s) #1\n", vt, vn, vt, ar > 1 ? ", " : "", ar > 1 ? vt : "");
                n_variants++;
            }
            continue;
        }
        if (!uses_variant(g, (kir_op)op)) continue;
        /* the 2-lane variant: two scalar calls, so results are libm's */
        sb_printf(b, "define internal <2 x %s> @pj.v2.%s(<2 x %s> %%a%s) #2 {\n", T, fn, T,
                  ar > 1 ? (g->opt->single ? ", <2 x float> %b" : ", <2 x double> %b") : "");
        for (int l = 0; l < 2; l++) {
            sb_printf(b, "  %%a%d = extractelement <2 x %s> %%a, i32 %d\n", l, T, l);
            if (ar > 1) {
                sb_printf(b, "  %%b%d = extractelement <2 x %s> %%b, i32 %d\n", l, T, l);
                sb_printf(b, "  %%r%d = call %s%s @%s(%s %%a%d, %s %%b%d) #4\n", l, g->fl, T, fn,
                          T, l, T, l);
            } else {
                sb_printf(b, "  %%r%d = call %s%s @%s(%s %%a%d) #4\n", l, g->fl, T, fn, T, l);
            }
        }
        sb_printf(b, "  %%v0 = insertelement <2 x %s> undef, %s %%r0, i32 0\n", T, T);
        sb_printf(b, "  %%v1 = insertelement <2 x %s> %%v0, %s %%r1, i32 1\n", T, T);
        sb_printf(b, "  ret <2 x %s> %%v1\n}\n", T);
        n_variants++;
    }
    if (n_variants) {
        /* keep the variants alive until the vectoriser has seen them */
        sb_printf(b, "@llvm.compiler.used = appending global [%d x i8*] [", n_variants);
        int i = 0;
        for (int op = 0; op < KIR_N_OPS; op++) {
            if (!used_ops[op]) continue;
            int ar = kir_ops[op].arity;
            if (uses_libmvec(g, (kir_op)op)) {
                for (int w = 0; w < g->vm->n_isa; w++) {
                    char vn[48], vt[32];
                    libmvec_name(g, w, vn, sizeof vn, (kir_op)op);
                    snprintf(vt, sizeof vt, "<%d x %s>", libmvec_lanes(g, w), T);
                    sb_printf(b, "%si8* bitcast (%s (%s%s%s)* @%s to i8*)", i++ ? ", " : "", vt, vt, ar > 1 ? ", " : "",
                              ar > 1 ? vt : "", vn);
                }
                continue;
            }
            if (!uses_variant(g, (kir_op)op)) continue;
            char fn[32];
            libm_name(fn, sizeof fn, (kir_op)op, g->opt->single);
            sb_printf(b, "%si8* bitcast (<2 x %s> (<2 x %s>%s%s)* @pj.v2.%s to i8*)", i++ ? ", " : "",
                      T, T, ar > 1 ? ", <2 x " : "", ar > 1 ? (g->opt->single ? "float>" : "double>") : "",
                      fn);
        }
        sb_printf(b, "], section \"llvm.metadata\"\n");
    }
}

int llvm_is_leaf_op(kir_op op)
{
    return op == KIR_CONST || op == KIR_PARAM || op == KIR_TIME || op == KIR_DT || op == KIR_SPACING;
}

/* One node in the x loop body (non-leaf, COORD or LOAD); with g->rowb set, of the second row of
 * a two-row pass (see emit_x_loop): its values numbered id + n_nodes, its y index %x1.b, its
 * loads from g->row_of_b. */
void llvm_emit_node(gen *g, int id)
{
    const kir_node *n = &g->k->nodes[id];
    sbuf *b = g->b;
    const char *T = g->T, *fl = g->fl;
    char (*nm)[40] = g->rowb ? g->name_b : g->name;
    const char *a = n->arg[0] >= 0 ? nm[n->arg[0]] : "", *c = n->arg[1] >= 0 ? nm[n->arg[1]] : "",
               *d = n->arg[2] >= 0 ? nm[n->arg[2]] : "";
    const int v = id + (g->rowb ? g->k->n_nodes : 0);
    static const char *xa[2][3] = {{"%x0", "%x1", "%x2"}, {"%x0", "%x1.b", "%x2"}};
    const char *const *x = xa[g->rowb != 0];
    static const char *cmp[KIR_N_OPS] = {[KIR_LT] = "olt", [KIR_LE] = "ole", [KIR_GT] = "ogt",
                                         [KIR_GE] = "oge", [KIR_EQ] = "oeq", [KIR_NE] = "une"};
    static const char *arith[KIR_N_OPS] = {[KIR_ADD] = "fadd", [KIR_SUB] = "fsub",
                                           [KIR_MUL] = "fmul", [KIR_DIV] = "fdiv"};
    switch ((kir_op)n->op) {
    case KIR_LOAD: {
        int r = g->rowb ? g->row_of_b[id] : g->row_of[id];
        char ix[24] = "%x0";
        if (n->off[0]) {
            sb_printf(b, "  %%i%d = add nsw i64 %%x0, %d\n", v, n->off[0]);
            snprintf(ix, sizeof ix, "%%i%d", v);
        }
        sb_printf(b, "  %%q%d = getelementptr inbounds %s, %s* %%R%d, i64 %s\n", v, T, T, r, ix);
        sb_printf(b, "  %%v%d = load %s, %s* %%q%d, align %d, !llvm.access.group !0\n", v, T, T,
                  v, g->align);
        return;
    }
    case KIR_COORD: {
        /* origin + ((double)idx + 0.5*(1 + half)) * h, in double, then rounded (single) */
        char q[40];
        llvm_const_text(q, sizeof q, 0.5 * (1 + n->half), 0);
        /* the mesh index: the block's first cell added (kir_launch.first) */
        sb_printf(b, "  %%c%d.g = add nsw i64 %s, %%fo%d\n", v, x[n->axis], n->axis);
        sb_printf(b, "  %%c%d.i = sitofp i64 %%c%d.g to double\n", v, v);
        sb_printf(b, "  %%c%d.a = fadd double %%c%d.i, %s\n", v, v, q);
        sb_printf(b, "  %%c%d.m = fmul double %%c%d.a, %%hd%d\n", v, v, n->axis);
        if (g->opt->single) {
            sb_printf(b, "  %%c%d.d = fadd double %%od%d, %%c%d.m\n", v, n->axis, v);
            sb_printf(b, "  %%v%d = fptrunc double %%c%d.d to float\n", v, v);
        } else {
            sb_printf(b, "  %%v%d = fadd double %%od%d, %%c%d.m\n", v, n->axis, v);
        }
        return;
    }
    case KIR_RAND: {
        /* the global index of the cell at the node's offset: (x+ox) + n0*((y+oy) + n1*(z+oz)) */
        int dim = g->k->dim;
        for (int ax = 0; ax < dim; ax++)
            sb_printf(b, "  %%rl%d.%d = add nsw i64 %s, %d\n  %%rx%d.%d = add nsw i64 %%rl%d.%d, %%fo%d\n", v, ax,
                      x[ax], n->off[ax], v, ax, v, ax, ax);
        if (dim == 3)
            sb_printf(b, "  %%rm%d.1 = mul nsw i64 %%rx%d.2, %%mn1\n  %%rs%d.1 = add nsw i64 %%rx%d.1, %%rm%d.1\n", v, v,
                      v, v, v);
        if (dim >= 2)
            sb_printf(b, "  %%rm%d.0 = mul nsw i64 %%r%c%d.1, %%mn0\n  %%rs%d.0 = add nsw i64 %%rx%d.0, %%rm%d.0\n", v,
                      dim == 3 ? 's' : 'x', v, v, v, v);
        sb_printf(b, "  %%v%d = call %s @pj.rand(i64 %%r%c%d.0, i64 %%rstep, i32 %%rstage, i32 %d, i32 %d, i64 %%rseed)\n",
                  v, T, dim >= 2 ? 's' : 'x', v, n->index, n->axis);
        return;
    }
    case KIR_METRIC: {
        /* the metric table at the mesh index of the cell + off (kir.h, kir_metric): @pj.metric.A.T */
        int ax = n->axis;
        sb_printf(b, "  %%m%d.g = add nsw i64 %s, %%fo%d\n  %%m%d.i = add nsw i64 %%m%d.g, %d\n", v, x[ax], ax, v, v,
                  n->off[ax] + KIR_METRIC_PAD);
        sb_printf(b, "  %%m%d.p = getelementptr inbounds [%lld x double], [%lld x double]* @pj.metric.%d.%d, i64 0, i64 %%m%d.i\n",
                  v, (long long)g->k->metric->len[ax], (long long)g->k->metric->len[ax], ax, n->index, v);
        if (g->opt->single)
            sb_printf(b, "  %%m%d.d = load double, double* %%m%d.p, align 8\n  %%v%d = fptrunc double %%m%d.d to float\n", v,
                      v, v, v);
        else
            sb_printf(b, "  %%v%d = load double, double* %%m%d.p, align 8\n", v, v);
        return;
    }
    case KIR_EDGE: {
        /* the face between the cells at off and off + 1 along the axis is a side of the mesh */
        int ax = n->axis;
        sb_printf(b, "  %%el%d = add nsw i64 %s, %d\n  %%ei%d = add nsw i64 %%el%d, %%fo%d\n", v, x[ax], n->off[ax],
                  v, v, ax);
        sb_printf(b, "  %%ea%d = icmp eq i64 %%ei%d, -1\n"
                     "  %%eb%d = icmp eq i64 %%ei%d, %%elast%d\n  %%ec%d = or i1 %%ea%d, %%eb%d\n"
                     "  %%v%d = uitofp i1 %%ec%d to %s\n",
                  v, v, v, v, ax, v, v, v, v, v, T);
        return;
    }
    case KIR_NEG: sb_printf(b, "  %%v%d = fneg %s%s %s\n", v, fl, T, a); return;
    case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV:
        sb_printf(b, "  %%v%d = %s %s%s %s, %s\n", v, arith[n->op], fl, T, a, c);
        return;
    case KIR_LT: case KIR_LE: case KIR_GT: case KIR_GE: case KIR_EQ: case KIR_NE:
        sb_printf(b, "  %%v%d = fcmp %s %s %s, %s\n", v, cmp[n->op], T, a, c);
        return;
    case KIR_AND: sb_printf(b, "  %%v%d = and i1 %s, %s\n", v, a, c); return;
    case KIR_OR: sb_printf(b, "  %%v%d = or i1 %s, %s\n", v, a, c); return;
    case KIR_NOT: sb_printf(b, "  %%v%d = xor i1 %s, true\n", v, a); return;
    case KIR_SELECT: sb_printf(b, "  %%v%d = select i1 %s, %s %s, %s %s\n", v, a, T, c, T, d); return;
    case KIR_B2F: sb_printf(b, "  %%v%d = uitofp i1 %s to %s\n", v, a, T); return;
    case KIR_F2B: sb_printf(b, "  %%v%d = fcmp une %s %s, 0.0\n", v, T, a); return;
    default: break;
    }
    /* math */
    const char *intr = intrinsic_of((kir_op)n->op);
    if (intr) {
        sb_printf(b, "  %%v%d = call %s%s @llvm.%s.%s(%s %s", v, fl, T, intr, g->opt->single ? "f32" : "f64", T, a);
        if (kir_ops[n->op].arity == 3) sb_printf(b, ", %s %s, %s %s", T, c, T, d);
        sb_printf(b, ")\n");
        return;
    }
    char fn[32];
    libm_name(fn, sizeof fn, (kir_op)n->op, g->opt->single);
    int ar = kir_ops[n->op].arity;
    sb_printf(b, "  %%v%d = call %s%s @%s(%s %s", v, fl, T, fn, T, a);
    if (ar > 1) sb_printf(b, ", %s %s", T, c);
    sb_printf(b, ")%s\n", uses_variant(g, (kir_op)n->op) ? " #3" : uses_libmvec(g, (kir_op)n->op) ? " #5" : "");
}

/* What a kernel reads of its launch and which operations it uses: found by scan_nodes, read by
 * the sections of llvm_gen_ir below. */
typedef struct launch_use {
    int n_bufs;              /* state buffers: fields x slots, and every slot an output writes */
    char *buf, *param;       /* by buffer (slot * n_fields + field), by param: 1 when read or written */
    char ops[KIR_N_OPS];     /* by op: 1 when a node has it */
    int t, dt, rand, h[3], o[3], edge[3]; /* time, dt, rand(), spacing, origin, mesh edges by axis */
} launch_use;

/* Names every node's operand text (g->name), finds the rows the x loop walks (g->rows, row_of,
 * out_row) and records in u what the kernel uses. */
static void scan_nodes(gen *g, launch_use *u)
{
    const kir_kernel *k = g->k;
    const llvm_options *opt = g->opt;
    const int nf = k->n_fields, reduce = k->kind == KIR_REDUCE;
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        u->ops[n->op] = 1;
        g->row_of[id] = -1;
        const char *pfx = opt->single ? "f" : "d";
        switch ((kir_op)n->op) {
        case KIR_CONST: llvm_const_text(g->name[id], sizeof g->name[id], n->value, opt->single); break;
        case KIR_PARAM:
            u->param[n->index] = 1;
            snprintf(g->name[id], sizeof g->name[id], "%%p%s%d", pfx, n->index);
            break;
        case KIR_TIME: u->t = 1; snprintf(g->name[id], sizeof g->name[id], "%%t%s", pfx); break;
        case KIR_DT: u->dt = 1; snprintf(g->name[id], sizeof g->name[id], "%%dt%s", pfx); break;
        case KIR_SPACING:
            u->h[n->axis] = 1;
            snprintf(g->name[id], sizeof g->name[id], "%%h%s%d", pfx, n->axis);
            break;
        case KIR_COORD:
            u->h[n->axis] = u->o[n->axis] = 1;
            snprintf(g->name[id], sizeof g->name[id], "%%v%d", id);
            break;
        case KIR_RAND:
            u->rand = 1;
            if (!opt->single) u->ops[KIR_SQRT] = u->ops[KIR_FMA] = 1; /* declared once: randn() uses them */
            snprintf(g->name[id], sizeof g->name[id], "%%v%d", id);
            break;
        case KIR_EDGE:
            u->edge[n->axis] = 1;
            snprintf(g->name[id], sizeof g->name[id], "%%v%d", id);
            break;
        case KIR_METRIC: /* the mesh index: kir_launch.first */
            u->o[n->axis] = 1;
            snprintf(g->name[id], sizeof g->name[id], "%%v%d", id);
            break;
        case KIR_LOAD: {
            int bi = n->slot * nf + n->index;
            u->buf[bi] = 1;
            g->row_of[id] = llvm_find_row(g, bi, n->off[1], n->off[2], 1);
            snprintf(g->name[id], sizeof g->name[id], "%%v%d", id);
            break;
        }
        default: snprintf(g->name[id], sizeof g->name[id], "%%v%d", id);
        }
    }
    for (int i = 0; i < k->n_outputs && !reduce; i++) {
        int bi = k->outputs[i].slot * nf + k->outputs[i].field;
        u->buf[bi] = 1;
        g->out_row[i] = llvm_find_row(g, bi, 0, 0, 0);
    }
}

/* The metric tables the kernel's METRIC nodes read, as constant arrays (once each). */
static void emit_metric_tables(gen *g)
{
    const kir_kernel *k = g->k;
    char done[3][KIR_MT_KINDS] = {{0}};
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        if (n->op != KIR_METRIC || done[n->axis][n->index]) continue;
        done[n->axis][n->index] = 1;
        long long len = (long long)k->metric->len[n->axis];
        const double *t = k->metric->tab[n->axis][n->index];
        sb_printf(g->b, "@pj.metric.%d.%d = private unnamed_addr constant [%lld x double] [", n->axis, n->index, len);
        for (long long i = 0; i < len; i++) {
            char v[40];
            llvm_const_text(v, sizeof v, t[i], 0);
            sb_printf(g->b, "%sdouble %s", i ? ", " : "", v);
        }
        sb_printf(g->b, "], align 64\n");
    }
}

/* The module's header: kernel summary, target, the launch type, declarations, rand(), the
 * metric tables. */
static void emit_header(gen *g, const launch_use *u, const char *triple, const char *datalayout)
{
    const kir_kernel *k = g->k;
    const llvm_options *opt = g->opt;
    sbuf *b = g->b;
    const int dim = k->dim;
    sb_printf(b, "; pdejit kernel %s (%dD, %d nodes, %d outputs, %s%s)\n", k->name, dim,
              k->n_nodes, k->n_outputs, opt->single ? "single" : "double",
              opt->fast_math ? ", fast-math" : "");
    sb_printf(b, "source_filename = \"pdejit\"\ntarget datalayout = \"%s\"\ntarget triple = \"%s\"\n\n",
              datalayout, triple);
    sb_printf(b, "%s\n", LAUNCH_TYPE);
    emit_decls(g, u->ops);
    if (u->rand) llvm_emit_noise(g);
    emit_metric_tables(g);
}

/* The kernel function's entry block: the launch fields it uses, loaded once; a split kernel's
 * scratch rows. */
static void emit_entry(gen *g, const launch_use *u, const char *symbol, int internal)
{
    const kir_kernel *k = g->k;
    const llvm_options *opt = g->opt;
    sbuf *b = g->b;
    const int dim = k->dim, split = g->n_seg > 1;
    const char *T = g->T;
    sb_printf(b, "\ndefine %svoid @\"%s\"(%%pj.launch* nocapture readonly %%L, i64 %%begin, i64 %%end) #%d {\nentry:\n",
              internal ? "internal " : "", symbol, internal ? 7 : 0);
#define FIELD(name, type, f, i)                                                                     \
    do {                                                                                         \
        sb_printf(b, "  %s.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d", \
                  name, f);                                                                      \
        if ((i) >= 0) sb_printf(b, ", i64 %d", i);                                                 \
        sb_printf(b, "\n  %s = load %s, %s* %s.p, align 8\n", name, type, type, name);            \
    } while (0)
    FIELD("%bufs", "i8**", LF_BUF, -1);
    for (int bi = 0; bi < u->n_bufs; bi++) {
        if (!u->buf[bi]) continue;
        sb_printf(b, "  %%B%d.p = getelementptr inbounds i8*, i8** %%bufs, i64 %d\n", bi, bi);
        sb_printf(b, "  %%B%d.r = load i8*, i8** %%B%d.p, align 8\n", bi, bi);
        sb_printf(b, "  %%B%d = bitcast i8* %%B%d.r to %s*\n", bi, bi, T);
    }
    char nm[32];
    int any_param = 0;
    for (int p = 0; p < k->n_params; p++) any_param |= u->param[p];
    if (any_param) FIELD("%params", "double*", LF_PARAM, -1);
    for (int p = 0; p < k->n_params; p++) {
        if (!u->param[p]) continue;
        sb_printf(b, "  %%pd%d.p = getelementptr inbounds double, double* %%params, i64 %d\n", p, p);
        sb_printf(b, "  %%pd%d = load double, double* %%pd%d.p, align 8\n", p, p);
        if (opt->single) sb_printf(b, "  %%pf%d = fptrunc double %%pd%d to float\n", p, p);
    }
    if (u->rand) {
        sb_printf(b, "  %%rstage.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d\n"
                     "  %%rstage = load i32, i32* %%rstage.p, align 4\n", LF_STAGE);
        FIELD("%rseed", "i64", LF_SEED, -1);
        FIELD("%rstep", "i64", LF_STEP, -1);
    }
    for (int a = 0; a < 3; a++) { /* the block's place in the mesh (kir_launch.first, beyond) */
        int mesh_n = u->edge[a] || (u->rand && a < dim - 1);
        if (u->o[a] || u->edge[a] || (u->rand && a < dim)) {
            snprintf(nm, sizeof nm, "%%fo%d", a);
            FIELD(nm, "i64", LF_FIRST, a);
        }
        if (mesh_n) { /* the mesh's cells along the axis */
            snprintf(nm, sizeof nm, "%%en%d", a);
            FIELD(nm, "i64", LF_N, a);
            snprintf(nm, sizeof nm, "%%by%d", a);
            FIELD(nm, "i64", LF_BEYOND, a);
            sb_printf(b, "  %%bf%d = add nsw i64 %%fo%d, %%en%d\n  %%mn%d = add nsw i64 %%bf%d, %%by%d\n", a, a, a, a, a,
                      a);
        }
        if (u->edge[a]) /* `boundary`: the last cell index of the mesh along the axis */
            sb_printf(b, "  %%elast%d = sub nsw i64 %%mn%d, 1\n", a, a);
    }
    if (u->t) FIELD("%td", "double", LF_T, -1);
    if (u->dt) FIELD("%dtd", "double", LF_DT, -1);
    if (opt->single && u->t) sb_printf(b, "  %%tf = fptrunc double %%td to float\n");
    if (opt->single && u->dt) sb_printf(b, "  %%dtf = fptrunc double %%dtd to float\n");
    for (int a = 0; a < 3; a++) {
        if (u->h[a]) {
            snprintf(nm, sizeof nm, "%%hd%d", a);
            FIELD(nm, "double", LF_H, a);
            if (opt->single) sb_printf(b, "  %%hf%d = fptrunc double %%hd%d to float\n", a, a);
        }
        if (u->o[a]) {
            snprintf(nm, sizeof nm, "%%od%d", a);
            FIELD(nm, "double", LF_ORIGIN, a);
        }
    }
    for (int a = 0; a < dim - 1; a++) {  /* inner loop extents */
        snprintf(nm, sizeof nm, "%%n%d", a);
        FIELD(nm, "i64", LF_N, a);
    }
    for (int a = 1; a < dim; a++) {
        snprintf(nm, sizeof nm, "%%s%d", a);
        FIELD(nm, "i64", LF_STRIDE, a);
    }
#undef FIELD
    if (split) { /* the scratch rows of a split kernel */
        int n_scr = 0;
        for (int id = 0; id < k->n_nodes; id++) n_scr += g->scr_of[id] >= 0;
        if (n_scr)
            sb_printf(b, "  %%scr.a = alloca [%d x %s], align 64\n"
                         "  %%scr = getelementptr inbounds [%d x %s], [%d x %s]* %%scr.a, i64 0, i64 0\n",
                      n_scr * g->seg_chunk, T, n_scr * g->seg_chunk, T, n_scr * g->seg_chunk, T);
        else
            sb_printf(b, "  %%scr = getelementptr inbounds %s, %s* null, i64 0\n", T, T);
    }
}

/* The heads of the loop nest: level 0 is the outermost (axis dim-1) over [begin, end); in 2D/3D
 * the row level (dim-2) sets the row pointers and walks its row in chunks (lc, see CHUNK_BYTES),
 * prefetching the next row ahead when the launch says so, down to the x loop's label. */
static void emit_loop_heads(gen *g)
{
    const kir_kernel *k = g->k;
    const llvm_options *opt = g->opt;
    sbuf *b = g->b;
    const char *T = g->T;
    const int dim = k->dim, split = g->n_seg > 1;
    char nm[32];
    const int esz = g->align, chunk = CHUNK_BYTES / esz, per_line = 64 / esz, ahead = PREFETCH_AHEAD_BYTES / esz;
    const int rl = dim - 2; /* the row level, -1 in 1D */
    const char *IT = opt->single ? "i32" : "i64";
    if (dim > 1) /* its address only: read per chunk */
        sb_printf(b, "  %%pfv.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d\n", LF_PREFETCH);
    if (g->two) /* pairs of rows over [begin, end2); an odd last row: the one-row function */
        sb_printf(b, "  %%span = sub nsw i64 %%end, %%begin\n  %%span2 = and i64 %%span, -2\n"
                     "  %%end2 = add nsw i64 %%begin, %%span2\n");
    sb_printf(b, "  %%g = icmp slt i64 %%begin, %%end%s\n  br i1 %%g, label %%l0, label %%exit\n", g->two ? "2" : "");
    for (int lv = 0; lv < dim - 1; lv++) {
        int axis = dim - 1 - lv;
        sb_printf(b, "l%d:\n  %%x%d = phi i64 [ %s, %%%s ], [ %%x%d.next, %%l%d.latch%s ]\n", lv, axis,
                  lv == 0 ? "%begin" : "0", lv == 0 ? "entry" : (snprintf(nm, sizeof nm, "l%d", lv - 1), nm),
                  axis, lv, lv == rl ? "2" : "");
        if (lv == rl && g->two) sb_printf(b, "  %%x1.b = add nsw i64 %%x1, 1\n");
        if (lv == rl) {
            /* row pointers: base + (y + dy) * stride[1] + (z + dz) * stride[2] */
            for (int r = 0; r < g->n_rows; r++) {
                const row *rw = &g->rows[r];
                sb_printf(b, "  %%ry%d = add nsw i64 %%x1, %d\n  %%ro%d = mul nsw i64 %%ry%d, %%s1\n",
                          r, rw->dy, r, r);
                if (dim == 3) {
                    sb_printf(b, "  %%rz%d = add nsw i64 %%x2, %d\n  %%rw%d = mul nsw i64 %%rz%d, %%s2\n",
                              r, rw->dz, r, r);
                    sb_printf(b, "  %%rs%d = add nsw i64 %%ro%d, %%rw%d\n", r, r, r);
                }
                sb_printf(b, "  %%R%d = getelementptr inbounds %s, %s* %%B%d, i64 %%r%c%d\n", r, T, T,
                          rw->buf, dim == 3 ? 's' : 'o', r);
            }
        }
        sb_printf(b, "  %%g%d = icmp sgt i64 %%n%d, 0\n  br i1 %%g%d, label %%%s, label %%l%d.latch\n", lv,
                  axis - 1, lv, lv == rl ? "lc" : (snprintf(nm, sizeof nm, "l%d", lv + 1), nm), lv);
    }
    if (dim > 1) {
        /* a chunk of the row: [c0, cend); the exponent maximum runs on across chunks */
        sb_printf(b, "lc:\n  %%c0 = phi i64 [ 0, %%l%d ], [ %%c1, %%lc.latch ]\n"
                     "  %%accc = phi %s [ 0, %%l%d ], [ %%acc.next, %%lc.latch ]\n"
                     /* kir_launch.prefetch is read again per chunk: a condition LLVM sees as
                        loop-invariant gets the whole x loop duplicated (unswitched), which
                        doubled a 3D kernel's compile time for no speed */
                     "  %%pfv.c = load volatile i32, i32* %%pfv.p, align 4\n  %%pf.c = icmp ne i32 %%pfv.c, 0\n"
                     "  br i1 %%pf.c, label %%lc.pf, label %%lc.go\nlc.pf:\n", rl, IT, rl);
        /* one prefetch per 64-byte line of the chunk and leading row, in a loop LLVM keeps
           rolled (unrolled, a 3D stencil's 24+ prefetches per chunk doubled its compile time) */
        sb_printf(b, "  br label %%lc.pfl\nlc.pfl:\n  %%pfm = phi i64 [ 0, %%lc.pf ], [ %%pfm.next, %%lc.pfl ]\n"
                     "  %%pfo = add i64 %%c0, %%pfm\n  %%pfy0 = add i64 %%pfo, %%s1\n  %%pfy = add i64 %%pfy0, %d\n", ahead);
        for (int r = 0; r < g->n_rows; r++) {
            if (!leads(g, r)) continue;
            sb_printf(b, "  %%pfq%d = getelementptr %s, %s* %%R%d, i64 %%pfy\n"
                         "  %%pfc%d = bitcast %s* %%pfq%d to i8*\n"
                         "  call void @llvm.prefetch.p0i8(i8* %%pfc%d, i32 0, i32 3, i32 1)\n",
                      r, T, T, r, r, T, r, r);
            if (g->two) /* a pass reads two new rows */
                sb_printf(b, "  %%pfy2.%d = add i64 %%pfy, %%s1\n  %%pfr%d = getelementptr %s, %s* %%R%d, i64 %%pfy2.%d\n"
                             "  %%pfd%d = bitcast %s* %%pfr%d to i8*\n"
                             "  call void @llvm.prefetch.p0i8(i8* %%pfd%d, i32 0, i32 3, i32 1)\n",
                          r, r, T, T, r, r, r, T, r, r);
        }
        sb_printf(b, "  %%pfm.next = add nuw nsw i64 %%pfm, %d\n  %%pfm.more = icmp slt i64 %%pfm.next, %d\n"
                     "  br i1 %%pfm.more, label %%lc.pfl, label %%lc.pfe, !llvm.loop !%d\nlc.pfe:\n",
                  per_line, chunk, split ? 7 : 5);
        if (split) /* chunks of at most seg_chunk cells: a scratch row's length */
            sb_printf(b, "  br label %%lc.go\nlc.go:\n  %%cstep = select i1 %%pf.c, i64 %d, i64 %d\n",
                      chunk < g->seg_chunk ? chunk : g->seg_chunk, g->seg_chunk);
        else
            sb_printf(b, "  br label %%lc.go\nlc.go:\n  %%cstep = select i1 %%pf.c, i64 %d, i64 %%n0\n", chunk);
        sb_printf(b, "  %%c1 = add nsw i64 %%c0, %%cstep\n  %%cl = icmp slt i64 %%c1, %%n0\n"
                     "  %%cend = select i1 %%cl, i64 %%c1, i64 %%n0\n");
        llvm_emit_carry_inits(g);
        sb_printf(b, "  br label %%l%d\n", dim - 1);
    }
}

/* The x loop of a split kernel: each segment in turn on the chunk [c0, cend) (1D: the range in
 * chunks of seg_chunk cells), the exponent maximum carried through them. */
static void emit_segment_calls(gen *g, const char *symbol)
{
    sbuf *b = g->b;
    const char *T = g->T, *IT = g->opt->single ? "i32" : "i64";
    const int dim = g->k->dim;
    char nm[32];
    if (dim == 1)
        sb_printf(b, "l0:\n  %%c0 = phi i64 [ %%begin, %%entry ], [ %%c1, %%l0 ]\n"
                     "  %%accc = phi %s [ 0, %%entry ], [ %%acc.next, %%l0 ]\n"
                     "  %%c1 = add nsw i64 %%c0, %d\n  %%cl = icmp slt i64 %%c1, %%end\n"
                     "  %%cend = select i1 %%cl, i64 %%c1, i64 %%end\n", IT, g->seg_chunk);
    else
        sb_printf(b, "l%d:\n", dim - 1);
    for (int t = 0; t < g->n_seg; t++)
        sb_printf(b, "  %%sa%d = call %s @\"%s.s%d\"(%%pj.launch* %%L, i64 %s, i64 %s, i64 %%c0, i64 %%cend, %s* %%scr)\n"
                     "  %%sm%d = call %s @llvm.umax.%s(%s %%%s, %s %%sa%d)\n",
                  t, IT, symbol, t, dim > 1 ? "%x1" : "0", dim > 2 ? "%x2" : "0", T, t, IT, IT, IT,
                  t ? (snprintf(nm, sizeof nm, "sm%d", t - 1), nm) : "accc", IT, t);
    sb_printf(b, "  %%acc.next = or %s %%sm%d, 0\n", IT, g->n_seg - 1);
    if (dim == 1) sb_printf(b, "  br i1 %%cl, label %%l0, label %%exit\n");
    else sb_printf(b, "  br label %%lc.latch\n");
}

/* The x loop: every node, then every store, then the running maximum of the stored values'
 * exponent fields (the non-finite test). */
static void emit_x_loop(gen *g)
{
    const kir_kernel *k = g->k;
    const llvm_options *opt = g->opt;
    sbuf *b = g->b;
    const char *T = g->T;
    const int dim = k->dim;
    const char *IT = opt->single ? "i32" : "i64", *EXP_MASK = opt->single ? "2139095040" : "9218868437227405312";
    char nm[32];
    sb_printf(b, "l%d:\n  %%x0 = phi i64 [ %s, %%%s ], [ %%x0.next, %%l%d ]\n", dim - 1,
              dim > 1 ? "%c0" : "%begin", dim > 1 ? "lc.go" : "entry", dim - 1);
    sb_printf(b, "  %%acc = phi %s [ %s, %%%s ], [ %%acc.next, %%l%d ]\n", IT, dim > 1 ? "%accc" : "0",
              dim > 1 ? "lc.go" : "entry", dim - 1);
    if (dim == 1)
        for (int r = 0; r < g->n_rows; r++)
            sb_printf(b, "  %%R%d = getelementptr inbounds %s, %s* %%B%d, i64 0\n", r, T, T, g->rows[r].buf);
    /* carried loads (llvm_ir_carry.c; never with two rows a pass): their phis, then the loads
       they come from, first */
    snprintf(nm, sizeof nm, "l%d", dim - 1);
    llvm_emit_carry_phis(g, "lc.go", nm);
    for (int id = 0; id < k->n_nodes; id++)
        if (llvm_carried_from(g, id)) llvm_emit_node(g, id);
    for (g->rowb = 0; g->rowb <= g->two; g->rowb++) /* row y, then (two rows a pass) row y + 1 */
        for (int id = 0; id < k->n_nodes; id++) {
            kir_op op = (kir_op)k->nodes[id].op;
            if (llvm_is_leaf_op(op) || (g->carry_of && g->carry_of[id] >= 0) || llvm_carried_from(g, id))
                continue;
            if (g->rowb && op == KIR_LOAD && g->row_of_b[id] < 0) continue; /* row y's value */
            llvm_emit_node(g, id);
        }
    g->rowb = 0;
    const int n_st = k->n_outputs * (1 + g->two); /* the stores: row y's, then row y + 1's */
    for (int i = 0; i < n_st; i++) {
        int o = i % k->n_outputs, rb = i >= k->n_outputs;
        sb_printf(b, "  %%o%d = getelementptr inbounds %s, %s* %%R%d, i64 %%x0\n", i, T, T,
                  rb ? g->out_row_b[o] : g->out_row[o]);
        sb_printf(b, "  store %s %s, %s* %%o%d, align %d, !llvm.access.group !0\n", T,
                  (rb ? g->name_b : g->name)[k->outputs[o].node], T, i, g->align);
    }
    /* A stored value is NaN or infinite exactly when its exponent field is all ones: the
       maximum over the row of (bits & exponent mask) equals the mask then. Two vector integer
       operations per store (and, unsigned max), off the floating-point adder. */
    for (int i = 0; i < n_st; i++) {
        char prev[16];
        int o = i % k->n_outputs;
        snprintf(prev, sizeof prev, i ? "nf.a%d" : "acc", i);
        if (i + 1 < n_st) snprintf(nm, sizeof nm, "nf.a%d", i + 1);
        sb_printf(b, "  %%nf.b%d = bitcast %s %s to %s\n  %%nf.e%d = and %s %%nf.b%d, %s\n"
                     "  %%%s = call %s @llvm.umax.%s(%s %%%s, %s %%nf.e%d)\n",
                  i, T, (i >= k->n_outputs ? g->name_b : g->name)[k->outputs[o].node], IT, i, IT, i, EXP_MASK,
                  i + 1 < n_st ? nm : "acc.next", IT, IT, IT, prev, IT, i);
    }
    if (k->n_outputs == 0) sb_printf(b, "  %%acc.next = or %s %%acc, 0\n", IT);
    sb_printf(b, "  %%x0.next = add nsw i64 %%x0, 1\n  %%x0.more = icmp slt i64 %%x0.next, %s\n"
                 "  br i1 %%x0.more, label %%l%d, label %%%s, !llvm.loop !%d\n",
              dim > 1 ? "%cend" : "%end", dim - 1, dim > 1 ? "lc.latch" : "exit", g->rem ? 9 : 1);
}

/* The ends of the loop nest: the chunk latch, the non-finite report at the end of each row (1D:
 * of the range) into *nonfinite, the outer latches innermost first, and the return. */
static void emit_loop_tails(gen *g, const char *symbol)
{
    const llvm_options *opt = g->opt;
    sbuf *b = g->b;
    const int dim = g->k->dim, rl = dim - 2;
    const char *IT = opt->single ? "i32" : "i64", *EXP_MASK = opt->single ? "2139095040" : "9218868437227405312";
    char nm[32];
    if (dim > 1) sb_printf(b, "lc.latch:\n  br i1 %%cl, label %%lc, label %%l%d.latch\n", rl);
    /* the row (1D: the range) is done: record a non-finite store, if any, in *nonfinite */
    const char *after = dim > 1 ? "next" : "done";
    snprintf(nm, sizeof nm, "l%d", rl);
    sb_printf(b, "%s%s:\n  %%accs = phi %s [ 0, %%%s ], [ %%acc.next, %%%s ]\n"
                 "  %%accx = icmp eq %s %%accs, %s\n"
                 "  br i1 %%accx, label %%nf.set, label %%%s\n"
                 "nf.set:\n  %%nfp.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d\n"
                 "  %%nfp = load i32*, i32** %%nfp.p, align 8\n  %%nfnull = icmp eq i32* %%nfp, null\n"
                 "  br i1 %%nfnull, label %%%s, label %%nf.store\n"
                 "nf.store:\n  store atomic i32 1, i32* %%nfp monotonic, align 4\n  br label %%%s\n",
              dim > 1 ? nm : "exit", dim > 1 ? ".latch" : "", IT, dim > 1 ? nm : "entry",
              dim > 1 ? "lc.latch" : "l0", IT, EXP_MASK, after, LF_NONFINITE, after, after);
    if (dim == 1) sb_printf(b, "done:\n  ret void\n}\n\n");
    /* the outer latches, innermost first */
    for (int lv = rl; lv >= 0; lv--) {
        int axis = dim - 1 - lv;
        if (lv == rl) sb_printf(b, "next:\n  br label %%l%d.latch2\nl%d.latch2:\n", lv, lv);
        else sb_printf(b, "l%d.latch:\n", lv);
        sb_printf(b, "  %%x%d.next = add nsw i64 %%x%d, %d\n", axis, axis, lv == rl ? 1 + g->two : 1);
        sb_printf(b, "  %%x%d.more = icmp slt i64 %%x%d.next, %s\n", axis, axis,
                  lv == 0 ? (g->two ? "%end2" : "%end") : (snprintf(nm, sizeof nm, "%%n%d", axis), nm));
        sb_printf(b, "  br i1 %%x%d.more, label %%l%d, label %%%s%s\n", axis, lv,
                  lv == 0 ? "exit" : (snprintf(nm, sizeof nm, "l%d.latch", lv - 1), nm),
                  g->rem && !g->two ? ", !llvm.loop !10" : "");
    }
    if (g->two) /* an odd last row */
        sb_printf(b, "exit:\n  %%odd = icmp slt i64 %%end2, %%end\n  br i1 %%odd, label %%rem, label %%ret\n"
                     "rem:\n  call void @\"%s.1\"(%%pj.launch* %%L, i64 %%end2, i64 %%end)\n  br label %%ret\n"
                     "ret:\n  ret void\n}\n\n", symbol);
    else if (dim > 1) sb_printf(b, "exit:\n  ret void\n}\n\n");
}

/* The function attributes (#0 the kernel, #1 libm, #2 the 2-lane variants' bodies, #3/#4 their
 * call sites, #5 libmvec's, #6 rand(), #7 segments), the declarations every kernel may call and
 * the loop metadata. */
static void emit_attributes(gen *g, const launch_use *u, const char *cpu, const char *features)
{
    const llvm_options *opt = g->opt;
    sbuf *b = g->b;
    const int dim = g->k->dim, split = g->n_seg > 1;
    const char *IT = opt->single ? "i32" : "i64";
    /* 512-bit vectors where the host has AVX-512, whatever width the host's tuning prefers (LLVM
       tunes Intel cores from Ice Lake on for 256 bits), for 1D and 2D kernels: their loops are
       bound by their floating-point operations (15 per cell for a 2D reaction-diffusion step, no
       contraction in strict mode), which 8 lanes halve; 256² on one thread 1.53 -> 2.08 Gcups on
       this Xeon. Not for 3D: the 7-point step on 512x512x128 took 74 against 55 ms a step on one
       thread at 512 bits (docs/performance.md, "Peers again"); 256³ was level. A kernel that
       calls libmvec calls its widest variant in any dimension. */
    int widest = 0;
    for (int op = 0; op < KIR_N_OPS && g->vm; op++) widest |= u->ops[op] && uses_libmvec(g, (kir_op)op);
    char prefer[48] = "";
    if ((widest && g->vm->isa[0].isa == 'e') || (dim < 3 && strstr(features, "+avx512f")))
        snprintf(prefer, sizeof prefer, " \"prefer-vector-width\"=\"512\"");
    sb_printf(b, "attributes #0 = { nounwind \"target-cpu\"=\"%s\" \"target-features\"=\"%s\"%s }\n",
              cpu, features, prefer);
    sb_printf(b, "attributes #1 = { nounwind readnone willreturn }\n");
    if (u->rand) sb_printf(b, "attributes #6 = { alwaysinline nounwind readnone willreturn }\n");
    if (split || g->n_red > 1 || g->two)
        sb_printf(b, "attributes #7 = { noinline nounwind \"target-cpu\"=\"%s\" \"target-features\"=\"%s\"%s }\n",
                  cpu, features, prefer);
    if (dim > 1) sb_printf(b, "declare void @llvm.prefetch.p0i8(i8* nocapture readonly, i32 immarg, i32 immarg, i32 immarg)\n");
    sb_printf(b, "declare %s @llvm.umax.%s(%s, %s)\n", IT, IT, IT, IT);
    sb_printf(b, "attributes #2 = { nounwind readnone willreturn \"target-cpu\"=\"%s\" \"target-features\"=\"%s\" }\n",
              cpu, features);
    /* #3: the call sites' 2-lane variants (see the top of this file) */
    int any_variant = 0;
    for (int op = 0; op < KIR_N_OPS; op++)
        if (u->ops[op] && uses_variant(g, (kir_op)op))
            any_variant = 1;
    if (any_variant) {
        sb_printf(b, "attributes #3 = { %s\"vector-function-abi-variant\"=\"", opt->fast_math ? "" : "nobuiltin ");
        int first = 1;
        for (int op = 0; op < KIR_N_OPS; op++) {
            if (!u->ops[op] || !uses_variant(g, (kir_op)op)) continue;
            char fn[32];
            libm_name(fn, sizeof fn, (kir_op)op, opt->single);
            sb_printf(b, "%s_ZGV_LLVM_N2%s_%s(pj.v2.%s)", first ? "" : ",",
                      kir_ops[op].arity > 1 ? "vv" : "v", fn, fn);
            first = 0;
        }
        sb_printf(b, "\" }\nattributes #4 = { %s }\n", opt->fast_math ? "nounwind" : "nobuiltin");
    }
    /* #5: libmvec's variants of the fast-math calls */
    int any_libmvec = 0;
    for (int op = 0; op < KIR_N_OPS; op++) any_libmvec |= u->ops[op] && uses_libmvec(g, (kir_op)op);
    if (any_libmvec) {
        sb_printf(b, "attributes #5 = { \"vector-function-abi-variant\"=\"");
        int first = 1;
        for (int op = 0; op < KIR_N_OPS; op++) {
            if (!u->ops[op] || !uses_libmvec(g, (kir_op)op)) continue;
            char fn[32], vn[48];
            libm_name(fn, sizeof fn, (kir_op)op, opt->single);
            for (int w = 0; w < g->vm->n_isa; w++) {
                libmvec_name(g, w, vn, sizeof vn, (kir_op)op);
                sb_printf(b, "%s_ZGV_LLVM_N%d%s_%s(%s)", first ? "" : ",", libmvec_lanes(g, w),
                          kir_ops[op].arity > 1 ? "vv" : "v", fn, vn);
                first = 0;
            }
        }
        sb_printf(b, "\" }\n");
    }
    sb_printf(b, "\n!0 = distinct !{}\n!1 = distinct !{!1, !2, !3, !4}\n"
                 "!2 = !{!\"llvm.loop.parallel_accesses\", !0}\n!3 = !{!\"llvm.loop.mustprogress\"}\n"
                 "!4 = !{!\"llvm.loop.interleave.count\", i32 1}\n"
                 "!5 = distinct !{!5, !6}\n!6 = !{!\"llvm.loop.unroll.disable\"}\n");
    for (int t = 0; t < g->n_seg && split; t++) sb_printf(b, "!%d = distinct !{!%d, !2, !3, !4}\n", 10 + t, 10 + t);
    for (int t = 0; t < g->n_red && g->n_red > 1; t++) /* each group function's x loop */
        sb_printf(b, "!%d = distinct !{!%d, !2, !3, !4}\n", 10 + t, 10 + t);
    if (g->rem) /* two rows a pass: no x loop unrolled (1-5 % for 2x the compile), nor the odd row's row loop */
        sb_printf(b, "!9 = distinct !{!9, !2, !3, !4, !6}\n!10 = distinct !{!10, !6}\n");
    /* a split kernel's prefetch loop (a prefetch per leading row, thousands for a thousand
       fields): the vectoriser's time on it grows with the square of its length, for nothing */
    if (split) sb_printf(b, "!7 = distinct !{!7, !6, !8}\n!8 = !{!\"llvm.loop.vectorize.enable\", i1 false}\n");
}

/* Writes the module text for kernel k into b. */
int llvm_gen_ir(const kir_kernel *k, const llvm_options *opt, const char *symbol,
                  const char *triple, const char *datalayout, const char *cpu, const char *features,
                  const vecmath *vm, sbuf *b, char *err, size_t err_len)
{
    int rc = -1, nf = k->n_fields;
    gen g = {.k = k, .opt = opt, .b = b, .T = opt->single ? "float" : "double",
             .align = opt->single ? 4 : 8, .fl = opt->fast_math ? FAST_FLAGS : "",
             .vm = opt->fast_math ? vm : NULL};
    launch_use u = {.n_bufs = nf * (k->n_slots > 0 ? k->n_slots : 1)};
    const int reduce = k->kind == KIR_REDUCE; /* outputs are partial results, not buffers */
    for (int i = 0; i < k->n_outputs && !reduce; i++)
        if (k->outputs[i].slot >= 0 && k->outputs[i].slot * nf + nf > u.n_bufs)
            u.n_bufs = k->outputs[i].slot * nf + nf;
    u.buf = calloc((size_t)u.n_bufs + 1, 1);
    u.param = calloc((size_t)k->n_params + 1, 1);
    g.name = malloc(sizeof *g.name * ((size_t)k->n_nodes + 1));
    g.rows = malloc(sizeof *g.rows * (2 * ((size_t)k->n_nodes + (size_t)k->n_outputs) + 1));
    g.name_b = malloc(sizeof *g.name_b * ((size_t)k->n_nodes + 1));
    g.row_of_b = malloc(sizeof *g.row_of_b * ((size_t)k->n_nodes + 1));
    g.out_row_b = malloc(sizeof *g.out_row_b * ((size_t)k->n_outputs + 1));
    g.row_of = malloc(sizeof *g.row_of * ((size_t)k->n_nodes + 1));
    g.out_row = malloc(sizeof *g.out_row * ((size_t)k->n_outputs + 1));
    if (!u.buf || !u.param || !g.name || !g.rows || !g.row_of || !g.out_row || !g.name_b || !g.row_of_b ||
        !g.out_row_b) {
        diag_set(err, err_len, "out of memory");
        goto done;
    }

    scan_nodes(&g, &u);
    if (llvm_plan_split(&g) < 0 || llvm_plan_carries(&g) < 0) {
        diag_set(err, err_len, "out of memory");
        goto done;
    }
    /* two rows a pass: 2D stage kernels of the final tier (docs/performance.md, "Two rows a pass") */
    int two = !reduce && g.n_seg == 1 && k->dim == 2 && opt->lsr;
    for (int id = 0; id < k->n_nodes; id++) two &= g.carry_of[id] < 0; /* carried loads: one row */
    emit_header(&g, &u, triple, datalayout);
    if (reduce) { /* see LLVM_REDUCE_GROUP */
        g.n_red = (k->n_outputs + LLVM_REDUCE_GROUP - 1) / LLVM_REDUCE_GROUP;
        if (g.n_red < 1) g.n_red = 1;
    }
    if (reduce && g.n_red > 1) {
        size_t len = strlen(symbol) + 32;
        char *fn = malloc(len);
        if (!fn) {
            diag_set(err, err_len, "out of memory");
            goto done;
        }
        for (int t = 0; t < g.n_red; t++) {
            int j0 = t * LLVM_REDUCE_GROUP, j1 = j0 + LLVM_REDUCE_GROUP < k->n_outputs ? j0 + LLVM_REDUCE_GROUP : k->n_outputs;
            snprintf(fn, len, "%s.r%d", symbol, t);
            emit_entry(&g, &u, fn, 1);
            if (llvm_emit_reduce(&g, u.n_bufs, j0, j1, 10 + t) < 0) {
                free(fn);
                diag_set(err, err_len, "out of memory");
                goto done;
            }
        }
        sb_printf(b, "\ndefine void @\"%s\"(%%pj.launch* nocapture readonly %%L, i64 %%begin, i64 %%end) #0 {\nentry:\n",
                  symbol);
        for (int t = 0; t < g.n_red; t++)
            sb_printf(b, "  call void @\"%s.r%d\"(%%pj.launch* %%L, i64 %%begin, i64 %%end)\n", symbol, t);
        sb_printf(b, "  ret void\n}\n\n");
        free(fn);
    } else if (reduce) {
        emit_entry(&g, &u, symbol, 0);
        if (llvm_emit_reduce(&g, u.n_bufs, 0, k->n_outputs, 1) < 0) {
            diag_set(err, err_len, "out of memory");
            goto done;
        }
    } else {
        if (two) { /* the one-row function first (an odd last row), then the rows of row y + 1 */
            size_t len = strlen(symbol) + 8;
            char *fn = malloc(len);
            if (!fn) {
                diag_set(err, err_len, "out of memory");
                goto done;
            }
            snprintf(fn, len, "%s.1", symbol);
            emit_entry(&g, &u, fn, 1);
            emit_loop_heads(&g);
            g.rem = 1;
            emit_x_loop(&g);
            emit_loop_tails(&g, fn);
            free(fn);
            llvm_plan_row_b(&g);
            g.two = 1;
        }
        emit_entry(&g, &u, symbol, 0);
        emit_loop_heads(&g);
        if (g.n_seg > 1) emit_segment_calls(&g, symbol);
        else emit_x_loop(&g);
        emit_loop_tails(&g, symbol);
        for (int t = 0; t < g.n_seg && g.n_seg > 1; t++)
            if (llvm_emit_segment(&g, symbol, t, u.n_bufs) < 0) {
                diag_set(err, err_len, "out of memory");
                goto done;
            }
    }
    emit_attributes(&g, &u, cpu, features);
    if (b->oom) {
        diag_set(err, err_len, "out of memory");
        goto done;
    }
    rc = 0;
done:
    free(u.buf);
    free(u.param);
    free(g.name);
    free(g.rows);
    free(g.row_of);
    free(g.out_row);
    free(g.name_b);
    free(g.row_of_b);
    free(g.out_row_b);
    free(g.seg_of);
    free(g.scr_of);
    free(g.store_seg);
    free(g.mark);
    free(g.remat);
    free(g.carry_of);
    return rc;
}
