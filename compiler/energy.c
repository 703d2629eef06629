/* energy.c — free energies and their variational derivatives (contract section 9).
 *
 *   energy F = f(fields, params) + kappa/2*grad2(c)
 *
 * is expanded on the syntax tree once the symbols are collected and the mesh is read, before sema
 * checks the expressions, so that every later pass (names, lowering, Jacobians, every back end)
 * meets ordinary expressions only:
 *
 *   delta(F, u)   -> df/du - 2*k_u*lap(u)
 *   integral(F)   -> integral(f + sum over u of k_u * sum over axes ((u[+1] - u)/h)^2)
 *
 * where f is the density with every grad2() set to 0 (the bulk part), k_u = df/d(grad2(u)) and df/du
 * is the symbolic derivative of the bulk part (the rules of kir_ops.h's derivative column, rebuilt
 * on the tree; user funcs are inlined). The discrete energy is
 *
 *   E = sum_cells V*f(u_i) + sum_faces k*((u_j - u_i)/h)^2 * A*h      (A*h = V on the grid; k = kappa/2)
 *
 * each face counted once as the high face of the cell below it, and lap is the finite-volume
 * (u(+1) + u(-1) - 2u)/h^2, so dE/du_i = V*(f'(u_i) - 2k*lap(u)_i) = V*delta(F, u)_i exactly: gradient
 * flows of delta (Allen-Cahn, Cahn-Hilliard) make E fall. The faces on the sides of the mesh count
 * through the ghost cell above the last one: zero for zero flux (the ghost is the cell itself), the
 * wrapped neighbour when periodic.
 *
 * A k_u that reads fields (k(c)*grad2(c)) is taken on each face at the mean of the face's two cells,
 * as the lowering reads a field on a face: E's face term is k(mean)*((u_j - u_i)/h)^2*V, and delta
 * gains -2*div(k*grad(u)) (instead of -2*k*lap(u)) and, by each field w that k reads,
 * dk/dw(mean)/2*((u_j - u_i)/h)^2 on each face of the cell.
 *
 * Supported: k_u of fields, params, consts and numbers (not of x, y, z, t, noise or neighbours).
 * The density is linear in each grad2(u). Everything else is reported at the user's text. */
#include "energy.h"
#include "kir.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct energy {
    const ast_stmt *st;
    ast_expr *bulk;         /* the density with grad2() = 0, NULL until built */
    const char **g_fields;  /* the fields u of its grad2(u) terms */
    ast_expr **g_coef;      /* and their coefficients */
    int *g_varies;          /* whether a coefficient reads fields (then funcs are inlined in it) */
    int n_g;
    int state;              /* 0 not built, 1 being built (a cycle), 2 built, -1 failed */
} energy;

typedef struct ectx {
    compiler *C;
    arena *a;
    diag *d;
    ast_program *P;
    energy *en;
    int n_en;
    int errors_at_start;
} ectx;

/* ---- tree builders that fold 0 and 1 --------------------------------------------------------- */

