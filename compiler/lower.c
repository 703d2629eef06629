/* lower.c — expressions to kernel IR: the finite-volume operators expanded on the grid.
 *
 * An expression is lowered in a context (lctx): a cell at an offset, or a face along an axis
 * between the cell at `off` (L) and the next one (R). Operators move between contexts:
 *   cell:  div(F) = sum over axes (F(face +1/2) - F(face -1/2)) / h      lap(u) = div(grad(u))
 *   face:  grad(e) = (e(R) - e(L)) / h    L(e) LL(e) R(e) RR(e)    harm(e) = 2 e(L) e(R) / (e(L) + e(R))
 *          gradx(e) grady(e) gradz(e): the full gradient at the face (the tangential ones from the
 *          central differences of the two cells)
 *          upwind(u, v) = v > 0 ? u(L) : u(R)    normal(vx, vy, vz) = the component along the axis
 *          a cell quantity (a field, lap, div, u[..]) = (e(L) + e(R)) / 2
 * Funcs and fluxes are inlined by name: an argument is lowered where the body uses it, in the
 * body's context, so `func f(a) = L(a)` works on faces. Hash-consing makes the repeated
 * lowering of an argument cost no IR. */
#include "sema.h"
#include "mesh.h"
#include <math.h>
#include <stdarg.h>
#include <string.h>

/* Lowering steps per expression: 4 000 000 plus 8 per node written in the problem, so that
 * inlining cannot blow up without bound while an expression as long as you like still lowers. */
#define MAX_WORK(C) (4000000L + 8 * ((C)->ast ? (C)->ast->n_nodes : 0))
#define MAX_INLINE_DEPTH 200   /* funcs calling funcs */

void lower_error(compiler *C, pj_loc loc, const char *fmt, ...)
{
    for (int i = 0; i < C->n_reported; i++)
        if (C->reported[i].line == loc.line && C->reported[i].col == loc.col) return;
    if (C->n_reported < 64) C->reported[C->n_reported++] = loc;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(C->d, loc, "%s", msg);
}

static const char *where_text(lower_where w)
{
    switch (w) {
    case IN_INIT: return "an initial value";
    case IN_PARAM: return "a param value";
    case IN_CONST: return "a constant expression";
    case IN_BC: return "a boundary condition";
    case IN_MESH: return "the mesh";
    case IN_STOP: return "a stop condition";
    default: return "an equation";
    }
}

