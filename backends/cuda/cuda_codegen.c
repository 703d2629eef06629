/* cuda_codegen.c — kernel IR to CUDA C (see cuda_codegen.h).
 *
 * Every generated source has the same shape:
 *
 *   header comment      kernel name, IR name, kind, dimension, IR hash, precision
 *   prelude             struct pj_args, the device twin of cuda_args, static_assert'ed against
 *                       the host size; the helpers the kernel calls (pj_clamp, pj_rand). Left
 *                       out with cuda_options.prelude: one translation unit of many kernels
 *                       prints it once (cuda_codegen_prelude)
 *   extern "C" kernel   thread -> cell; buffer pointers; one `const` statement per IR node,
 *                       named v<id>; the stores (or ghost writes) last
 *
 * All nodes are computed before the first store, so a kernel that writes the buffer it reads
 * at offset 0 (in place) sees the old value, as the interpreter does. */
#include "cuda_codegen.h"
#include "noise.h"
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- a growable string ---------------------------------------------------------------- */

typedef struct sbuf {
    char *s;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) { b->oom = 1; return; }
        if (b->s && (size_t)n < room) { b->len += (size_t)n; return; }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len <= (size_t)n) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) { b->oom = 1; return; }
        b->s = s;
        b->cap = cap;
    }
}

/* The string, or NULL (and the buffer freed) when it ran out of memory. */
static char *sb_take(sbuf *b, char *err, size_t err_len)
{
    if (b->oom || !b->s) {
        free(b->s);
        if (err) snprintf(err, err_len, "cuda codegen: out of memory");
        return NULL;
    }
    return b->s;
}

#define FAIL(...) do { if (err) snprintf(err, err_len, __VA_ARGS__); return NULL; } while (0)