static ast_expr *mk(ectx *x, ast_kind kind, pj_loc loc)
{
    ast_expr *e = arena_alloc(x->a, sizeof *e);
    e->kind = kind;
    e->loc = loc;
    e->depth = 1;
    return e;
}
static ast_expr *num(ectx *x, double v, pj_loc loc)
{
    ast_expr *e = mk(x, AST_NUM, loc);
    e->value = v;
    return e;
}
static int is_num(const ast_expr *e, double v) { return e->kind == AST_NUM && e->value == v; }
static ast_expr *name(ectx *x, const char *n, pj_loc loc)
{
    ast_expr *e = mk(x, AST_NAME, loc);
    e->name = n;
    return e;
}
static ast_expr *bin_raw(ectx *x, int op, ast_expr *l, ast_expr *r)
{
    ast_expr *e = mk(x, AST_BINARY, l->loc);
    e->args = arena_alloc(x->a, sizeof *e->args * 2);
    e->ops = arena_alloc(x->a, sizeof *e->ops * 2);
    e->args[0] = l;
    e->args[1] = r;
    e->ops[0] = -1;
    e->ops[1] = op;
    e->n_args = e->cap_args = 2;
    return e;
}
static ast_expr *neg(ectx *x, ast_expr *a)
{
    if (a->kind == AST_NUM) return num(x, -a->value, a->loc);
    ast_expr *e = mk(x, AST_UNARY, a->loc);
    e->op = '-';
    e->a = a;
    return e;
}
static ast_expr *add(ectx *x, ast_expr *l, ast_expr *r)
{
    if (is_num(l, 0)) return r;
    if (is_num(r, 0)) return l;
    return bin_raw(x, OP_ADD, l, r);
}
static ast_expr *sub(ectx *x, ast_expr *l, ast_expr *r)
{
    if (is_num(r, 0)) return l;
    if (is_num(l, 0)) return neg(x, r);
    return bin_raw(x, OP_SUB, l, r);
}
static ast_expr *mul(ectx *x, ast_expr *l, ast_expr *r)
{
    if (is_num(l, 0) || is_num(r, 0)) return num(x, 0, l->loc);
    if (is_num(l, 1)) return r;
    if (is_num(r, 1)) return l;
    if (is_num(l, -1)) return neg(x, r);
    return bin_raw(x, OP_MUL, l, r);
}
static ast_expr *dvd(ectx *x, ast_expr *l, ast_expr *r)
{
    if (is_num(l, 0)) return l;
    if (is_num(r, 1)) return l;
    return bin_raw(x, OP_DIV, l, r);
}
static ast_expr *call1(ectx *x, const char *fn, pj_loc loc, ast_expr *a, ast_expr *b)
{
    ast_expr *e = mk(x, AST_CALL, loc);
    e->name = fn;
    e->n_args = b ? 2 : 1;
    e->args = arena_alloc(x->a, sizeof *e->args * 2);
    e->args[0] = a;
    e->args[1] = b;
    return e;
}
static ast_expr *cond(ectx *x, ast_expr *c, ast_expr *a, ast_expr *b)
{
    if (a->kind == AST_NUM && b->kind == AST_NUM && a->value == b->value) return a;
    ast_expr *e = mk(x, AST_COND, c->loc);
    e->a = c;
    e->b = a;
    e->c = b;
    return e;
}

/* An op of kir_ops.h as a tree (for the derivative column, read below). */
static ast_expr *op_tree(ectx *x, pj_loc loc, kir_op op, ast_expr *a, ast_expr *b, ast_expr *c)
{
    switch (op) {
    case KIR_NEG: return neg(x, a);
    case KIR_ADD: return add(x, a, b);
    case KIR_SUB: return sub(x, a, b);
    case KIR_MUL: return mul(x, a, b);
    case KIR_DIV: return dvd(x, a, b);
    case KIR_LT: return bin_raw(x, OP_LT, a, b);
    case KIR_GT: return bin_raw(x, OP_GT, a, b);
    case KIR_SELECT: return cond(x, a, b, c);
    default: return call1(x, kir_ops[op].user ? kir_ops[op].user : "?", loc, a, b);
    }
}

/* The partials of the user function `fn` (kir_ops.h's derivative column), by its first and second
 * argument a, b with value r: returns 1 when fn is such a function (pa, pb set; *zero when its
 * derivative is 0 everywhere), 0 when it is not. */
static int libm_partials(ectx *x, const char *fn, pj_loc loc, int n_args, ast_expr *a, ast_expr *b,
                         ast_expr *r, ast_expr **pa, ast_expr **pb, int *zero)
{
    int op = -1;
    for (int i = 0; i < KIR_N_OPS && op < 0; i++)
        if (kir_ops[i].user && !strcmp(kir_ops[i].user, fn)) op = i;
    if (op < 0) return 0;
    if (n_args != kir_ops[op].arity) { /* sema reports the arity; the derivative is never used */
        *pa = *pb = NULL;
        *zero = 1;
        return 1;
    }
    *pa = *pb = NULL;
    *zero = 0;
#define A a
#define B b
#define R r
#define NUM(v) num(x, (v), loc)
#define OP1(o, p) op_tree(x, loc, KIR_##o, (p), NULL, NULL)
#define OP2(o, p, q) op_tree(x, loc, KIR_##o, (p), (q), NULL)
#define OP3(o, p, q, s) op_tree(x, loc, KIR_##o, (p), (q), (s))
#define D0 *zero = 1; return 1
#define DV return 0
#define DS return 0
#define DF return 0
#define D1(p) *pa = (p); return 1
#define D2(p, q) *pa = (p); *pb = (q); return 1
    switch ((kir_op)op) {
#define X(nm, text, arity, type, libm, user, deriv) \
    case KIR_##nm: {                               \
        deriv;                                     \
    } break;
        KIR_OPS(X)
#undef X
    case KIR_N_OPS: break;
    }
    return 0;