static int is_face_op(const char *n)
{
    static const char *ops[] = {"L", "R", "LL", "RR", "harm", "upwind", "normal", "grad"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (!strcmp(n, ops[i])) return 1;
    return 0;
}

/* The context of the cell `shift` cells from x's cell (face: from L) along axis. */
static lctx cell_at(const lctx *x, int axis, int shift)
{
    lctx c = *x;
    c.face = 0;
    if (axis >= 0) c.off[axis] += shift;
    return c;
}

static int averaged(compiler *C, lctx *x, const ast_expr *e);

/* A cell quantity met in face context is the mean of its two sides. */
#define FACE_MEAN_OR(C, x, e) do { if ((x)->face) return averaged(C, x, e); } while (0)

static int averaged(compiler *C, lctx *x, const ast_expr *e)
{
    lctx l = cell_at(x, x->axis, 0), r = cell_at(x, x->axis, 1);
    int a = lower_expr(C, &l, e);
    if (a < 0) return -1;
    int b = lower_expr(C, &r, e);
    if (b < 0) return -1;
    return kir_op2(x->k, KIR_MUL, kir_const(x->k, 0.5), kir_op2(x->k, KIR_ADD, a, b));
}

/* 1/h or 1/h^2 along an axis: one division per kernel launch, hoisted out of the loops, where
 * dividing every difference by h would cost a division per cell and term. */
static int inverse_spacing(kir_kernel *k, int axis, int power)
{
    int h = kir_spacing(k, axis);
    if (power == 2) h = kir_op2(k, KIR_MUL, h, h);
    return kir_op2(k, KIR_DIV, kir_const(k, 1), h);
}

/* Along an axis with a metric (mesh.h): (A+ F+ - A- F-) / V of the cell at offset off (times the
 * inverse from the tables: no division per cell). */
static int metric_div(compiler *C, kir_kernel *k, int a, int off, int fh, int fl)
{
    int ah = mesh_area(C, k, a, 2 * off + 1), al = mesh_area(C, k, a, 2 * off - 1);
    if (ah >= 0) fh = kir_op2(k, KIR_MUL, fh, ah);
    if (al >= 0) fl = kir_op2(k, KIR_MUL, fl, al);
    return kir_op2(k, KIR_MUL, kir_op2(k, KIR_SUB, fh, fl), mesh_inv_volume(C, k, a, off));
}

/* div of a face quantity: `face` lowers it on a face context. */
typedef int (*face_fn)(compiler *C, lctx *face, const void *arg);

static int lower_div(compiler *C, lctx *x, face_fn fn, const void *arg)
{
    int sum = -1;
    for (int a = 0; a < C->dim; a++) {
        lctx hi = *x, lo = *x;
        hi.face = lo.face = 1;
        hi.axis = lo.axis = a;
        lo.off[a] -= 1;
        int fh = fn(C, &hi, arg);
        if (fh < 0) return -1;
        int fl = fn(C, &lo, arg);
        if (fl < 0) return -1;
        int term = mesh_plain(C, a) ? kir_op2(x->k, KIR_MUL, kir_op2(x->k, KIR_SUB, fh, fl), inverse_spacing(x->k, a, 1))
                                    : metric_div(C, x->k, a, x->off[a], fh, fl);
        sum = sum < 0 ? term : kir_op2(x->k, KIR_ADD, sum, term);
    }
    return sum;
}

/* lap(e) in a cell: sum over axes of (e(+1) + e(-1) - 2 e) / h^2, the same operator as
 * div(grad(e)) with one multiplication per axis (what a hand-written stencil does). */
static int lower_lap(compiler *C, lctx *x, const ast_expr *e)
{
    int centre = lower_expr(C, x, e);
    if (centre < 0) return -1;
    int twice = kir_op2(x->k, KIR_MUL, kir_const(x->k, 2), centre);
    int sum = -1;
    for (int a = 0; a < C->dim; a++) {
        lctx hi = cell_at(x, a, 1), lo = cell_at(x, a, -1);
        int eh = lower_expr(C, &hi, e);
        if (eh < 0) return -1;
        int el = lower_expr(C, &lo, e);
        if (el < 0) return -1;
        int term;
        if (mesh_plain(C, a)) {
            int d2 = kir_op2(x->k, KIR_SUB, kir_op2(x->k, KIR_ADD, eh, el), twice);
            term = kir_op2(x->k, KIR_MUL, d2, inverse_spacing(x->k, a, 2));
        } else { /* the fluxes (u(+1) - u) / d+ and (u - u(-1)) / d- through the faces' areas */
            int o = x->off[a], fh = kir_op2(x->k, KIR_SUB, eh, centre), fl = kir_op2(x->k, KIR_SUB, centre, el);
            if (mesh_uniform(C, a)) { /* a radial axis: 1/h once per launch, as on a grid */
                fh = kir_op2(x->k, KIR_MUL, fh, inverse_spacing(x->k, a, 1));
                fl = kir_op2(x->k, KIR_MUL, fl, inverse_spacing(x->k, a, 1));
                term = metric_div(C, x->k, a, o, fh, fl);
            } else { /* A / (d V) per face from one table each (mesh_lap_coef): two loads, not three */
                fh = kir_op2(x->k, KIR_MUL, fh, mesh_lap_coef(C, x->k, a, o, 1));
                fl = kir_op2(x->k, KIR_MUL, fl, mesh_lap_coef(C, x->k, a, o, 0));
                term = kir_op2(x->k, KIR_SUB, fh, fl);
            }
        }
        sum = sum < 0 ? term : kir_op2(x->k, KIR_ADD, sum, term);
    }
    return sum;
}

static int face_expr(compiler *C, lctx *face, const void *arg) { return lower_expr(C, face, arg); }

static int face_grad(compiler *C, lctx *face, const void *arg)
{
    lctx l = cell_at(face, face->axis, 0), r = cell_at(face, face->axis, 1);
    int a = lower_expr(C, &l, arg);
    if (a < 0) return -1;
    int b = lower_expr(C, &r, arg);
    if (b < 0) return -1;
    int ax = face->axis;
    if (!mesh_uniform(C, ax))
        return kir_op2(face->k, KIR_MUL, kir_op2(face->k, KIR_SUB, b, a), mesh_inv_distance(C, face->k, ax, 2 * face->off[ax] + 1));
    return kir_op2(face->k, KIR_MUL, kir_op2(face->k, KIR_SUB, b, a), inverse_spacing(face->k, ax, 1));
}

/* gradx/grady/gradz(e) on a face along `axis`: component b of the gradient at the face. Along the
 * face's axis it is grad(e); across it the mean of the two cells' central differences along b,
 * ((e(L+1) - e(L-1)) + (e(R+1) - e(R-1))) / (4 h_b): second order at the face centre, like the
 * normal one. On a side of the mesh L or R is a ghost cell, and e(ghost +- 1) a corner ghost: the
 * fill sets both (grid.h: the last axis filled sets the corners), within the halo of 1 the loads'
 * offsets give. */
static int face_grad_component(compiler *C, lctx *face, int b, const ast_expr *e)
{
    if (b == face->axis) return face_grad(C, face, e);
    kir_kernel *k = face->k;
    int sum = -1;
    for (int side = 0; side < 2; side++) {
        lctx hi = cell_at(face, face->axis, side), lo = hi;
        hi.off[b] += 1;
        lo.off[b] -= 1;
        int eh = lower_expr(C, &hi, e);
        if (eh < 0) return -1;
        int el = lower_expr(C, &lo, e);
        if (el < 0) return -1;
        int d = kir_op2(k, KIR_SUB, eh, el);
        if (!mesh_uniform(C, b)) /* (e(+1) - e(-1)) / (c(+1) - c(-1)) */
            d = kir_op2(k, KIR_DIV, d, kir_op2(k, KIR_SUB, mesh_position(C, k, b, 2 * hi.off[b]), mesh_position(C, k, b, 2 * lo.off[b])));
        sum = sum < 0 ? d : kir_op2(k, KIR_ADD, sum, d);
    }
    if (!mesh_uniform(C, b)) return kir_op2(k, KIR_MUL, kir_const(k, 0.5), sum);
    return kir_op2(k, KIR_MUL, kir_op2(k, KIR_MUL, kir_const(k, 0.25), sum), inverse_spacing(k, b, 1));
}

static int load_field(compiler *C, lctx *x, int field, const int extra[3], pj_loc loc)
{
    if (x->where == IN_BC) {
        x->bc_hit = 1;
        return kir_const(x->k, 0);
    }
    if (x->where != IN_STAGE) {
        lower_error(C, loc, "%s cannot depend on the field '%s'", where_text(x->where),
                    sema_lookup_field_name(C, field));
        return -1;
    }
    int off[3];
    for (int a = 0; a < 3; a++) {
        off[a] = x->off[a] + extra[a];
        if (off[a] > KIR_MAX_OFFSET || off[a] < -KIR_MAX_OFFSET) {
            lower_error(C, loc, "neighbour offset %d is too far (at most %d cells)", off[a], KIR_MAX_OFFSET);
            return -1;
        }
    }
    return kir_load(x->k, x->slot, field, off);
}

static int lower_coord(compiler *C, lctx *x, int axis, pj_loc loc, const char *name)
{
    if (x->where == IN_PARAM || x->where == IN_CONST || x->where == IN_MESH || x->where == IN_STOP) {
        lower_error(C, loc, "%s cannot depend on the coordinate '%s'", where_text(x->where), name);
        return -1;
    }
    int half = 2 * x->off[axis];
    if (x->face && axis == x->axis) half += 1;
    if (x->where == IN_BC && axis == x->bc_side / 2) half += (x->bc_side % 2) ? 1 : -1;
    return mesh_position(C, x->k, axis, half);
}

/* dx (dr ...): the spacing, the local one on a non-uniform axis (a cell's width; on a face along
 * the axis, the distance between the two centres). */
static int lower_spacing(compiler *C, lctx *x, int a, pj_loc loc, const char *name)
{
    if (x->where == IN_CONST || x->where == IN_MESH || x->where == IN_PARAM || x->where == IN_STOP) {
        lower_error(C, loc, "%s cannot use the spacing '%s'", where_text(x->where), name);
        return -1;
    }
    if (mesh_uniform(C, a)) return kir_spacing(x->k, a);
    if (x->face && a == x->axis) return mesh_distance(C, x->k, a, 2 * x->off[a] + 1);
    return mesh_width(C, x->k, a, x->off[a]);
}

/* Resolves a name through the inlining frames: returns the argument AST bound to it (and the
 * frame to lower it in), or NULL when it is not an argument. */
static const ast_expr *bound_arg(const lctx *x, const char *name, const frame **caller)
{
    if (!x->env) return NULL;
    const ast_stmt *def = x->env->def;
    for (int i = 0; i < def->n_words; i++)
        if (!strcmp(def->words[i].text, name)) {
            *caller = x->env->caller;
            return x->env->args[i];
        }
    return NULL;
}

/* The field an expression names (a field, or an argument bound to one), or -1. */
static int named_field(compiler *C, const lctx *x, const ast_expr *e)
{
    while (e && e->kind == AST_NAME) {
        const frame *caller;
        const ast_expr *arg = bound_arg(x, e->name, &caller);
        if (arg) {
            lctx up = *x;
            up.env = caller;
            return named_field(C, &up, arg);
        }
        symbol *s = sema_lookup(C, e->name);
        return s && s->kind == SYM_FIELD ? s->index : -1;
    }
    return -1;
}

static int lower_name(compiler *C, lctx *x, const ast_expr *e)
{
    const frame *caller;
    const ast_expr *arg = bound_arg(x, e->name, &caller);
    if (arg) {
        lctx up = *x;
        up.env = caller;
        int r = lower_expr(C, &up, arg);
        x->bc_hit |= up.bc_hit;
        return r;
    }
    const char *n = e->name;
    symbol *s = sema_lookup(C, n);
    if (s) {
        switch (s->kind) {
        case SYM_FIELD: {
            FACE_MEAN_OR(C, x, e);
            static const int zero[3] = {0, 0, 0};
            return load_field(C, x, s->index, zero, e->loc);
        }
        case SYM_PARAM:
            if (x->where == IN_CONST || x->where == IN_MESH) {
                lower_error(C, e->loc, "%s cannot depend on the param '%s' (use const for compile-time values)",
                            where_text(x->where), n);
                return -1;
            }
            if (x->where == IN_PARAM && s->index >= x->param_limit) {
                lower_error(C, e->loc, "param '%s' is used before its value is defined", n);
                return -1;
            }
            return kir_param(x->k, s->index);
        case SYM_MONITOR:
            if (x->where != IN_STOP) {
                lower_error(C, e->loc, "monitor '%s' can only be used in `stop when`", n);
                return -1;
            }
            return kir_param(x->k, sema_count_kind(C, SYM_PARAM) + s->index);
        case SYM_CONST: {
            double v; /* through the name: cycles are caught there */
            if (lower_const_value(C, (ast_expr *)e, &v) < 0) return -1;
            return kir_const(x->k, v);
        }
        default:
            lower_error(C, e->loc, "'%s' is a %s: call it as %s(...)", n, s->kind == SYM_FUNC ? "func" : "flux", n);
            return -1;
        }
    }
    if (!strcmp(n, "boundary")) { /* 1 on a face that is a side of the mesh (not a periodic one) */
        if (!x->face) {
            lower_error(C, e->loc, "'boundary' is a face quantity: use it inside div(...) or a flux");
            return -1;
        }
        return C->periodic[x->axis] ? kir_const(x->k, 0) : kir_edge(x->k, x->axis, x->off[x->axis]);
    }
    if (!strcmp(n, "pi")) return kir_const(x->k, M_PI);
    if (!strcmp(n, "e")) return kir_const(x->k, M_E);
    if (!strcmp(n, "t")) {
        if (x->where == IN_PARAM || x->where == IN_CONST || x->where == IN_MESH) {
            lower_error(C, e->loc, "%s cannot depend on the time 't'", where_text(x->where));
            return -1;
        }
        if (x->where == IN_INIT) return kir_const(x->k, 0.0);
        return kir_leaf(x->k, KIR_TIME);
    }
    int spacing, axis = mesh_name_axis(C, n, &spacing);
    if (axis >= 0) return spacing ? lower_spacing(C, x, axis, e->loc, n) : lower_coord(C, x, axis, e->loc, n);
    lower_error(C, e->loc, "undefined name '%s'", n);
    return -1;
}

/* The functions that are one op of the table (kir_ops.h, by user name), then sign and heaviside,
 * which the lowering expands. -1 when `n` is none of them. */
static int math_call(kir_kernel *k, const char *n, const int *args)
{
    int a = args[0];
    for (int op = 0; op < KIR_N_OPS; op++) {
        if (!kir_ops[op].user || strcmp(n, kir_ops[op].user)) continue;
        if (kir_ops[op].arity == 1) return kir_op1(k, (kir_op)op, a);
        if (kir_ops[op].arity == 2) return kir_op2(k, (kir_op)op, a, args[1]);
        return kir_op3(k, (kir_op)op, a, args[1], args[2]);
    }
    if (!strcmp(n, "sign")) {
        int z = kir_const(k, 0);
        return kir_op3(k, KIR_SELECT, kir_op2(k, KIR_GT, a, z), kir_const(k, 1),
                       kir_op3(k, KIR_SELECT, kir_op2(k, KIR_LT, a, z), kir_const(k, -1), z));
    }
    if (!strcmp(n, "heaviside"))
        return kir_op3(k, KIR_SELECT, kir_op2(k, KIR_GE, a, kir_const(k, 0)), kir_const(k, 1), kir_const(k, 0));
    return -1;
}

/* x^p: small integer powers are products (what every back end vectorises), others pow(). */
static int power(kir_kernel *k, int a, int b)
{
    const kir_node *bn = &k->nodes[b];
    if (bn->op == KIR_CONST) {
        double p = bn->value;
        if (p == 1) return a;
        if (p == 2) return kir_op2(k, KIR_MUL, a, a);
        if (p == 3) return kir_op2(k, KIR_MUL, kir_op2(k, KIR_MUL, a, a), a);
        if (p == 4) {
            int sq = kir_op2(k, KIR_MUL, a, a);
            return kir_op2(k, KIR_MUL, sq, sq);
        }
        if (p == -1) return kir_op2(k, KIR_DIV, kir_const(k, 1), a);
    }
    return kir_op2(k, KIR_POW, a, b);
}

static int need_face(compiler *C, lctx *x, const ast_expr *e)
{
    if (x->face) return 1;
    lower_error(C, e->loc, "%s() is a face quantity: use it inside div(...) or a flux", e->name);
    return 0;
}

static int lower_call(compiler *C, lctx *x, const ast_expr *e)
{
    const char *n = e->name;
    kir_kernel *k = x->k;
    symbol *s = sema_lookup(C, n);
    int face_axis, face_high;
    if (sema_term_face(C, n, &face_axis, &face_high)) { /* term.c: a face of this cell (sema.h) */
        if (x->face) {
            lower_error(C, e->loc, "%s() is a cell quantity", n);
            return -1;
        }
        lctx f = *x;
        f.face = 1;
        f.axis = face_axis;
        if (!face_high) f.off[face_axis] -= 1;
        return lower_expr(C, &f, e->args[0]);
    }
    if (s && (s->kind == SYM_FUNC || s->kind == SYM_FLUX)) {
        if (s->kind == SYM_FLUX && !x->face) {
            lower_error(C, e->loc, "flux '%s' is a face quantity: use it inside div(...)", n);
            return -1;
        }
        int nesting = 0;
        for (const frame *q = x->env; q; q = q->caller) nesting++;
        if (nesting >= MAX_INLINE_DEPTH) {
            lower_error(C, e->loc, "funcs call each other more than %d deep", MAX_INLINE_DEPTH);
            return -1;
        }
        frame f = {s->stmt, e->args, x->env, e->loc};
        lctx inner = *x;
        inner.env = &f;
        int r = lower_expr(C, &inner, s->stmt->rhs);
        x->bc_hit |= inner.bc_hit;
        return r;
    }
    if (!strcmp(n, "div") || !strcmp(n, "lap")) {
        FACE_MEAN_OR(C, x, e);
        if (x->where != IN_STAGE) {
            if (x->where == IN_BC) { x->bc_hit = 1; return kir_const(k, 0); }
            lower_error(C, e->loc, "%s() cannot be used in %s", n, where_text(x->where));
            return -1;
        }
        return n[0] == 'd' ? lower_div(C, x, face_expr, e->args[0]) : lower_lap(C, x, e->args[0]);
    }
    if (!strcmp(n, "dn")) {
        if (x->where == IN_BC) { x->bc_hit = 1; return kir_const(k, 0); }
        lower_error(C, e->loc, "dn() is the normal derivative at a boundary: use it in an `on` condition");
        return -1;
    }
    if (!strcmp(n, "dt")) {
        lower_error(C, e->loc, "dt() may only stand on the left of an equation: eq dt(u) = ...");
        return -1;
    }
    if (!strcmp(n, "implicit")) { /* lower_eq_rhs takes the ones in their place */
        lower_error(C, e->loc, "implicit(...) must be a term of an equation's right-hand side: "
                               "eq dt(u) = implicit(...) + ... (not inside another expression or a func)");
        return -1;
    }
    if (!strcmp(n, "wall")) {
        /* on a side of the mesh, the value the condition gives the face: the mean of the boundary
           cell and its ghost, which the condition's fill sets; elsewhere the face mean */
        if (!need_face(C, x, e)) return -1;
        return averaged(C, x, e->args[0]);
    }
    if (sema_grad_axis(n) >= 0) {
        int b = sema_grad_axis(n);
        if (!x->face) {
            /* a cell has no gradient operator of its own: say where these are, and the cell's
               central difference to write instead */
            static const char *const diff[3] = {"(u[1] - u[-1])/(2*dx)", "(u[0, 1] - u[0, -1])/(2*dy)",
                                                "(u[0, 0, 1] - u[0, 0, -1])/(2*dz)"};
            lower_error(C, e->loc,
                        "%s() is a component of the gradient at a face: use it inside div(...) or a flux "
                        "(in a cell, write the central difference %s)", n, diff[b]);
            return -1;
        }
        return face_grad_component(C, x, b, e->args[0]);
    }
    if (is_face_op(n)) {
        if (!need_face(C, x, e)) return -1;
        if (!strcmp(n, "grad")) return face_grad(C, x, e->args[0]);
        if (!strcmp(n, "normal")) {
            if (e->n_args < C->dim) {
                lower_error(C, e->loc, "normal() needs one component per axis (%d in a %dD mesh)", C->dim, C->dim);
                return -1;
            }
            return lower_expr(C, x, e->args[x->axis]);
        }
        if (!strcmp(n, "upwind")) {
            int v = lower_expr(C, x, e->args[1]);
            if (v < 0) return -1;
            lctx l = cell_at(x, x->axis, 0), r = cell_at(x, x->axis, 1);
            int ul = lower_expr(C, &l, e->args[0]), ur = ul < 0 ? -1 : lower_expr(C, &r, e->args[0]);
            if (ur < 0) return -1;
            return kir_op3(k, KIR_SELECT, kir_op2(k, KIR_GT, v, kir_const(k, 0)), ul, ur);
        }
        if (!strcmp(n, "harm")) {
            lctx l = cell_at(x, x->axis, 0), r = cell_at(x, x->axis, 1);
            int a = lower_expr(C, &l, e->args[0]), b = a < 0 ? -1 : lower_expr(C, &r, e->args[0]);
            if (b < 0) return -1;
            return kir_op2(k, KIR_DIV, kir_op2(k, KIR_MUL, kir_op2(k, KIR_MUL, kir_const(k, 2), a), b),
                           kir_op2(k, KIR_ADD, a, b));
        }
        int shift = !strcmp(n, "L") ? 0 : !strcmp(n, "R") ? 1 : !strcmp(n, "LL") ? -1 : 2;
        lctx c = cell_at(x, x->axis, shift);
        return lower_expr(C, &c, e->args[0]);
    }
    if (!strcmp(n, "rand") || !strcmp(n, "randn")) {
        if (x->where != IN_STAGE && x->where != IN_INIT) {
            lower_error(C, e->loc, "%s() cannot be used in %s: noise belongs in a field's initial value or an equation",
                        n, where_text(x->where));
            return -1;
        }
        FACE_MEAN_OR(C, x, e); /* on a face: the mean of the two cells' numbers */
        /* randn(): Box-Muller inside the op, the same bits on every back end (compiler/noise.h) */
        return kir_rand(k, e->site, n[4] == 'n' ? 2 : 0, x->off);
    }
    int a[3];
    for (int i = 0; i < e->n_args && i < 3; i++) {
        a[i] = lower_expr(C, x, e->args[i]);
        if (a[i] < 0) return -1;
    }
    if (!strcmp(n, "min") || !strcmp(n, "max"))
        return kir_op3(k, KIR_SELECT, kir_op2(k, n[1] == 'i' ? KIR_LT : KIR_GT, a[0], a[1]), a[0], a[1]);
    if (!strcmp(n, "pow")) return power(k, a[0], a[1]);
    int r = math_call(k, n, a);
    if (r < 0) lower_error(C, e->loc, "unknown function '%s'", n);
    return r;
}

static int lower_index(compiler *C, lctx *x, const ast_expr *e)
{
    FACE_MEAN_OR(C, x, e);
    ast_expr name = *e;
    name.kind = AST_NAME;
    int field = named_field(C, x, &name);
    if (field < 0) {
        lower_error(C, e->loc, "only fields have neighbours: '%s' is not a field", e->name);
        return -1;
    }
    int off[3] = {0, 0, 0};
    for (int i = 0; i < e->n_args; i++) {
        double v;
        if (lower_const_value(C, e->args[i], &v) < 0) return -1;
        if (v != floor(v) || fabs(v) > KIR_MAX_OFFSET) {
            lower_error(C, e->args[i]->loc, "a neighbour offset must be an integer between -%d and %d",
                        KIR_MAX_OFFSET, KIR_MAX_OFFSET);
            return -1;
        }
        off[i] = (int)v;
    }
    return load_field(C, x, field, off, e->loc);
}

/* The first n terms of a chain of binary operators (ast.h), combined left to right: the nodes
 * (and their order) that the left-leaning tree `((t0 op1 t1) op2 t2) ...` gives, in a loop. */
static int lower_chain(compiler *C, lctx *x, const ast_expr *e, int n)
{
    static const kir_op ops[] = {
        [OP_ADD] = KIR_ADD, [OP_SUB] = KIR_SUB, [OP_MUL] = KIR_MUL, [OP_DIV] = KIR_DIV,
        [OP_POW] = KIR_POW, [OP_LT] = KIR_LT, [OP_LE] = KIR_LE, [OP_GT] = KIR_GT,
        [OP_GE] = KIR_GE, [OP_EQ] = KIR_EQ, [OP_NE] = KIR_NE, [OP_AND] = KIR_AND, [OP_OR] = KIR_OR,
    };
    kir_kernel *k = x->k;
    int a = lower_expr(C, x, e->args[0]);
    for (int i = 1; i < n && a >= 0; i++) {
        int b = lower_expr(C, x, e->args[i]);
        if (b < 0) return -1;
        if (e->ops[i] == OP_POW) a = power(k, kir_as_f(k, a), kir_as_f(k, b));
        else a = kir_op2(k, ops[e->ops[i]], a, b);
    }
    return a;
}

int lower_expr(compiler *C, lctx *x, const ast_expr *e)
{
    if (++C->work > MAX_WORK(C)) {
        if (C->work == MAX_WORK(C) + 1)
            lower_error(C, e->loc, "expression is too large after inlining funcs and operators");
        return -1;
    }
    kir_kernel *k = x->k;
    switch (e->kind) {
    case AST_NUM: return kir_const(k, e->value);
    case AST_NAME: return lower_name(C, x, e);
    case AST_CALL: return lower_call(C, x, e);
    case AST_INDEX: return lower_index(C, x, e);
    case AST_UNARY: {
        int a = lower_expr(C, x, e->a);
        if (a < 0) return -1;
        if (e->op == '-') return kir_op1(k, KIR_NEG, a);
        if (e->op == '!') return kir_op1(k, KIR_NOT, a);
        return kir_as_f(k, a);
    }
    case AST_COND: {
        int c = lower_expr(C, x, e->a);
        int a = c < 0 ? -1 : lower_expr(C, x, e->b);
        int b = a < 0 ? -1 : lower_expr(C, x, e->c);
        if (b < 0) return -1;
        return kir_op3(k, KIR_SELECT, c, a, b);
    }
    case AST_BINARY: return lower_chain(C, x, e, e->n_args);
    }
    return -1;
}

static int is_implicit_call(compiler *C, const ast_expr *e)
{
    if (e->kind != AST_CALL || strcmp(e->name, "implicit") || e->n_args != 1) return 0;
    symbol *s = sema_lookup(C, e->name);
    return !(s && (s->kind == SYM_FUNC || s->kind == SYM_FLUX)); /* a user func of that name wins */
}

static int has_implicit(compiler *C, const ast_expr *e)
{
    if (!e) return 0;
    if (is_implicit_call(C, e)) return 1;
    if (has_implicit(C, e->a) || has_implicit(C, e->b) || has_implicit(C, e->c)) return 1;
    for (int i = 0; i < e->n_args; i++)
        if (has_implicit(C, e->args[i])) return 1;
    return 0;
}

int lower_eq_rhs(compiler *C, lctx *x, const ast_expr *e, int mode, int *n_implicit)
{
    kir_kernel *k = x->k;
    if (is_implicit_call(C, e)) {
        if (n_implicit) (*n_implicit)++;
        return mode == LOWER_EXPLICIT ? kir_const(k, 0) : lower_expr(C, x, e->args[0]);
    }
    int additive = e->kind == AST_BINARY;
    for (int i = 1; additive && i < e->n_args; i++) additive = e->ops[i] == OP_ADD || e->ops[i] == OP_SUB;
    if (additive) {
        int a = lower_eq_rhs(C, x, e->args[0], mode, n_implicit);
        for (int i = 1; i < e->n_args && a >= 0; i++) {
            int b = lower_eq_rhs(C, x, e->args[i], mode, n_implicit);
            if (b < 0) return -1;
            a = kir_op2(k, e->ops[i] == OP_ADD ? KIR_ADD : KIR_SUB, kir_as_f(k, a), kir_as_f(k, b));
        }
        return a;
    }
    if (e->kind == AST_UNARY && (e->op == '-' || e->op == '+')) {
        int a = lower_eq_rhs(C, x, e->a, mode, n_implicit);
        if (a < 0) return -1;
        return e->op == '-' ? kir_op1(k, KIR_NEG, a) : kir_as_f(k, a);
    }
    /* any other term is explicit; an implicit(...) inside it is lower_call's error */
    if (mode == LOWER_IMPLICIT && !has_implicit(C, e)) return kir_const(k, 0);
    return lower_expr(C, x, e);
}

/* ---- boundary conditions ------------------------------------------------------------------ */

/* a*u + b*dn(u) + c with a, b = -1 meaning zero. */
typedef struct lin { int a, b, c; } lin;

static int add_or(kir_kernel *k, kir_op op, int p, int q)
{
    if (p < 0 && q < 0) return -1;
    if (q < 0) return p;
    if (p < 0) return op == KIR_SUB ? kir_op1(k, KIR_NEG, q) : q;
    return kir_op2(k, op, p, q);
}

static int scale(kir_kernel *k, kir_op op, int p, int s) { return p < 0 ? -1 : kir_op2(k, op, p, s); }

static int linear(compiler *C, lctx *x, const ast_expr *e, lin *out);

/* p OP term, where p is the value of the terms of chain e before term and OP is + - * or /. */
static int linear_combine(compiler *C, lctx *x, const ast_expr *e, int op, lin p, const ast_expr *term, lin *out)
{
    kir_kernel *k = x->k;
    lin q;
    if (linear(C, x, term, &q) < 0) return -1;
    if (op == OP_ADD || op == OP_SUB) {
        kir_op kop = op == OP_ADD ? KIR_ADD : KIR_SUB;
        *out = (lin){add_or(k, kop, p.a, q.a), add_or(k, kop, p.b, q.b), kir_op2(k, kop, p.c, q.c)};
        return 0;
    }
    if (op == OP_MUL && q.a < 0 && q.b < 0) {
        *out = (lin){scale(k, KIR_MUL, p.a, q.c), scale(k, KIR_MUL, p.b, q.c), kir_op2(k, KIR_MUL, p.c, q.c)};
        return 0;
    }
    if (op == OP_MUL && p.a < 0 && p.b < 0) {
        *out = (lin){scale(k, KIR_MUL, q.a, p.c), scale(k, KIR_MUL, q.b, p.c), kir_op2(k, KIR_MUL, p.c, q.c)};
        return 0;
    }
    if (op == OP_DIV && q.a < 0 && q.b < 0) {
        *out = (lin){scale(k, KIR_DIV, p.a, q.c), scale(k, KIR_DIV, p.b, q.c), kir_op2(k, KIR_DIV, p.c, q.c)};
        return 0;
    }
    lower_error(C, e->loc, "boundary condition is not linear in %s and dn(%s)",
                sema_lookup_field_name(C, x->bc_field), sema_lookup_field_name(C, x->bc_field));
    return -1;
}

static int linear(compiler *C, lctx *x, const ast_expr *e, lin *out)
{
    kir_kernel *k = x->k;
    if (e->kind == AST_NAME) {
        const frame *caller;
        const ast_expr *arg = bound_arg(x, e->name, &caller);
        if (!arg) {
            symbol *s = sema_lookup(C, e->name);
            if (s && s->kind == SYM_FIELD && s->index == x->bc_field) {
                *out = (lin){kir_const(k, 1), -1, kir_const(k, 0)};
                return 0;
            }
        }
    }
    if (e->kind == AST_CALL && !strcmp(e->name, "dn")) {
        if (e->n_args != 1 || named_field(C, x, e->args[0]) != x->bc_field) {
            lower_error(C, e->loc, "dn() takes the field of the condition");
            return -1;
        }
        *out = (lin){-1, kir_const(k, 1), kir_const(k, 0)};
        return 0;
    }
    if (e->kind == AST_UNARY && e->op != '!') {
        if (linear(C, x, e->a, out) < 0) return -1;
        if (e->op == '-') {
            if (out->a >= 0) out->a = kir_op1(k, KIR_NEG, out->a);
            if (out->b >= 0) out->b = kir_op1(k, KIR_NEG, out->b);
            out->c = kir_op1(k, KIR_NEG, out->c);
        }
        return 0;
    }
    if (e->kind == AST_BINARY) {
        /* the chain's longest prefix that ends in an operator other than + - * / is "anything
           else" (below); the terms after it combine one at a time */
        int from = e->n_args - 1;
        while (from > 0 && e->ops[from] <= OP_DIV) from--;
        lin acc;
        if (from > 0) {
            x->bc_hit = 0;
            int c = lower_chain(C, x, e, from + 1);
            if (c < 0) return -1;
            if (x->bc_hit) {
                lower_error(C, e->loc, "boundary condition is not linear in %s and dn(%s)",
                            sema_lookup_field_name(C, x->bc_field), sema_lookup_field_name(C, x->bc_field));
                return -1;
            }
            acc = (lin){-1, -1, c};
        } else if (linear(C, x, e->args[0], &acc) < 0) {
            return -1;
        }
        for (int i = from + 1; i < e->n_args; i++)
            if (linear_combine(C, x, e, e->ops[i], acc, e->args[i], &acc) < 0) return -1;
        *out = acc;
        return 0;
    }
    /* anything else must not involve the field */
    x->bc_hit = 0;
    int c = lower_expr(C, x, e);
    if (c < 0) return -1;
    if (x->bc_hit) {
        lower_error(C, e->loc, "boundary condition is not linear in %s and dn(%s)",
                    sema_lookup_field_name(C, x->bc_field), sema_lookup_field_name(C, x->bc_field));
        return -1;
    }
    *out = (lin){-1, -1, c};
    return 0;
}

int lower_bc(compiler *C, lctx *x, const ast_expr *lhs, const ast_expr *rhs, int *a, int *b, int *c)
{
    lin p, q;
    if (linear(C, x, lhs, &p) < 0 || linear(C, x, rhs, &q) < 0) return -1;
    /* lhs - rhs = (pa - qa) u + (pb - qb) dn(u) + (pc - qc) = 0  ->  a u + b dn(u) = qc - pc */
    kir_kernel *k = x->k;
    *a = add_or(k, KIR_SUB, p.a, q.a);
    *b = add_or(k, KIR_SUB, p.b, q.b);
    *c = kir_op2(k, KIR_SUB, q.c, p.c);
    return 0;
}

static void collect_fields(compiler *C, const ast_expr *e, int *found, pj_loc *where, int *n)
{
    if (!e) return;
    if (e->kind == AST_NAME) {
        symbol *s = sema_lookup(C, e->name);
        if (s && s->kind == SYM_FIELD) {
            for (int i = 0; i < *n; i++)
                if (found[i] == s->index) return;
            if (*n < 2) {
                where[*n] = e->loc;
                found[(*n)++] = s->index;
            }
        }
        return;
    }
    collect_fields(C, e->a, found, where, n);
    collect_fields(C, e->b, found, where, n);
    collect_fields(C, e->c, found, where, n);
    for (int i = 0; i < e->n_args; i++) collect_fields(C, e->args[i], found, where, n);
}

int lower_bc_field(compiler *C, const ast_expr *lhs, const ast_expr *rhs, pj_loc loc)
{
    int found[2];
    pj_loc where[2];
    int n = 0;
    collect_fields(C, lhs, found, where, &n);
    collect_fields(C, rhs, found, where, &n);
    if (n == 0) {
        lower_error(C, loc, "boundary condition names no field (write e.g. `u = 1` or `dn(u) = 0`)");
        return -1;
    }
    if (n > 1) {
        lower_error(C, where[1], "a boundary condition is about one field: '%s' and '%s' both appear",
                    sema_lookup_field_name(C, found[0]), sema_lookup_field_name(C, found[1]));
        return -1;
    }
    return found[0];
}

/* ---- constant expressions ----------------------------------------------------------------- */

/* A constant is lowered into a scratch kernel and must fold to one CONST node; a const symbol
 * is evaluated once, its cycles reported. */

int lower_const_value(compiler *C, ast_expr *e, double *out)
{
    /* a const symbol: evaluated once, cycles reported */
    if (e->kind == AST_NAME) {
        symbol *s = sema_lookup(C, e->name);
        if (s && s->kind == SYM_CONST) {
            if (s->state == 2) { *out = s->const_value; return 0; }
            if (s->state == 1) {
                lower_error(C, s->loc, "const '%s' depends on itself", s->name);
                return -1;
            }
            s->state = 1;
            int r = lower_const_value(C, s->value, &s->const_value);
            s->state = r < 0 ? 0 : 2;
            *out = s->const_value;
            return r;
        }
    }
    /* out of memory is reported, not jumped from: a const may be evaluated inside another's
       scratch kernel, which the caller frees */
    kir_kernel *k = kir_new(KIR_PARAMS, C->dim ? C->dim : 1, 0, 0, 1, "const");
    if (!k) {
        lower_error(C, e->loc, "out of memory");
        C->d->out_of_memory = 1;
        return -1;
    }
    lctx x = {.k = k, .where = IN_CONST};
    int node = lower_expr(C, &x, e);
    int r = -1;
    if (node >= 0 && k->failed) {
        lower_error(C, e->loc, "out of memory");
        C->d->out_of_memory = 1;
    } else if (node >= 0) {
        if (k->nodes[node].type == KIR_B) node = kir_as_f(k, node);
        if (k->nodes[node].op == KIR_CONST) {
            *out = k->nodes[node].value;
            r = 0;
        } else {
            lower_error(C, e->loc, "expected a constant expression");
        }
    }
    kir_free(k);
    return r;
}