static int is_identifier(const char *s)
{
    if (!s || !*s || strlen(s) > 200) return 0;
    if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return 0;
    for (const char *p = s; *p; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            return 0;
    return 1;
}

/* ---- pieces shared by every kernel ---------------------------------------------------- */

static const char *kind_name(kir_kind kind) { return kir_kind_name(kind); }

static const char *side_name[6] = {"left (x low)", "right (x high)", "bottom (y low)",
                                   "top (y high)", "back (z low)", "front (z high)"};

static void emit_args_struct(sbuf *b)
{
    sb_printf(b,
              "// The launch argument, passed by value: the device twin of cuda_args (cuda_codegen.h).\n"
              "struct pj_args {\n"
              "    unsigned long long buf[%d]; // [slot * n_fields + field]: address of cell (0,0,0)\n"
              "    double param[%d];\n"
              "    double t, dt;\n"
              "    long long n[3], stride[3];\n"
              "    double h[3], origin[3];\n"
              "    long long ghost[3];\n"
              "    unsigned long long nonfinite; // int set to 1 when a stored value is NaN or infinite\n"
              "    unsigned long long seed; // rand(): the key, the step and the stage code\n"
              "    long long step, stage;\n"
              "};\n"
              "static_assert(sizeof(pj_args) == %zu, \"pj_args differs from the host's cuda_args\");\n\n",
              CUDA_MAX_BUFS, CUDA_MAX_PARAMS, sizeof(cuda_args));
}

/* rand() and randn() as CUDA C: compiler/noise.h's operations in its order, its polynomials
 * printed with 17 digits (exact), so the bits are the interpreter's. */
static void emit_noise(sbuf *b)
{
    typedef unsigned long long u64;
    sb_printf(b, "// rand(), randn(): the generator of compiler/noise.h\n"
                 "static __device__ __forceinline__ unsigned long long pj_noise_mix(unsigned long long z)\n{\n"
                 "    z = (z ^ (z >> 30)) * 0x%llXull;\n    z = (z ^ (z >> 27)) * 0x%llXull;\n    return z ^ (z >> 31);\n}\n",
              (u64)PJ_NOISE_M1, (u64)PJ_NOISE_M2);
    sb_printf(b, "static __device__ __forceinline__ unsigned long long pj_noise_word(unsigned long long cell,\n"
                 "    unsigned long long step, unsigned stage, unsigned site, unsigned long long seed)\n{\n"
                 "    unsigned long long c = ((step & 0xFFFFFFFFFFull) << 24) | ((unsigned long long)(stage & 0xffu) << 16) |\n"
                 "                           (site & 0xffffu);\n"
                 "    unsigned long long key = pj_noise_mix(pj_noise_mix(seed) + (c + 1) * 0x%llXull);\n"
                 "    return pj_noise_mix(key ^ (cell * 0x%llXull));\n}\n",
              (u64)PJ_NOISE_G, (u64)PJ_NOISE_G);
    sb_printf(b, "static __device__ __forceinline__ double pj_noise_normal(unsigned long long w)\n{\n"
                 "    unsigned long long a = w >> 32, v = w & 0x7fffffffu, neg = (w >> 31) & 1u;\n"
                 "    unsigned long long bits = (unsigned long long)__double_as_longlong((double)(2 * a + 1));\n"
                 "    long long e = (long long)(bits >> 52) - 1023 - 33;\n"
                 "    unsigned long long mb = (bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;\n"
                 "    if (mb > 0x%llXull) { mb -= 1ull << 52; e += 1; }\n"
                 "    double f = __longlong_as_double((long long)mb) - 1.0;\n    double p = %.17g;\n",
              (u64)PJ_NOISE_SQRT2_BITS, pj_noise_log_poly[PJ_NOISE_LOG_DEGREE]);
    for (int i = PJ_NOISE_LOG_DEGREE - 1; i >= 0; i--) sb_printf(b, "    p = fma(p, f, %.17g);\n", pj_noise_log_poly[i]);
    sb_printf(b, "    double ln = fma((double)e, %.17g, f * p);\n    double r = sqrt(-2.0 * ln);\n"
                 "    double x = (double)v * 4.656612873077392578125e-10; // 2^-31\n    double y = x * x;\n"
                 "    double q = %.17g;\n",
              PJ_NOISE_LN2, pj_noise_sin_poly[PJ_NOISE_SIN_DEGREE]);
    for (int i = PJ_NOISE_SIN_DEGREE - 1; i >= 0; i--) sb_printf(b, "    q = fma(q, y, %.17g);\n", pj_noise_sin_poly[i]);
    sb_printf(b, "    double z = r * (x * q);\n    return neg ? -z : z;\n}\n");
    sb_printf(b, "static __device__ __forceinline__ double pj_rand(unsigned long long cell, unsigned long long step,\n"
                 "    unsigned stage, unsigned site, unsigned part, unsigned long long seed)\n{\n"
                 "    unsigned long long w = pj_noise_word(cell, step, stage, site, seed);\n"
                 "    return part == %d ? pj_noise_normal(w) : (double)(w >> 11) * 1.1102230246251565e-16; // 2^-53\n}\n"
                 "static __device__ __forceinline__ float pj_randf(unsigned long long cell, unsigned long long step,\n"
                 "    unsigned stage, unsigned site, unsigned part, unsigned long long seed)\n{\n"
                 "    unsigned long long w = pj_noise_word(cell, step, stage, site, seed);\n"
                 "    return part == %d ? (float)pj_noise_normal(w) : (float)(w >> 40) * 5.9604644775390625e-08f; // 2^-24\n}\n",
              PJ_NOISE_PART_NORMAL, PJ_NOISE_PART_NORMAL);
}

/* The prelude `what` (CUDA_PRELUDE_* bits) names, in a fixed order. */
static void emit_prelude_text(sbuf *b, unsigned what)
{
    if (what & CUDA_PRELUDE_ARGS) emit_args_struct(b);
    if (what & CUDA_PRELUDE_CLAMP)
        sb_printf(b, "static __device__ __forceinline__ long long pj_clamp(long long x, long long lo, long long hi)\n"
                     "{\n    return x < lo ? lo : x > hi ? hi : x;\n}\n\n");
    if (what & CUDA_PRELUDE_RAND) emit_noise(b);
}

/* A kernel's prelude: printed here for a whole source, else left to cuda_codegen_prelude. */
static void emit_prelude(sbuf *b, const cuda_options *opt, unsigned what)
{
    if (opt && opt->prelude) *opt->prelude |= what;
    else emit_prelude_text(b, what);
}

char *cuda_codegen_prelude(unsigned what, char *err, size_t err_len)
{
    sbuf b = {0};
    sb_printf(&b, "// The definitions the kernels below share.\n\n");
    emit_prelude_text(&b, what);
    return sb_take(&b, err, err_len);
}

/* CUDA_PRELUDE_RAND when the kernel calls rand(), else 0. */
static unsigned rand_prelude(const kir_kernel *k)
{
    for (int id = 0; k && id < k->n_nodes; id++)
        if (k->nodes[id].op == KIR_RAND) return CUDA_PRELUDE_RAND;
    return 0;
}

/* A literal of the kernel's precision that reads back exactly. */
static void emit_literal(sbuf *b, double v, int single)
{
    if (single) {
        float f = (float)v;
        if (!isfinite(f)) {
            uint32_t bits;
            memcpy(&bits, &f, sizeof bits);
            sb_printf(b, "__int_as_float(0x%08" PRIx32 ")", bits);
            return;
        }
        char t[64];
        snprintf(t, sizeof t, "%.9g", (double)f);
        sb_printf(b, "%s%sf", t, strpbrk(t, ".e") ? "" : ".0");
        return;
    }
    if (!isfinite(v)) {
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        sb_printf(b, "__longlong_as_double(0x%016" PRIx64 "LL)", bits);
        return;
    }
    char t[64];
    snprintf(t, sizeof t, "%.17g", v);
    sb_printf(b, "%s%s", t, strpbrk(t, ".e") ? "" : ".0");
}

/* The cell index variable of each axis. */
static const char idx_name[3] = {'i', 'j', 'k'};
static const char axis_letter[3] = {'x', 'y', 'z'};

/* Offset expression `base + dx + dy*s1 + dz*s2` (strides named s1, s2; stride[0] = 1). */
static void emit_offset(sbuf *b, const char *base, const int8_t off[3])
{
    sb_printf(b, "%s", base);
    for (int a = 0; a < 3; a++) {
        int o = off[a];
        if (!o) continue;
        const char *sign = o < 0 ? "-" : "+";
        int m = o < 0 ? -o : o;
        if (a == 0) sb_printf(b, " %s %d", sign, m);
        else if (m == 1) sb_printf(b, " %s s%d", sign, a);
        else sb_printf(b, " %s %d * s%d", sign, m, a);
    }
}

/* How leaves are read: a stage kernel at its cell (i, j, k); a fill evaluates the coefficients
 * at the face cell (fi, fj, fk), with loads clamped. COORD is evaluated as written in both (the
 * compiler gives a bc kernel's COORD on the side's axis half = -1 / +1: the face). */
typedef struct leaf_ctx {
    const char *idx[3];   /* the cell index variable of each axis */
    int bc_axis;          /* -1 for stage kernels */
    const char *kname;    /* the kernel's name: its metric tables' prefix (emit_metric_tables) */
} leaf_ctx;

/* The metric tables (kir.h, kir_metric) the kernel's METRIC nodes read, as device arrays named
 * after the kernel (a source may hold several kernels), before its function. */
static void emit_metric_tables(sbuf *b, const kir_kernel *k, const char *name)
{
    char done[3][KIR_MT_KINDS] = {{0}};
    for (int id = 0; k && id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        if (n->op != KIR_METRIC || done[n->axis][n->index]) continue;
        done[n->axis][n->index] = 1;
        long long len = (long long)k->metric->len[n->axis];
        sb_printf(b, "// the %s table along %c, from mesh index %d\n", kir_metric_names[n->index], "xyz"[n->axis],
                  -KIR_METRIC_PAD);
        sb_printf(b, "static __device__ const double pj_m_%s_%d_%d[%lld] = {", name, n->axis, n->index, len);
        for (long long i = 0; i < len; i++) {
            sb_printf(b, i % 4 ? ", " : i ? ",\n    " : "\n    ");
            emit_literal(b, k->metric->tab[n->axis][n->index][i], 0);
        }
        sb_printf(b, "};\n\n");
    }
}

static void emit_node(sbuf *b, const kir_kernel *k, int id, int single, const leaf_ctx *lc)
{
    const kir_node *n = &k->nodes[id];
    const char *real = single ? "float" : "double";
    const char *suffix = single ? "f" : "";
    int a0 = n->arg[0], a1 = n->arg[1], a2 = n->arg[2];
    sb_printf(b, "    const %s v%d = ", n->type == KIR_B ? "bool" : real, id);
    switch ((kir_op)n->op) {
    case KIR_CONST: emit_literal(b, n->value, single); sb_printf(b, ";\n"); return;
    case KIR_PARAM:
        sb_printf(b, "%sa.param[%d];\n", single ? "(float)" : "", n->index);
        return;
    case KIR_TIME: sb_printf(b, "%sa.t;\n", single ? "(float)" : ""); return;
    case KIR_DT: sb_printf(b, "%sa.dt;\n", single ? "(float)" : ""); return;
    case KIR_SPACING: sb_printf(b, "%sa.h[%d];\n", single ? "(float)" : "", n->axis); return;
    case KIR_COORD: {
        /* origin + (idx + 1/2 + half/2) * h, in double, then rounded to the precision */
        int half = n->half;
        char t[32];
        snprintf(t, sizeof t, "%.17g", 0.5 + 0.5 * half);
        sb_printf(b, "%s(a.origin[%d] + ((double)%s", single ? "(float)" : "", n->axis,
                  lc->idx[n->axis]);
        if (0.5 + 0.5 * half != 0) sb_printf(b, " + %s%s", t, strpbrk(t, ".e") ? "" : ".0");
        if (half == -1 || half == 1)
            sb_printf(b, ") * a.h[%d]); // %c at the %s face of the cell\n", n->axis, axis_letter[n->axis],
                      half > 0 ? "high" : "low");
        else if (half)
            sb_printf(b, ") * a.h[%d]); // %c at the cell centre %+g cells\n", n->axis, axis_letter[n->axis],
                      half * 0.5);
        else
            sb_printf(b, ") * a.h[%d]); // %c at the cell centre\n", n->axis, axis_letter[n->axis]);
        return;
    }
    case KIR_RAND: {
        /* the global index of the cell at the node's offset, x fastest (compiler/noise.h) */
        sb_printf(b, "pj_rand%s((unsigned long long)(", suffix);
        for (int a = 0; a < k->dim; a++) {
            sb_printf(b, "(%s + %d)", lc->idx[a], n->off[a]);
            if (a + 1 < k->dim) sb_printf(b, " + a.n[%d] * (", a);
        }
        for (int a = 1; a < k->dim; a++) sb_printf(b, ")");
        sb_printf(b, "), (unsigned long long)a.step, (unsigned)a.stage, %du, %du, a.seed); // %s site %d\n",
                  n->index, n->axis, n->axis == PJ_NOISE_PART_NORMAL ? "randn" : "rand", n->index);
        return;
    }
    case KIR_METRIC: /* the table at the mesh index of the cell + off */
        sb_printf(b, "%spj_m_%s_%d_%d[%s + %d]; // %s along %c\n", single ? "(float)" : "", lc->kname, n->axis, n->index,
                  lc->idx[n->axis], n->off[n->axis] + KIR_METRIC_PAD, kir_metric_names[n->index], axis_letter[n->axis]);
        return;
    case KIR_EDGE: /* the face between the cells at off and off + 1 is a side of the mesh */
        sb_printf(b, "(%s + %d == -1 || %s + %d == a.n[%d] - 1) ? 1.0%s : 0.0%s; // boundary face along %c\n",
                  lc->idx[n->axis], n->off[n->axis], lc->idx[n->axis], n->off[n->axis], n->axis, suffix, suffix,
                  axis_letter[n->axis]);
        return;
    case KIR_LOAD:
        if (lc->bc_axis < 0) {
            sb_printf(b, "b%d_%d[", n->slot, n->index);
            emit_offset(b, "c", n->off);
            sb_printf(b, "];");
        } else {
            /* clamped: along the side's axis to the interior (never a ghost this kernel writes),
             * along the others to the allocated cells */
            sb_printf(b, "b%d_%d[", n->slot, n->index);
            for (int a = 0; a < 3; a++) {
                const char *stride = a == 0 ? "" : a == 1 ? " * s1" : " * s2";
                char at[16];
                if (n->off[a]) snprintf(at, sizeof at, "%s %c %d", lc->idx[a], n->off[a] < 0 ? '-' : '+', abs(n->off[a]));
                else snprintf(at, sizeof at, "%s", lc->idx[a]);
                if (a == lc->bc_axis)
                    sb_printf(b, "%spj_clamp(%s, 0, a.n[%d] - 1)%s", a ? " + " : "", at, a, stride);
                else
                    sb_printf(b, "%spj_clamp(%s, -a.ghost[%d], a.n[%d] - 1 + a.ghost[%d])%s", a ? " + " : "",
                              at, a, a, a, stride);
            }
            sb_printf(b, "];");
        }
        sb_printf(b, " // field %d, slot %d, offset (%d,%d,%d)\n", n->index, n->slot, n->off[0],
                  n->off[1], n->off[2]);
        return;
    case KIR_NEG: sb_printf(b, "-v%d;\n", a0); return;
    case KIR_ADD: sb_printf(b, "v%d + v%d;\n", a0, a1); return;
    case KIR_SUB: sb_printf(b, "v%d - v%d;\n", a0, a1); return;
    case KIR_MUL: sb_printf(b, "v%d * v%d;\n", a0, a1); return;
    case KIR_DIV: sb_printf(b, "v%d / v%d;\n", a0, a1); return;
    case KIR_LT: sb_printf(b, "v%d < v%d;\n", a0, a1); return;
    case KIR_LE: sb_printf(b, "v%d <= v%d;\n", a0, a1); return;
    case KIR_GT: sb_printf(b, "v%d > v%d;\n", a0, a1); return;
    case KIR_GE: sb_printf(b, "v%d >= v%d;\n", a0, a1); return;
    case KIR_EQ: sb_printf(b, "v%d == v%d;\n", a0, a1); return;
    case KIR_NE: sb_printf(b, "v%d != v%d;\n", a0, a1); return;
    case KIR_AND: sb_printf(b, "v%d && v%d;\n", a0, a1); return;
    case KIR_OR: sb_printf(b, "v%d || v%d;\n", a0, a1); return;
    case KIR_NOT: sb_printf(b, "!v%d;\n", a0); return;
    case KIR_SELECT: sb_printf(b, "v%d ? v%d : v%d;\n", a0, a1, a2); return;
    case KIR_B2F: sb_printf(b, "v%d ? 1.0%s : 0.0%s;\n", a0, suffix, suffix); return;
    case KIR_F2B: sb_printf(b, "v%d != 0.0%s;\n", a0, suffix); return;
    case KIR_N_OPS: break;
    default:
        if (kir_ops[n->op].cfn) { /* libm's function, CUDA's twin of it in the precision */
            sb_printf(b, "%s(v%d", single ? kir_ops[n->op].ffn : kir_ops[n->op].cfn, a0);
            if (kir_ops[n->op].arity >= 2) sb_printf(b, ", v%d", a1);
            if (kir_ops[n->op].arity == 3) sb_printf(b, ", v%d", a2);
            sb_printf(b, ");\n");
            return;
        }
        break;
    }
    sb_printf(b, "0; // unknown op %d\n", n->op);
}

/* live[id] = 1 for the nodes the roots reach (roots: node ids, n_roots of them, -1 ignored). */
static void mark_live(const kir_kernel *k, const int *roots, int n_roots, unsigned char *live)
{
    memset(live, 0, (size_t)k->n_nodes + 1);
    for (int i = 0; i < n_roots; i++)
        if (roots[i] >= 0 && roots[i] < k->n_nodes) live[roots[i]] = 1;
    for (int id = k->n_nodes - 1; id >= 0; id--)
        if (live[id])
            for (int j = 0; j < kir_ops[k->nodes[id].op].arity; j++) live[k->nodes[id].arg[j]] = 1;
}

/* Marks in used[slot * n_fields + field] bit 1 the buffers live nodes load, bit 2 those stored. */
static void buffers_used(const kir_kernel *k, const unsigned char *live, unsigned char *used, int stores)
{
    for (int id = 0; id < k->n_nodes; id++)
        if (live[id] && k->nodes[id].op == KIR_LOAD)
            used[k->nodes[id].slot * k->n_fields + k->nodes[id].index] |= 1;
    if (stores)
        for (int i = 0; i < k->n_outputs; i++)
            used[k->outputs[i].slot * k->n_fields + k->outputs[i].field] |= 2;
}

static void emit_buffers(sbuf *b, const unsigned char *used, int n_slots, int n_fields, int single)
{
    const char *real = single ? "float" : "double";
    for (int s = 0; s < n_slots; s++)
        for (int f = 0; f < n_fields; f++) {
            int u = used[s * n_fields + f];
            if (!u) continue;
            if (u & 2)
                sb_printf(b, "    %s *const b%d_%d = (%s *)a.buf[%d]; // field %d, slot %d\n", real, s, f,
                          real, s * n_fields + f, f, s);
            else
                sb_printf(b, "    const %s *const b%d_%d = (const %s *)a.buf[%d]; // field %d, slot %d (read)\n",
                          real, s, f, real, s * n_fields + f, f, s);
        }
}

/* The cell of this thread (x fastest), or return when it is outside the interior. */
static void emit_cell_index(sbuf *b, int dim, int with_strides)
{
    static const char bx[3] = {'x', 'y', 'z'};
    for (int a = 0; a < dim; a++)
        sb_printf(b, "    const long long %c = (long long)blockIdx.%c * blockDim.%c + threadIdx.%c;\n",
                  idx_name[a], bx[a], bx[a], bx[a]);
    sb_printf(b, "    if (");
    for (int a = 0; a < dim; a++) sb_printf(b, "%s%c >= a.n[%d]", a ? " || " : "", idx_name[a], a);
    sb_printf(b, ") return;\n");
    if (with_strides)
        for (int a = 1; a < dim; a++) sb_printf(b, "    const long long s%d = a.stride[%d];\n", a, a);
    sb_printf(b, "    const long long c = i");
    for (int a = 1; a < dim; a++)
        sb_printf(b, with_strides ? " + %c * s%d" : " + %c * a.stride[%d]", idx_name[a], a);
    sb_printf(b, "; // this cell\n");
}

/* Slots a kernel touches: its n_slots, and beyond them those its outputs write (a jacobian kernel
 * stores derivative j into buffer n_slots * n_fields + j). */
static int slots_used(const kir_kernel *k)
{
    int n = k->n_slots;
    for (int i = 0; i < k->n_outputs; i++)
        if (k->outputs[i].slot >= n) n = k->outputs[i].slot + 1;
    return n;
}

static int check_limits(const kir_kernel *k, char *err, size_t err_len)
{
    int slots = slots_used(k);
    if (k->n_slots < 0 || k->n_fields < 0 || k->n_params < 0 || (long)slots * k->n_fields > CUDA_MAX_BUFS) {
        if (err)
            snprintf(err, err_len, "kernel %s needs %d buffers (%d slots x %d fields); the CUDA back end takes at most %d",
                     k->name, slots * k->n_fields, slots, k->n_fields, CUDA_MAX_BUFS);
        return -1;
    }
    if (k->n_params > CUDA_MAX_PARAMS) {
        if (err)
            snprintf(err, err_len, "kernel %s has %d params; the CUDA back end takes at most %d", k->name,
                     k->n_params, CUDA_MAX_PARAMS);
        return -1;
    }
    if (k->dim < 1 || k->dim > 3) {
        if (err) snprintf(err, err_len, "kernel %s: dimension %d", k->name, k->dim);
        return -1;
    }
    return 0;
}

static void emit_header(sbuf *b, const char *name, const char *what, const kir_kernel *k,
                        const cuda_options *opt)
{
    sb_printf(b, "// pdejit: CUDA kernel %s — %s\n", name, what);
    if (k) {
        char hex[33];
        kir_hash_hex(k, hex);
        sb_printf(b, "// from IR \"%s\" (%s, %dD, %d nodes, %d outputs), hash %s\n", k->name,
                  kind_name(k->kind), k->dim, k->n_nodes, k->n_outputs, hex);
    }
    sb_printf(b, "// %s precision; fast math %s (NVRTC option)\n\n",
              opt->single ? "single" : "double", opt->fast_math ? "on" : "off");
}

/* ---- stage and init kernels ----------------------------------------------------------- */

char *cuda_codegen(const kir_kernel *k, const cuda_options *opt, const char *name, char *err,
                   size_t err_len)
{
    cuda_options dflt = {0, 0, NULL};
    if (!opt) opt = &dflt;
    if (!k) FAIL("cuda codegen: no kernel");
    if (!is_identifier(name)) FAIL("cuda codegen: kernel name \"%s\" is not a C identifier", name ? name : "");
    if (k->kind == KIR_BC || k->kind == KIR_PARAMS || k->kind == KIR_REDUCE)
        FAIL("cuda codegen: kernel %s is a %s kernel; only kernels that write cells run per cell%s", k->name,
             kind_name(k->kind), k->kind == KIR_BC ? " (boundary conditions: cuda_codegen_bc_fill)" : "");
    if (check_limits(k, err, err_len)) return NULL;
    char verr[200];
    if (kir_verify(k, verr, sizeof verr)) FAIL("cuda codegen: kernel %s: %s", k->name, verr);

    sbuf b = {0};
    emit_header(&b, name, "one thread per interior cell", k, opt);
    emit_prelude(&b, opt, CUDA_PRELUDE_ARGS | rand_prelude(k));
    emit_metric_tables(&b, k, name);
    sb_printf(&b, "extern \"C\" __global__ void %s(const pj_args a)\n{\n", name);
    emit_cell_index(&b, k->dim, 1);

    int n_slots = slots_used(k), nb = n_slots * k->n_fields;
    unsigned char *used = calloc((size_t)nb + 1, 1);
    unsigned char *live = malloc((size_t)k->n_nodes + 1);
    int *roots = calloc((size_t)k->n_outputs + 1, sizeof *roots);
    if (!used || !live || !roots) {
        free(used);
        free(live);
        free(roots);
        free(b.s);
        FAIL("cuda codegen: out of memory");
    }
    for (int i = 0; i < k->n_outputs; i++) roots[i] = k->outputs[i].node;
    mark_live(k, roots, k->n_outputs, live); /* all of a finished kernel */
    buffers_used(k, live, used, 1);
    emit_buffers(&b, used, n_slots, k->n_fields, opt->single);

    leaf_ctx lc = {{"i", "j", "k"}, -1, name};
    for (int id = 0; id < k->n_nodes; id++)
        if (live[id]) emit_node(&b, k, id, opt->single, &lc);
    free(used);
    free(live);
    free(roots);
    for (int i = 0; i < k->n_outputs; i++) {
        const kir_output *o = &k->outputs[i];
        sb_printf(&b, "    b%d_%d[c] = v%d;\n", o->slot, o->field, o->node);
    }
    /* the run's NaN/Inf check at no extra memory traffic: an exponent of all ones (a bit test,
       which --use_fast_math cannot fold away) raises the flag */
    if (k->n_outputs) {
        sb_printf(&b, "    if (a.nonfinite && (");
        for (int i = 0; i < k->n_outputs; i++) {
            int v = k->outputs[i].node;
            if (opt->single)
                sb_printf(&b, "%s(__float_as_int(v%d) & 0x7f800000) == 0x7f800000", i ? " ||\n        " : "", v);
            else
                sb_printf(&b, "%s(__double_as_longlong(v%d) & 0x7ff0000000000000LL) == 0x7ff0000000000000LL",
                          i ? " ||\n        " : "", v);
        }
        sb_printf(&b, "))\n        atomicExch((int *)a.nonfinite, 1);\n");
    }
    sb_printf(&b, "}\n");
    return sb_take(&b, err, err_len);
}

/* ---- boundary fill -------------------------------------------------------------------- */

/* The fill of field f with a second condition, lap(u) = c2 (cv: the expressions of a, b, c, c2 in
 * double): layer 1 and layers beyond 2 as a*u + b*dn(u) = c; layer 2 so that the mean of the
 * second differences at the first interior cell and the first ghost is c2,
 * (u1 - u0 - g1 + g2) / (2 h^2) = c2. The CPU fill (sim_fill_axis) writes layer 1 before it
 * computes layer 2 from it; here layer 2's thread computes g1 itself by layer 1's formula (d = h),
 * rounded to the field's precision as the stored value is, so that both give the same bits. */
static void emit_second_bc(sbuf *b, int f, int axis, int high, char cv[4][40], int single)
{
    const char *sa = axis == 0 ? "" : axis == 1 ? " * s1" : " * s2";
    sb_printf(b, "    { // field %d: a*u + b*dn(u) = c, and lap(u) = c2 on layer 2\n", f);
    sb_printf(b, "        const double u = b0_%d[ci], ha = %s * 0.5, bd = %s / d;\n", f, cv[0], cv[1]);
    sb_printf(b, "        double g = (%s - u * (ha - bd)) / (ha + bd);\n", cv[2]);
    sb_printf(b, "        if (m == 2 && a.n[%d] >= 2) {\n", axis);
    sb_printf(b, "            // (u1 - u0 - g1 + g2) / (2 h^2) = c2: u0, u1 the first two interior cells, g1 layer 1\n");
    sb_printf(b, "            const double h = a.h[%d], u0 = b0_%d[c], u1 = b0_%d[c %s 1%s];\n", axis, f, f,
              high ? "-" : "+", sa);
    sb_printf(b, "            const double bd1 = %s / h; // layer 1: d = h\n", cv[1]);
    sb_printf(b, "            const double g1 = %s(%s - u0 * (ha - bd1)) / (ha + bd1)%s;\n",
              single ? "(double)(float)(" : "", cv[2], single ? ")" : "");
    sb_printf(b, "            g = 2.0 * h * h * %s + g1 + u0 - u1;\n", cv[3]);
    sb_printf(b, "        }\n");
    sb_printf(b, "        b0_%d[cg] = %sg%s;\n    }\n", f, single ? "(float)(" : "", single ? ")" : "");
}

/* The fill kernel's head: its signature, one thread per ghost cell (layer m beyond the face, every
 * cell of the other axes), the boundary cell c, the ghost cell cg, and its mirror image ci and
 * periodic image cp where a field's kind reads them. */
static void emit_fill_head(sbuf *b, const char *name, int axis, int high, int n_fields, const cuda_bc_kind *kinds)
{
    sb_printf(b, "// One thread per ghost cell: layers m = 1..ghost[%d] beyond the %s face, every cell\n"
                 "// of the other axes including their ghost layers (x sides first, then y, then z).\n",
              axis, high ? "high" : "low");
    sb_printf(b, "extern \"C\" __global__ void %s(const pj_args a)\n{\n", name);
    sb_printf(b, "    const long long H = a.ghost[%d];\n", axis);
    for (int ax = 0; ax < 3; ax++)
        if (ax != axis) sb_printf(b, "    const long long e%d = a.n[%d] + 2 * a.ghost[%d];\n", ax, ax, ax);
    sb_printf(b, "    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n");
    sb_printf(b, "    if (t >= H");
    for (int ax = 0; ax < 3; ax++)
        if (ax != axis) sb_printf(b, " * e%d", ax);
    sb_printf(b, ") return;\n");
    for (int ax = 0; ax < 3; ax++)
        if (ax != axis)
            sb_printf(b, "    const long long %c = t %% e%d - a.ghost[%d];\n    t /= e%d;\n", idx_name[ax], ax,
                      ax, ax);
    sb_printf(b, "    const long long m = t + 1; // ghost layer\n");
    sb_printf(b, "    const long long %c = %s; // the boundary cell\n", idx_name[axis],
              high ? (axis == 0 ? "a.n[0] - 1" : axis == 1 ? "a.n[1] - 1" : "a.n[2] - 1") : "0");
    sb_printf(b, "    const long long s1 = a.stride[1], s2 = a.stride[2];\n");
    const char *sa = axis == 0 ? "" : axis == 1 ? " * s1" : " * s2";
    sb_printf(b, "    const long long c = i + j * s1 + k * s2;\n");
    sb_printf(b, "    const long long cg = c %s m%s;       // the ghost cell\n", high ? "+" : "-", sa);
    int any_periodic = 0, any_mirror = 0;
    for (int f = 0; f < n_fields; f++) {
        any_periodic |= kinds[f] == CUDA_BC_PERIODIC;
        any_mirror |= kinds[f] == CUDA_BC_MIRROR || kinds[f] == CUDA_BC_LINEAR || kinds[f] == CUDA_BC_LINEAR0;
    }
    if (any_mirror)
        sb_printf(b, "    const long long ci = c %s (m - 1)%s; // its mirror image inside\n", high ? "-" : "+", sa);
    if (any_periodic)
        sb_printf(b, "    const long long cp = cg %s a.n[%d]%s; // its periodic image\n", high ? "-" : "+", axis, sa);
}

/* The ghost value of field f by its kind: periodic, mirror, or a*u + b*dn(u) = c with the
 * coefficients' values (coef: node ids, -1 for 0) and a second condition (lap[f]). */
static void emit_fill_field(sbuf *b, int f, cuda_bc_kind kind, const int *coef, const unsigned char *lap, int axis,
                            int high, int single)
{
    switch (kind) {
    case CUDA_BC_NONE: break;
    case CUDA_BC_PERIODIC: sb_printf(b, "    b0_%d[cg] = b0_%d[cp]; // field %d: periodic\n", f, f, f); break;
    case CUDA_BC_MIRROR: sb_printf(b, "    b0_%d[cg] = b0_%d[ci]; // field %d: zero gradient\n", f, f, f); break;
    case CUDA_BC_LINEAR:
    case CUDA_BC_LINEAR0: {
        char cv[4][40];
        for (int s4 = 0; s4 < 4; s4++) {
            int nd = coef[f * 4 + s4];
            if (nd < 0) snprintf(cv[s4], sizeof cv[s4], "0.0");
            else snprintf(cv[s4], sizeof cv[s4], "%sv%d", single ? "(double)" : "", nd);
        }
        if (!lap[f]) {
            sb_printf(b, "    { // field %d: a*u + b*dn(u) = c\n", f);
            sb_printf(b, "        const double u = b0_%d[ci], ha = %s * 0.5, bd = %s / d;\n", f, cv[0], cv[1]);
            sb_printf(b, "        b0_%d[cg] = %s(%s - u * (ha - bd)) / (ha + bd)%s;\n    }\n", f,
                      single ? "(float)(" : "", cv[2], single ? ")" : "");
            break;
        }
        emit_second_bc(b, f, axis, high, cv, single);
        break;
    }
    }
}

char *cuda_codegen_bc_fill(const kir_kernel *bc, int dim, int n_fields, int side,
                           const cuda_bc_kind *kinds, const cuda_options *opt, const char *name,
                           char *err, size_t err_len)
{
    cuda_options dflt = {0, 0, NULL};
    if (!opt) opt = &dflt;
    if (!is_identifier(name)) FAIL("cuda codegen: kernel name \"%s\" is not a C identifier", name ? name : "");
    if (dim < 1 || dim > 3) FAIL("cuda bc fill: dimension %d", dim);
    if (side < 0 || side >= 2 * dim) FAIL("cuda bc fill: side %d in a %dD mesh", side, dim);
    if (n_fields < 1 || n_fields > CUDA_MAX_BUFS) FAIL("cuda bc fill: %d fields (at most %d)", n_fields, CUDA_MAX_BUFS);
    if (!kinds) FAIL("cuda bc fill: no kinds");
    int n_linear = 0;
    for (int f = 0; f < n_fields; f++) {
        if (kinds[f] < CUDA_BC_NONE || kinds[f] > CUDA_BC_LINEAR0) FAIL("cuda bc fill: field %d: bad kind %d", f, (int)kinds[f]);
        n_linear += kinds[f] == CUDA_BC_LINEAR || kinds[f] == CUDA_BC_LINEAR0;
    }
    int *coef = NULL;           /* [f * 4 + slot]: node id of a, b, c, c2 (lap(u) = c2), or -1 */
    unsigned char *lap = NULL;  /* [f]: field f has a second condition, lap(u) = c2 */
    unsigned char *live = NULL; /* the bc kernel's nodes the linear fields need */
    if (n_linear) {
        if (!bc) FAIL("cuda bc fill: a linear condition needs its KIR_BC kernel");
        if (bc->kind != KIR_BC) FAIL("cuda bc fill: kernel %s is a %s kernel, not a bc kernel", bc->name, kind_name(bc->kind));
        if (bc->dim != dim || bc->n_fields != n_fields)
            FAIL("cuda bc fill: kernel %s is %dD with %d fields, the fill %dD with %d", bc->name, bc->dim,
                 bc->n_fields, dim, n_fields);
        if (bc->side >= 0 && bc->side != side)
            FAIL("cuda bc fill: kernel %s is for side %d, the fill for side %d", bc->name, bc->side, side);
        if (check_limits(bc, err, err_len)) return NULL;
        char verr[200];
        if (kir_verify(bc, verr, sizeof verr)) FAIL("cuda bc fill: kernel %s: %s", bc->name, verr);
        coef = malloc(sizeof *coef * (size_t)n_fields * 4);
        lap = calloc((size_t)n_fields, 1);
        if (!coef || !lap) {
            free(coef);
            free(lap);
            FAIL("cuda codegen: out of memory");
        }
        for (int i = 0; i < n_fields * 4; i++) coef[i] = -1;
        for (int i = 0; i < bc->n_outputs; i++) {
            const kir_output *o = &bc->outputs[i];
            if (o->slot < 0 || o->slot > 3) {
                free(coef);
                free(lap);
                FAIL("cuda bc fill: kernel %s: output %d has slot %d (want 0 a, 1 b, 2 c, 3 lap(u))", bc->name, i,
                     o->slot);
            }
            if (coef[o->field * 4 + o->slot] < 0) coef[o->field * 4 + o->slot] = o->node; /* the first */
        }
        for (int f = 0; f < n_fields; f++) {
            int lin = kinds[f] == CUDA_BC_LINEAR || kinds[f] == CUDA_BC_LINEAR0;
            if (lin && coef[f * 4] < 0 && coef[f * 4 + 1] < 0) {
                free(coef);
                free(lap);
                FAIL("cuda bc fill: field %d has neither a nor b in a*u + b*dn(u) = c (kernel %s)", f, bc->name);
            }
            lap[f] = lin && coef[f * 4 + 3] >= 0;
            if (!lin) coef[f * 4] = coef[f * 4 + 1] = coef[f * 4 + 2] = coef[f * 4 + 3] = -1;
            if (kinds[f] == CUDA_BC_LINEAR0) coef[f * 4 + 2] = coef[f * 4 + 3] = -1; /* c = c2 = 0 */
        }
        live = malloc((size_t)bc->n_nodes + 1);
        if (!live) {
            free(coef);
            free(lap);
            FAIL("cuda codegen: out of memory");
        }
        mark_live(bc, coef, n_fields * 4, live); /* only what the linear fields use */
    }

    int axis = side / 2, high = side % 2;
    char what[160];
    snprintf(what, sizeof what, "ghost layers of side %d, %s", side, side_name[side]);
    sbuf b = {0};
    emit_header(&b, name, what, n_linear ? bc : NULL, opt);
    emit_prelude(&b, opt, CUDA_PRELUDE_ARGS | (n_linear ? CUDA_PRELUDE_CLAMP : 0));
    if (n_linear) emit_metric_tables(&b, bc, name);
    emit_fill_head(&b, name, axis, high, n_fields, kinds);

    /* buffers: slot 0 of every filled field, plus whatever the coefficients load */
    int nslots = n_linear && bc->n_slots > 1 ? bc->n_slots : 1;
    unsigned char *used = calloc((size_t)nslots * (size_t)n_fields + 1, 1);
    if (!used) { free(coef); free(lap); free(live); free(b.s); FAIL("cuda codegen: out of memory"); }
    if (n_linear) buffers_used(bc, live, used, 0);
    for (int f = 0; f < n_fields; f++)
        if (kinds[f] != CUDA_BC_NONE) used[f] |= 2;
    emit_buffers(&b, used, nslots, n_fields, opt->single);
    free(used);

    if (n_linear) {
        sb_printf(&b, "    // the coefficients of a*u + b*dn(u) = c at the face cell of this row: the boundary\n"
                      "    // cell, the other axes clamped to the interior (the nearest face cell)\n");
        for (int ax = 0; ax < 3; ax++)
            sb_printf(&b, "    const long long f%c = pj_clamp(%c, 0, a.n[%d] - 1);\n", idx_name[ax], idx_name[ax], ax);
        leaf_ctx lc = {{"fi", "fj", "fk"}, axis, name};
        for (int id = 0; id < bc->n_nodes; id++)
            if (live[id]) emit_node(&b, bc, id, opt->single, &lc);
        sb_printf(&b, "    // the ghost value in double whatever the precision (as the CPU fill)\n");
        sb_printf(&b, "    const double d = (double)(2 * m - 1) * a.h[%d]; // ghost to mirror image\n", axis);
    }
    for (int f = 0; f < n_fields; f++) {
        emit_fill_field(&b, f, kinds[f], coef, lap, axis, high, opt->single);
    }
    sb_printf(&b, "}\n");
    free(coef);
    free(lap);
    free(live);
    return sb_take(&b, err, err_len);
}

/* ---- NaN / Inf check ------------------------------------------------------------------ */

char *cuda_codegen_nan_check(int dim, int single, const char *name, char *err, size_t err_len)
{
    if (!is_identifier(name)) FAIL("cuda codegen: kernel name \"%s\" is not a C identifier", name ? name : "");
    if (dim < 1 || dim > 3) FAIL("cuda nan check: dimension %d", dim);
    cuda_options opt = {single, 0, NULL};
    sbuf b = {0};
    emit_header(&b, name, "first interior cell that is NaN or infinite", NULL, &opt);
    sb_printf(&b,
              "struct pj_check_args {\n"
              "    unsigned long long buf;    // address of cell (0,0,0)\n"
              "    unsigned long long result; // address of one long long, INT64_MAX before the launch\n"
              "    long long n[3], stride[3];\n"
              "};\n"
              "static_assert(sizeof(pj_check_args) == %zu, \"pj_check_args differs from the host's cuda_check_args\");\n\n",
              sizeof(cuda_check_args));
    sb_printf(&b, "extern \"C\" __global__ void %s(const pj_check_args a)\n{\n", name);
    emit_cell_index(&b, dim, 0);
    if (single)
        sb_printf(&b, "    const float v = ((const float *)a.buf)[c];\n"
                      "    // exponent all ones: NaN or Inf (a bit test, immune to fast math)\n"
                      "    if ((__float_as_int(v) & 0x7f800000) == 0x7f800000)\n");
    else
        sb_printf(&b, "    const double v = ((const double *)a.buf)[c];\n"
                      "    // exponent all ones: NaN or Inf (a bit test, immune to fast math)\n"
                      "    if ((__double_as_longlong(v) & 0x7ff0000000000000LL) == 0x7ff0000000000000LL)\n");
    sb_printf(&b, "        atomicMin((long long *)a.result, i");
    if (dim >= 2) sb_printf(&b, " + a.n[0] * (j");
    if (dim >= 3) sb_printf(&b, " + a.n[1] * k");
    if (dim >= 2) sb_printf(&b, ")");
    sb_printf(&b, ");\n}\n");
    return sb_take(&b, err, err_len);
}

/* ---- reductions (KIR_REDUCE) ------------------------------------------------------------- */

/* `acc = combine(op, acc, v)` of kir.h in C. */
static void emit_combine_c(sbuf *b, int op, const char *acc, const char *v)
{
    if (op == KIR_RED_SUM) sb_printf(b, "%s = %s + %s;", acc, acc, v);
    else
        sb_printf(b, "%s = (%s %s %s || %s != %s) ? %s : %s;", acc, v, op == KIR_RED_MAX ? ">" : "<", acc, v, v, v, acc);
}

char *cuda_codegen_reduce(const kir_kernel *k, const cuda_options *opt, const char *name, char *err, size_t err_len)
{
    cuda_options dflt = {0, 0, NULL};
    if (!opt) opt = &dflt;
    if (!k) FAIL("cuda codegen: no kernel");
    if (!is_identifier(name)) FAIL("cuda codegen: kernel name \"%s\" is not a C identifier", name ? name : "");
    if (k->kind != KIR_REDUCE) FAIL("cuda codegen: kernel %s is a %s kernel, not a reduction", k->name, kind_name(k->kind));
    if (k->n_fields + k->n_outputs > CUDA_MAX_BUFS || k->n_params > CUDA_MAX_PARAMS || k->dim < 1 || k->dim > 3)
        FAIL("cuda codegen: reduction %s needs %d buffers and %d params; the CUDA back end takes at most %d and %d",
             k->name, k->n_fields + k->n_outputs, k->n_params, CUDA_MAX_BUFS, CUDA_MAX_PARAMS);
    char verr[200];
    if (kir_verify(k, verr, sizeof verr)) FAIL("cuda codegen: kernel %s: %s", k->name, verr);
    int dim = k->dim, nf = k->n_fields, L = KIR_REDUCE_LANES;
    sbuf b = {0};
    emit_header(&b, name, "the lanes of a reduction: one thread per (part, lane)", k, opt);
    emit_prelude(&b, opt, CUDA_PRELUDE_ARGS | rand_prelude(k));
    emit_metric_tables(&b, k, name);
    sb_printf(&b, "// Thread (lane l = threadIdx.x < %d, part q): the cells of part q whose x position in its row\n"
                  "// (1D: its block of %d) is l mod %d, rows in order, x increasing (kir.h, \"Reductions\");\n"
                  "// its accumulator goes to a.buf[%d + output][q * %d + l], folded by the fold kernel.\n",
              L, KIR_REDUCE_BLOCK_1D, L, nf, L);
    sb_printf(&b, "extern \"C\" __global__ void %s(const pj_args a)\n{\n", name);
    sb_printf(&b, "    const long long l = threadIdx.x;\n    const long long q = (long long)blockIdx.x * blockDim.y + threadIdx.y;\n");
    if (dim == 1) sb_printf(&b, "    const long long parts = (a.n[0] + %d) / %d;\n", KIR_REDUCE_BLOCK_1D - 1, KIR_REDUCE_BLOCK_1D);
    else sb_printf(&b, "    const long long parts = a.n[%d];\n", dim - 1);
    sb_printf(&b, "    if (q >= parts) return;\n");
    for (int a = 1; a < dim; a++) sb_printf(&b, "    const long long s%d = a.stride[%d];\n", a, a);
    unsigned char *used = calloc((size_t)nf + 1, 1);
    unsigned char *live = malloc((size_t)k->n_nodes + 1);
    int *roots = calloc((size_t)k->n_outputs + 1, sizeof *roots);
    if (!used || !live || !roots) {
        free(used);
        free(live);
        free(roots);
        free(b.s);
        FAIL("cuda codegen: out of memory");
    }
    for (int i = 0; i < k->n_outputs; i++) roots[i] = k->outputs[i].node;
    mark_live(k, roots, k->n_outputs, live);
    buffers_used(k, live, used, 0);
    emit_buffers(&b, used, 1, nf, opt->single);
    for (int o = 0; o < k->n_outputs; o++) {
        sb_printf(&b, "    double acc%d = ", o);
        emit_literal(&b, kir_reduce_identity(k->outputs[o].slot), 0);
        sb_printf(&b, ";\n");
    }
    if (dim == 1)
        sb_printf(&b, "    const long long x0 = q * %d, x1 = x0 + %d < a.n[0] ? x0 + %d : a.n[0];\n"
                      "    const long long j = 0, k = 0;\n",
                  KIR_REDUCE_BLOCK_1D, KIR_REDUCE_BLOCK_1D, KIR_REDUCE_BLOCK_1D);
    else if (dim == 2)
        sb_printf(&b, "    const long long x0 = 0, x1 = a.n[0], j = q, k = 0;\n");
    else
        sb_printf(&b, "    const long long x0 = 0, x1 = a.n[0], k = q;\n    for (long long j = 0; j < a.n[1]; j++)\n");
    sb_printf(&b, "    for (long long i = x0 + l; i < x1; i += %d) {\n", L);
    sb_printf(&b, "    const long long c = i%s%s; // this cell\n", dim > 1 ? " + j * s1" : "", dim > 2 ? " + k * s2" : "");
    sb_printf(&b, "    (void)j; (void)k;\n");
    leaf_ctx lc = {{"i", "j", "k"}, -1, name};
    for (int id = 0; id < k->n_nodes; id++)
        if (live[id]) emit_node(&b, k, id, opt->single, &lc);
    for (int o = 0; o < k->n_outputs; o++) {
        char acc[16], v[32];
        snprintf(acc, sizeof acc, "acc%d", o);
        snprintf(v, sizeof v, "(double)v%d", k->outputs[o].node);
        sb_printf(&b, "    ");
        emit_combine_c(&b, k->outputs[o].slot, acc, v);
        sb_printf(&b, "\n");
    }
    sb_printf(&b, "    }\n");
    for (int o = 0; o < k->n_outputs; o++)
        sb_printf(&b, "    ((double *)a.buf[%d])[q * %d + l] = acc%d;\n", nf + o, L, o);
    sb_printf(&b, "}\n");
    free(used);
    free(live);
    free(roots);
    return sb_take(&b, err, err_len);
}

char *cuda_codegen_reduce_fold(const kir_kernel *k, const cuda_options *prelude_opt, const char *name, char *err,
                               size_t err_len)
{
    if (!k || k->kind != KIR_REDUCE) FAIL("cuda codegen: the fold needs a reduction kernel");
    if (!is_identifier(name)) FAIL("cuda codegen: kernel name \"%s\" is not a C identifier", name ? name : "");
    if (k->n_outputs + 1 > CUDA_MAX_BUFS) FAIL("cuda codegen: reduction %s has too many outputs", k->name);
    int L = KIR_REDUCE_LANES, no = k->n_outputs;
    cuda_options opt = {0, 0, NULL};
    sbuf b = {0};
    emit_header(&b, name, "the fold of a reduction's lanes: one thread per output", k, &opt);
    emit_prelude(&b, prelude_opt, CUDA_PRELUDE_ARGS);
    sb_printf(&b, "// Output o (thread o): per part q in order, lane 0 combined with lanes 1..%d, combined into\n"
                  "// the total (kir.h, \"Reductions\"); a.buf[o] the lanes, a.buf[%d] the %d results, a.n[0] the parts.\n",
              L - 1, no, no);
    sb_printf(&b, "extern \"C\" __global__ void %s(const pj_args a)\n{\n", name);
    sb_printf(&b, "    const long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n");
    sb_printf(&b, "    double *const out = (double *)a.buf[%d];\n", no);
    sb_printf(&b, "    const long long parts = a.n[0];\n");
    for (int o = 0; o < no; o++) {
        sb_printf(&b, "    if (o == %d) {\n        const double *const lanes = (const double *)a.buf[%d];\n"
                      "        double total = ", o, o);
        emit_literal(&b, kir_reduce_identity(k->outputs[o].slot), 0);
        sb_printf(&b, ";\n        for (long long q = 0; q < parts; q++) {\n            double r = lanes[q * %d];\n"
                      "            for (int l = 1; l < %d; l++) { const double v = lanes[q * %d + l]; ", L, L, L);
        emit_combine_c(&b, k->outputs[o].slot, "r", "v");
        sb_printf(&b, " }\n            ");
        emit_combine_c(&b, k->outputs[o].slot, "total", "r");
        sb_printf(&b, "\n        }\n        out[%d] = total;\n    }\n", o);
    }
    sb_printf(&b, "}\n");
    return sb_take(&b, err, err_len);
}

/* ---- host helpers --------------------------------------------------------------------- */

int cuda_args_from_launch(cuda_args *out, const kir_launch *l, int n_bufs, int n_params,
                          const int64_t ghost[3], char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (n_bufs < 0 || n_bufs > CUDA_MAX_BUFS || n_params < 0 || n_params > CUDA_MAX_PARAMS) {
        if (err)
            snprintf(err, err_len, "cuda launch: %d buffers and %d params (at most %d and %d)", n_bufs,
                     n_params, CUDA_MAX_BUFS, CUDA_MAX_PARAMS);
        return -1;
    }
    for (int i = 0; i < n_bufs; i++) out->buf[i] = (uint64_t)(uintptr_t)l->buf[i];
    for (int i = 0; i < n_params; i++) out->param[i] = l->param[i];
    out->t = l->t;
    out->dt = l->dt;
    out->seed = l->seed;
    out->step = l->step;
    out->stage = l->stage;
    for (int a = 0; a < 3; a++) {
        out->n[a] = l->n[a];
        out->stride[a] = l->stride[a];
        out->h[a] = l->h[a];
        out->origin[a] = l->origin[a];
        out->ghost[a] = ghost ? ghost[a] : 0;
    }
    return 0;
}

static int blocks(int64_t n, unsigned per, int64_t limit, unsigned *out)
{
    int64_t g = n <= 0 ? 0 : (n + per - 1) / per;
    if (g > limit) return -1;
    *out = (unsigned)(g ? g : 1);
    return 0;
}

int cuda_stage_dims(int dim, const int64_t n[3], unsigned grid[3], unsigned block[3])
{
    static const unsigned shapes[3][3] = {{256, 1, 1}, {32, 8, 1}, {32, 4, 4}};
    if (dim < 1 || dim > 3) return -1;
    for (int a = 0; a < 3; a++) block[a] = shapes[dim - 1][a];
    if (blocks(n[0], block[0], 2147483647, &grid[0])) return -1;
    if (blocks(dim >= 2 ? n[1] : 1, block[1], 65535, &grid[1])) return -1;
    if (blocks(dim >= 3 ? n[2] : 1, block[2], 65535, &grid[2])) return -1;
    return 0;
}

int cuda_bc_fill_dims(const cuda_args *a, int side, unsigned grid[3], unsigned block[3])
{
    if (side < 0 || side > 5) return -1;
    int axis = side / 2;
    int64_t count = a->ghost[axis];
    for (int ax = 0; ax < 3; ax++)
        if (ax != axis) count *= a->n[ax] + 2 * a->ghost[ax];
    block[0] = 256;
    block[1] = block[2] = 1;
    grid[1] = grid[2] = 1;
    return blocks(count, block[0], 2147483647, &grid[0]);
}