#undef A
#undef B
#undef R
#undef NUM
#undef OP1
#undef OP2
#undef OP3
#undef D0
#undef DV
#undef DS
#undef DF
#undef D1
#undef D2
}

/* ---- the problem's names ------------------------------------------------------------------- */

static energy *find_energy(ectx *x, const char *n)
{
    for (int i = 0; i < x->n_en; i++)
        if (!strcmp(x->en[i].st->name, n)) return &x->en[i];
    return NULL;
}

/* The statement that defines `n` as a field (kind ST_FIELD), func (ST_FUNC) ...; NULL if none. */
static const ast_stmt *defined_as(ectx *x, const char *n, ast_stmt_kind kind)
{
    for (int i = 0; i < x->P->n_stmts; i++) {
        const ast_stmt *st = x->P->stmts[i];
        if (st->kind != kind) continue;
        if (kind == ST_FIELD || kind == ST_PARAM || kind == ST_CONST) {
            for (int j = 0; j < st->n_kwargs; j++)
                if (st->kwargs[j].name && !strcmp(st->kwargs[j].name, n)) return st;
        } else if (st->name && !strcmp(st->name, n)) {
            return st;
        }
    }
    return NULL;
}

static int has_equation(ectx *x, const char *field)
{
    for (int i = 0; i < x->P->n_stmts; i++) {
        const ast_stmt *st = x->P->stmts[i];
        /* an algebraic equation without `for FIELD` is matched to its field later (sema): it may
           be this field's */
        if (st->kind == ST_EQ && (!st->name || !strcmp(st->name, field))) return 1;
    }
    return 0;
}

static const char *dx_name_of(int a) { return a == 0 ? "dx" : a == 1 ? "dy" : "dz"; }

/* ---- substitution (inlining a func) and differentiation ------------------------------------ */

/* e with the names of def's arguments replaced by args (shares what does not change). */
static ast_expr *subst(ectx *x, ast_expr *e, const ast_stmt *def, ast_expr **args)
{
    if (!e) return NULL;
    if (e->kind == AST_NAME) {
        for (int i = 0; i < def->n_words; i++)
            if (!strcmp(def->words[i].text, e->name)) return args[i];
        return e;
    }
    if (e->kind == AST_NUM) return e;
    ast_expr *c = mk(x, e->kind, e->loc);
    *c = *e;
    c->a = subst(x, e->a, def, args);
    c->b = subst(x, e->b, def, args);
    c->c = subst(x, e->c, def, args);
    if (e->n_args) {
        c->args = arena_alloc(x->a, sizeof *c->args * (size_t)e->n_args);
        for (int i = 0; i < e->n_args; i++) c->args[i] = subst(x, e->args[i], def, args);
        c->cap_args = e->n_args;
    }
    return c;
}

/* The variable of a derivative: a field name, or grad2(field) (grad2 = 1). */
typedef struct dvar { const char *field; int grad2; const energy *in; } dvar;

static ast_expr *fail(ectx *x, const ast_expr *at, const char *msg)
{
    diag_error(x->d, at->loc, "%s", msg);
    return NULL;
}

/* d e / d v, or NULL after an error at the user's text. depth bounds the inlining of funcs (a func
 * that calls itself is sema's error; here it must only not loop). */
static ast_expr *deriv(ectx *x, ast_expr *e, const dvar *v, int depth)
{
    char msg[256];
    if (depth > AST_MAX_DEPTH) return fail(x, e, "energy density nested too deeply (a recursive func?)");
    switch (e->kind) {
    case AST_NUM: return num(x, 0, e->loc);
    case AST_NAME:
        if (find_energy(x, e->name)) {
            snprintf(msg, sizeof msg, "energy '%s' may not stand in the density of energy '%s': write its density "
                     "or add the energies in one", e->name, v->in->st->name);
            return fail(x, e, msg);
        }
        return num(x, !v->grad2 && !strcmp(e->name, v->field) ? 1 : 0, e->loc);
    case AST_UNARY:
        if (e->op == '!') return num(x, 0, e->loc);
        {
            ast_expr *da = deriv(x, e->a, v, depth + 1);
            return !da ? NULL : e->op == '-' ? neg(x, da) : da;
        }
    case AST_COND: {
        ast_expr *db = deriv(x, e->b, v, depth + 1), *dc = db ? deriv(x, e->c, v, depth + 1) : NULL;
        return dc ? cond(x, e->a, db, dc) : NULL;
    }
    case AST_BINARY: {
        /* left to right: val is the chain so far, dv its derivative */
        ast_expr *val = e->args[0], *dv = deriv(x, e->args[0], v, depth + 1);
        for (int i = 1; i < e->n_args && dv; i++) {
            ast_expr *t = e->args[i];
            int op = e->ops[i];
            if (op >= OP_LT) { /* comparisons and logic: piecewise constant */
                dv = num(x, 0, e->loc);
            } else {
                ast_expr *dt = deriv(x, t, v, depth + 1);
                if (!dt) return NULL;
                switch (op) {
                case OP_ADD: dv = add(x, dv, dt); break;
                case OP_SUB: dv = sub(x, dv, dt); break;
                case OP_MUL: dv = add(x, mul(x, dv, t), mul(x, val, dt)); break;
                case OP_DIV: dv = sub(x, dvd(x, dv, t), dvd(x, mul(x, val, dt), mul(x, t, t))); break;
                case OP_POW:
                    if (!is_num(dt, 0)) {
                        /* val^t * (dt*log(val) + t*dv/val) */
                        ast_expr *p = bin_raw(x, OP_POW, val, t);
                        dv = mul(x, p, add(x, mul(x, dt, call1(x, "log", t->loc, val, NULL)), dvd(x, mul(x, t, dv), val)));
                    } else if (!is_num(dv, 0)) {
                        ast_expr *m1 = t->kind == AST_NUM ? num(x, t->value - 1, t->loc) : sub(x, t, num(x, 1, t->loc));
                        ast_expr *p = is_num(m1, 1) ? val : is_num(m1, 0) ? num(x, 1, t->loc) : bin_raw(x, OP_POW, val, m1);
                        dv = mul(x, mul(x, t, p), dv);
                    }
                    break;
                }
            }
            if (i + 1 < e->n_args) { /* the chain up to term i */
                ast_expr *pre = mk(x, AST_BINARY, e->loc);
                *pre = *e;
                pre->n_args = i + 1;
                val = pre;
            }
        }
        return dv;
    }
    case AST_INDEX:
        snprintf(msg, sizeof msg, "a neighbour value %s[...] in the density of energy '%s' has no variational "
                 "derivative here: write gradient energies as grad2(%s)", e->name, v->in->st->name, e->name);
        return fail(x, e, msg);
    case AST_CALL: {
        if (!strcmp(e->name, "grad2")) {
            if (e->n_args != 1 || e->args[0]->kind != AST_NAME || !defined_as(x, e->args[0]->name, ST_FIELD))
                return fail(x, e, "grad2() takes one field: grad2(u) is |grad u|^2");
            return num(x, v->grad2 && !strcmp(e->args[0]->name, v->field) ? 1 : 0, e->loc);
        }
        if (!strcmp(e->name, "rand") || !strcmp(e->name, "randn") || !strcmp(e->name, "sign") ||
            !strcmp(e->name, "heaviside"))
            return num(x, 0, e->loc);
        if ((!strcmp(e->name, "min") || !strcmp(e->name, "max")) && e->n_args == 2) {
            ast_expr *da = deriv(x, e->args[0], v, depth + 1), *db = da ? deriv(x, e->args[1], v, depth + 1) : NULL;
            if (!db) return NULL;
            return cond(x, bin_raw(x, e->name[1] == 'i' ? OP_LE : OP_GE, e->args[0], e->args[1]), da, db);
        }
        const ast_stmt *f = defined_as(x, e->name, ST_FUNC);
        if (f) {
            if (f->n_words != e->n_args) return num(x, 0, e->loc); /* sema reports the arity */
            return deriv(x, subst(x, f->rhs, f, e->args), v, depth + 1);
        }
        ast_expr *pa, *pb;
        int zero;
        if (libm_partials(x, e->name, e->loc, e->n_args, e->n_args > 0 ? e->args[0] : NULL,
                          e->n_args > 1 ? e->args[1] : NULL, e, &pa, &pb, &zero)) {
            if (zero) return num(x, 0, e->loc);
            ast_expr *da = deriv(x, e->args[0], v, depth + 1);
            if (!da) return NULL;
            ast_expr *r = is_num(da, 0) ? da : mul(x, pa, da);
            if (pb) {
                ast_expr *db = deriv(x, e->args[1], v, depth + 1);
                if (!db) return NULL;
                if (!is_num(db, 0)) r = add(x, r, mul(x, pb, db));
            }
            return r;
        }
        if (!strcmp(e->name, "delta") || !strcmp(e->name, "integral")) {
            snprintf(msg, sizeof msg, "%s() may not stand in the density of energy '%s' (an energy is used recursively)",
                     e->name, v->in->st->name);
            return fail(x, e, msg);
        }
        snprintf(msg, sizeof msg, "%s() in the density of energy '%s' has no derivative rule: an energy density "
                 "is made of fields, params, math functions, funcs of these and grad2(u)", e->name, v->in->st->name);
        return fail(x, e, msg);
    }
    }
    return fail(x, e, "internal error: unknown node in an energy density");
}

/* Does e read what a coefficient of grad2 may not: a coordinate, the time, noise, a neighbour,
 * grad2 itself (and, unless allow_fields, a field)? Sets *at. */
static int reads_variable(ectx *x, const ast_expr *e, const ast_expr **at, int allow_fields, int depth)
{
    if (!e || depth > AST_MAX_DEPTH) return 0;
    if (e->kind == AST_NAME && ((!allow_fields && defined_as(x, e->name, ST_FIELD)) || !strcmp(e->name, "x") ||
                                !strcmp(e->name, "y") || !strcmp(e->name, "z") || !strcmp(e->name, "t"))) {
        *at = e;
        return 1;
    }
    if (e->kind == AST_CALL || e->kind == AST_INDEX) {
        const ast_stmt *f = e->kind == AST_CALL ? defined_as(x, e->name, ST_FUNC) : NULL;
        if (f && reads_variable(x, f->rhs, at, allow_fields, depth + 1)) {
            *at = e;
            return 1;
        }
        if (e->kind == AST_INDEX || !strcmp(e->name, "grad2") || !strcmp(e->name, "rand") || !strcmp(e->name, "randn")) {
            *at = e;
            return 1;
        }
    }
    if (reads_variable(x, e->a, at, allow_fields, depth + 1) || reads_variable(x, e->b, at, allow_fields, depth + 1) ||
        reads_variable(x, e->c, at, allow_fields, depth + 1))
        return 1;
    for (int i = 0; i < e->n_args; i++)
        if (reads_variable(x, e->args[i], at, allow_fields, depth + 1)) return 1;
    return 0;
}

/* e with every call of a user func replaced by its body (arguments substituted), so that the
 * fields it reads can be moved to a face below. */
static ast_expr *inline_funcs(ectx *x, ast_expr *e, int depth)
{
    if (!e || e->kind == AST_NUM || e->kind == AST_NAME || depth > AST_MAX_DEPTH) return e;
    ast_expr *c = mk(x, e->kind, e->loc);
    *c = *e;
    c->a = inline_funcs(x, e->a, depth + 1);
    c->b = inline_funcs(x, e->b, depth + 1);
    c->c = inline_funcs(x, e->c, depth + 1);
    if (e->n_args) {
        c->args = arena_alloc(x->a, sizeof *c->args * (size_t)e->n_args);
        for (int i = 0; i < e->n_args; i++) c->args[i] = inline_funcs(x, e->args[i], depth + 1);
        c->cap_args = e->n_args;
    }
    const ast_stmt *f = e->kind == AST_CALL ? defined_as(x, e->name, ST_FUNC) : NULL;
    if (f && f->n_words == e->n_args) return inline_funcs(x, subst(x, f->rhs, f, c->args), depth + 1);
    return c;
}

/* The neighbour of field `u` at `side` (+1 or -1) along axis a: u[0, .., side]. */
static ast_expr *neighbour(ectx *x, const char *u, int a, int side, pj_loc loc)
{
    ast_expr *nb = mk(x, AST_INDEX, loc);
    nb->name = u;
    nb->n_args = a + 1;
    nb->args = arena_alloc(x->a, sizeof *nb->args * 3);
    for (int b = 0; b <= a; b++) nb->args[b] = num(x, b == a ? side : 0, loc);
    return nb;
}

/* e (funcs inlined) on the face at `side` of the cell along axis a: every field f read as the
 * mean (f + f[side])/2 of the two cells, as the lowering reads a field on a face. */
static ast_expr *on_face(ectx *x, ast_expr *e, int a, int side)
{
    if (!e || e->kind == AST_NUM) return e;
    if (e->kind == AST_NAME)
        return defined_as(x, e->name, ST_FIELD)
                   ? dvd(x, add(x, e, neighbour(x, e->name, a, side, e->loc)), num(x, 2, e->loc))
                   : e;
    ast_expr *c = mk(x, e->kind, e->loc);
    *c = *e;
    c->a = on_face(x, e->a, a, side);
    c->b = on_face(x, e->b, a, side);
    c->c = on_face(x, e->c, a, side);
    if (e->n_args) {
        c->args = arena_alloc(x->a, sizeof *c->args * (size_t)e->n_args);
        for (int i = 0; i < e->n_args; i++) c->args[i] = on_face(x, e->args[i], a, side);
        c->cap_args = e->n_args;
    }
    return c;
}

/* ((v[side] - v)/h)^2 along axis a. */
static ast_expr *face_grad2(ectx *x, const char *v, int a, int side, pj_loc loc)
{
    ast_expr *g = dvd(x, sub(x, neighbour(x, v, a, side, loc), name(x, v, loc)), name(x, dx_name_of(a), loc));
    return bin_raw(x, OP_POW, g, num(x, 2, loc));
}

/* e with every grad2() replaced by 0. */
static ast_expr *zero_grad2(ectx *x, ast_expr *e)
{
    if (!e || e->kind == AST_NUM || e->kind == AST_NAME) return e;
    if (e->kind == AST_CALL && !strcmp(e->name, "grad2")) return num(x, 0, e->loc);
    ast_expr *c = mk(x, e->kind, e->loc);
    *c = *e;
    c->a = zero_grad2(x, e->a);
    c->b = zero_grad2(x, e->b);
    c->c = zero_grad2(x, e->c);
    if (e->n_args) {
        c->args = arena_alloc(x->a, sizeof *c->args * (size_t)e->n_args);
        for (int i = 0; i < e->n_args; i++) c->args[i] = zero_grad2(x, e->args[i]);
        c->cap_args = e->n_args;
    }
    return c;
}

/* The grad2(u) calls of e (and of the funcs it calls), each field once, appended to en. */
static void find_grad2(ectx *x, energy *en, const ast_expr *e, int depth)
{
    if (!e || depth > AST_MAX_DEPTH) return;
    if (e->kind == AST_CALL && !strcmp(e->name, "grad2") && e->n_args == 1 && e->args[0]->kind == AST_NAME) {
        for (int i = 0; i < en->n_g; i++)
            if (!strcmp(en->g_fields[i], e->args[0]->name)) return;
        en->g_fields = arena_grow(x->a, en->g_fields, sizeof *en->g_fields * (size_t)en->n_g,
                                  sizeof *en->g_fields * (size_t)(en->n_g + 1));
        en->g_fields[en->n_g++] = e->args[0]->name;
        return;
    }
    if (e->kind == AST_CALL) {
        const ast_stmt *f = defined_as(x, e->name, ST_FUNC);
        if (f) find_grad2(x, en, f->rhs, depth + 1);
    }
    find_grad2(x, en, e->a, depth + 1);
    find_grad2(x, en, e->b, depth + 1);
    find_grad2(x, en, e->c, depth + 1);
    for (int i = 0; i < e->n_args; i++) find_grad2(x, en, e->args[i], depth + 1);
}

/* The bulk part and the grad2 coefficients of an energy; -1 after an error. */
static int build(ectx *x, energy *en)
{
    if (en->state == 2) return 0;
    if (en->state == -1) return -1;
    en->state = -1;
    ast_expr *f = en->st->rhs;
    dvar all = {"", 0, en}; /* a walk over the whole density: its terms without a derivative rule */
    if (!deriv(x, f, &all, 0)) return -1;
    find_grad2(x, en, f, 0);
    en->g_coef = arena_alloc(x->a, sizeof *en->g_coef * (size_t)(en->n_g + 1));
    en->g_varies = arena_alloc(x->a, sizeof *en->g_varies * (size_t)(en->n_g + 1));
    for (int i = 0; i < en->n_g; i++) {
        dvar v = {en->g_fields[i], 1, en};
        ast_expr *k = deriv(x, f, &v, 0);
        if (!k) return -1;
        const ast_expr *at = NULL;
        if (reads_variable(x, k, &at, 1, 0)) {
            diag_error(x->d, at->loc, "the coefficient of grad2(%s) in energy '%s' may depend on fields, params and "
                       "constants only%s", en->g_fields[i], en->st->name,
                       at->kind == AST_CALL && !strcmp(at->name, "grad2") ? " (the density must be linear in grad2)" : "");
            return -1;
        }
        en->g_varies[i] = reads_variable(x, k, &at, 0, 0);
        en->g_coef[i] = en->g_varies[i] ? inline_funcs(x, k, 0) : k;
    }
    en->bulk = zero_grad2(x, f);
    en->state = 2;
    return 0;
}

/* ---- the expansion ------------------------------------------------------------------------- */


/* Rewrites every delta(), integral(ENERGY) and energy name in *pe; grad2 outside an energy is an
 * error. dim: the mesh's dimension (the axes of the face sums); in_monitor: *pe is a monitor's value
 * (the one place integral() may stand). */
static void rewrite(ectx *x, ast_expr **pe, int dim, int in_monitor)
{
    ast_expr *e = *pe;
    if (!e) return;
    char msg[320];
    if (e->kind == AST_NAME && find_energy(x, e->name) && !defined_as(x, e->name, ST_FIELD) &&
        !defined_as(x, e->name, ST_PARAM) && !defined_as(x, e->name, ST_CONST)) {
        snprintf(msg, sizeof msg, "'%s' is an energy: use delta(%s, u) or integral(%s)", e->name, e->name, e->name);
        fail(x, e, msg);
        return;
    }
    if (e->kind == AST_CALL && !strcmp(e->name, "grad2")) {
        fail(x, e, "grad2() may only stand in an energy: energy NAME = ... + kappa/2*grad2(u)");
        return;
    }
    if (e->kind == AST_CALL && !strcmp(e->name, "delta")) {
        if (e->n_args != 2 || e->args[0]->kind != AST_NAME || e->args[1]->kind != AST_NAME) {
            fail(x, e, "delta() takes an energy and a field: delta(F, u)");
            return;
        }
        energy *en = find_energy(x, e->args[0]->name);
        const char *u = e->args[1]->name;
        if (!en) {
            const char *cand[64];
            int n = 0;
            for (int i = 0; i < x->n_en && n < 64; i++) cand[n++] = x->en[i].st->name;
            const char *near = diag_closest(e->args[0]->name, cand, n);
            if (near) snprintf(msg, sizeof msg, "unknown energy '%s'; did you mean '%s'?", e->args[0]->name, near);
            else snprintf(msg, sizeof msg, "unknown energy '%s' (define it: energy %s = ...)", e->args[0]->name,
                          e->args[0]->name);
            fail(x, e->args[0], msg);
            return;
        }
        if (!defined_as(x, u, ST_FIELD)) {
            snprintf(msg, sizeof msg, "delta(%s, %s): '%s' is not a field", en->st->name, u, u);
            fail(x, e->args[1], msg);
            return;
        }
        if (!has_equation(x, u)) {
            snprintf(msg, sizeof msg, "delta(%s, %s): field '%s' has no equation (an energy's variational derivative "
                     "is taken by a field with eq dt(%s) = ...)", en->st->name, u, u, u);
            fail(x, e->args[1], msg);
            return;
        }
        if (build(x, en) < 0) return;
        dvar v = {u, 0, en};
        ast_expr *r = deriv(x, en->bulk, &v, 0);
        if (!r) return;
        pj_loc loc = e->loc;
        for (int i = 0; i < en->n_g; i++) {
            const char *g = en->g_fields[i];
            ast_expr *k = en->g_coef[i];
            if (en->g_varies[i]) {
                /* E's faces k(mean of the cells)*((g_j - g_i)/h)^2*V: by u_i, k_u/2*(...)^2 on each
                   face of the cell, and for g = u, -2*div(k*grad(u)) (k on the face as lowered) */
                ast_expr *ku = deriv(x, k, &v, 0);
                if (!ku) return;
                if (!is_num(ku, 0))
                    for (int a = 0; a < dim; a++)
                        for (int side = 1; side >= -1; side -= 2)
                            r = add(x, r, mul(x, dvd(x, on_face(x, ku, a, side), num(x, 2, loc)),
                                              face_grad2(x, g, a, side, loc)));
                if (!strcmp(g, u))
                    r = sub(x, r, mul(x, num(x, 2, loc),
                                      call1(x, "div", loc, mul(x, k, call1(x, "grad", loc, name(x, u, loc), NULL)), NULL)));
            } else if (!strcmp(g, u)) {
                r = sub(x, r, mul(x, mul(x, num(x, 2, loc), k), call1(x, "lap", loc, name(x, u, e->args[1]->loc), NULL)));
            }
        }
        *pe = r;
        return;
    }
    if (e->kind == AST_CALL && !strcmp(e->name, "integral") && e->n_args == 1 && e->args[0]->kind == AST_NAME &&
        find_energy(x, e->args[0]->name)) {
        energy *en = find_energy(x, e->args[0]->name);
        if (!in_monitor) {
            fail(x, e, "integral() is a reduction over the cells: it may only stand in a monitor "
                       "(monitor NAME = integral(...))");
            return;
        }
        if (build(x, en) < 0) return;
        ast_expr *sum = en->bulk;
        pj_loc loc = e->loc;
        for (int i = 0; i < en->n_g; i++) {
            ast_expr *faces = NULL;
            for (int a = 0; a < dim; a++) {
                ast_expr *sq = face_grad2(x, en->g_fields[i], a, 1, loc);
                if (en->g_varies[i]) sq = mul(x, on_face(x, en->g_coef[i], a, 1), sq);
                faces = faces ? add(x, faces, sq) : sq;
            }
            if (faces) sum = add(x, sum, en->g_varies[i] ? faces : mul(x, en->g_coef[i], faces));
        }
        ast_expr *c = call1(x, "integral", loc, sum, NULL);
        *pe = c;
        return;
    }
    rewrite(x, &e->a, dim, in_monitor);
    rewrite(x, &e->b, dim, in_monitor);
    rewrite(x, &e->c, dim, in_monitor);
    for (int i = 0; i < e->n_args; i++) rewrite(x, &e->args[i], dim, in_monitor);
}

int energy_expand(compiler *C, ast_program *P)
{
    diag *d = C->d;
    ectx x = {.C = C, .a = C->arena, .d = d, .P = P, .errors_at_start = d->errors};
    int n = 0;
    for (int i = 0; i < P->n_stmts; i++) n += P->stmts[i]->kind == ST_ENERGY;
    x.en = arena_alloc(x.a, sizeof *x.en * (size_t)(n + 1));
    for (int i = 0; i < P->n_stmts; i++) {
        const ast_stmt *st = P->stmts[i];
        if (st->kind != ST_ENERGY) continue;
        energy *old = find_energy(&x, st->name);
        symbol *s = sema_lookup(C, st->name);
        if (old) {
            diag_error(d, st->name_loc, "energy '%s' is already defined at line %d", st->name, old->st->loc.line);
            continue;
        }
        if (s) {
            diag_error(d, st->name_loc, "'%s' is already defined as a %s at line %d", st->name, sema_kind_text(s->kind),
                       s->loc.line);
            continue;
        }
        x.en[x.n_en++] = (energy){.st = st};
    }
    int dim = C->dim;
    /* every energy is built, used or not, so that its errors are reported; then its density (grad2
       set to 0) has its names checked as any expression */
    for (int i = 0; i < x.n_en; i++)
        if (build(&x, &x.en[i]) == 0) sema_check_expr(C, zero_grad2(&x, x.en[i].st->rhs), NULL);
    for (int i = 0; i < P->n_stmts; i++) {
        ast_stmt *st = P->stmts[i];
        if (st->kind == ST_ENERGY) continue;
        for (int j = 0; j < st->n_kwargs; j++) {
            ast_expr *before = st->kwargs[j].value;
            rewrite(&x, &st->kwargs[j].value, dim, st->kind == ST_MONITOR);
            if (st->kwargs[j].value != before) /* the symbols hold the value written (sema.c) */
                for (int y = 0; y < C->n_syms; y++)
                    if (C->syms[y].value == before) C->syms[y].value = st->kwargs[j].value;
            for (int m = 0; m < st->kwargs[j].n_more; m++) rewrite(&x, &st->kwargs[j].more[m], dim, 0);
        }
        rewrite(&x, &st->lhs, dim, 0);
        rewrite(&x, &st->rhs, dim, 0);
        rewrite(&x, &st->lhs2, dim, 0);
        rewrite(&x, &st->rhs2, dim, 0);
    }
    /* the energies leave the statement list: no pass after this one sees them */
    int k = 0;
    for (int i = 0; i < P->n_stmts; i++)
        if (P->stmts[i]->kind != ST_ENERGY) P->stmts[k++] = P->stmts[i];
    P->n_stmts = k;
    return d->errors > x.errors_at_start ? -1 : 0;
}
