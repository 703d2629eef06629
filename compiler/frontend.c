/* frontend.c — compile_problem(): the whole front end, from text to a checked pj_program.
 *
 *   parse_program         text -> AST                                    (grammar/)
 *   sema_collect_symbols  fields, params, consts, funcs, fluxes; duplicates   (sema.c)
 *   set_consts            consts set from outside (--set) take their values
 *   read_mesh             the grid and its dimension (every later check needs it)
 *   sema_check_program    names, arities, axes of every expression; recursion  (sema.c)
 *   number_rand_sites     each rand()/randn() call's site, in the order of the text
 *   build_*, read_*       params, initial values, time, output, boundaries     (lower.c)
 *   lower_rhs             the KIR_RHS kernel: every eq's right-hand side        (lower.c)
 *   scheme_lower          one stage kernel per stage, composed from it          (scheme.c)
 *   kir_finish + kir_verify on every kernel
 *
 * Out of memory anywhere here ends in compile_problem's handler (see there).
 *
 * The driver sits above sema.c and lower.c: sema never lowers, lower never calls back here. */
#include "algebraic.h"
#include "arrays.h"
#include "redefine.h"
#include "energy.h"
#include "scheme.h"
#include "noise.h"
#include "sema.h"
#include "statements.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A block the compile malloc'd: returned, or (NULL) out of memory, which jumps to
 * compile_problem's handler. Called only where every live allocation is in the arena or owned
 * by the pj_program, so the handler frees everything. */
static void *need(compiler *C, void *block)
{
    if (!block) arena_fail(C->arena);
    return block;
}

/* Settings take one value: more (`nx = 10, 20`) is an error, except after `output at`, `range` and `slice`. */
static void check_single_values(compiler *C)
{
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        for (int j = 0; j < st->n_kwargs; j++) {
            const ast_kwarg *kw = &st->kwargs[j];
            if (kw->n_more && !(st->kind == ST_OUTPUT && (!strcmp(kw->name, "at") || !strcmp(kw->name, "range") ||
                                                        !strcmp(kw->name, "slice"))))
                diag_error(C->d, kw->more[0]->loc, "'%s' takes one value; settings read NAME = VALUE", kw->name);
        }
    }
}

/* `monitor every = T, NAME = integral(e), ...` (any number of statements; every once) and
 * `stop when COND`: the KIR_REDUCE kernel, one output per monitor in the order written, and the
 * stop condition over the params, the monitors and t. */
static void read_monitors(compiler *C, pj_program *p)
{
    const ast_stmt *first = NULL, *every_at = NULL, *stop = NULL;
    p->monitor_every = 0;
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind == ST_STOP) {
            stmt_single(C, st, ST_STOP, "stop condition", &stop);
            continue;
        }
        if (st->kind != ST_MONITOR) continue;
        if (!first) first = st;
        p->has_monitor = 1;
        const ast_kwarg *kw = stmt_kwarg_named(st, "every");
        if (!kw) continue;
        if (every_at) {
            diag_error(C->d, kw->loc, "monitor every is given twice (first at line %d)", every_at->loc.line);
            continue;
        }
        every_at = st;
        if (!kw->value) diag_error(C->d, kw->loc, "monitor setting 'every' needs a value");
        else if (stmt_const_setting(C, kw, &p->monitor_every) == 0 && !(p->monitor_every > 0 && isfinite(p->monitor_every)))
            diag_error(C->d, kw->value->loc, "monitor every must be a positive time, not %g", p->monitor_every);
    }
    int nm = sema_count_kind(C, SYM_MONITOR);
    if (nm) {
        p->n_monitors = nm;
        p->monitor_names = need(C, calloc((size_t)nm, sizeof *p->monitor_names));
        p->monitor_kinds = need(C, calloc((size_t)nm, sizeof *p->monitor_kinds));
        p->reduce = need(C, kir_new(KIR_REDUCE, p->dim, p->n_fields, p->n_params, 1, "reduce"));
        for (int i = 0; i < C->n_syms; i++) {
            symbol *s = &C->syms[i];
            if (s->kind != SYM_MONITOR) continue;
            p->monitor_names[s->index] = need(C, strdup(s->name));
            int kind = sema_reduction(s->value->name);
            p->monitor_kinds[s->index] = (pj_monitor_kind)kind;
            C->work = 0;
            lctx x = {.k = p->reduce, .where = IN_STAGE, .slot = 0};
            int v = lower_expr(C, &x, s->value->args[0]);
            if (v < 0) continue;
            for (int a = 0; a < p->dim && (kind == PJ_MON_INTEGRAL || kind == PJ_MON_MEAN); a++)
                if (!program_axis_plain(p, a)) /* the cell's volume (program_integral_scale: the plain axes') */
                    v = kir_op2(p->reduce, KIR_MUL, kir_as_f(p->reduce, v), mesh_volume(C, p->reduce, a, 0));
            int op = kind == PJ_MON_MAXVAL ? KIR_RED_MAX : kind == PJ_MON_MINVAL ? KIR_RED_MIN : KIR_RED_SUM;
            kir_add_output(p->reduce, op, s->index, kir_as_f(p->reduce, v));
        }
    }
    if (!stop || strcmp(stop->name, "when")) return;
    if (!first) {
        diag_error(C->d, stop->loc, "stop when is checked at monitor times: add a monitor statement (monitor every = ...)");
        return;
    }
    int n = p->n_params + nm;
    p->stop = need(C, kir_new(KIR_PARAMS, p->dim, p->n_fields, n > 0 ? n : 1, 1, "stop"));
    C->work = 0;
    lctx x = {.k = p->stop, .where = IN_STOP};
    int v = lower_expr(C, &x, stop->rhs);
    if (v >= 0) kir_add_output(p->stop, 0, 0, kir_as_f(p->stop, kir_as_b(p->stop, v)));
    /* the condition as written, for the message: its line after `stop when` */
    const char *src = C->source, *end = C->source + C->source_len;
    for (int line = 1; src < end && line < stop->loc.line; src++) line += *src == '\n';
    const char *eol = src;
    while (eol < end && *eol != '\n' && *eol != '#') eol++;
    const char *when = src;
    while (when + 4 <= eol && strncmp(when, "when", 4)) when++;
    const char *from = when + 4 <= eol ? when + 4 : eol;
    while (from < eol && (*from == ' ' || *from == '\t')) from++;
    while (eol > from && (eol[-1] == ' ' || eol[-1] == '\t' || eol[-1] == '\r')) eol--;
    p->stop_text = need(C, strndup(from, (size_t)(eol - from)));
}

static void build_fields_and_params(compiler *C, pj_program *p)
{
    p->n_fields = sema_count_kind(C, SYM_FIELD);
    p->n_params = sema_count_kind(C, SYM_PARAM);
    p->field_names = need(C, calloc((size_t)p->n_fields + 1, sizeof *p->field_names));
    p->field_has_eq = need(C, calloc((size_t)p->n_fields + 1, sizeof *p->field_has_eq));
    p->field_algebraic = need(C, calloc((size_t)p->n_fields + 1, sizeof *p->field_algebraic));
    p->field_halo = need(C, calloc((size_t)p->n_fields + 1, sizeof *p->field_halo));
    p->param_names = need(C, calloc((size_t)p->n_params + 1, sizeof *p->param_names));
    p->param_values = need(C, calloc((size_t)p->n_params + 1, sizeof *p->param_values));
    p->const_names = need(C, calloc((size_t)sema_count_kind(C, SYM_CONST) + 1, sizeof *p->const_names));
    for (int i = 0; i < C->n_syms; i++)
        if (C->syms[i].kind == SYM_CONST) p->const_names[p->n_consts++] = need(C, strdup(C->syms[i].name));
    p->bc = need(C, calloc((size_t)p->n_fields + 1, sizeof *p->bc));
    p->params_kernel = need(C, kir_new(KIR_PARAMS, p->dim, p->n_fields, p->n_params, 1, "params"));
    p->init = need(C, kir_new(KIR_INIT, p->dim, p->n_fields, p->n_params, 1, "init"));
    for (int i = 0; i < C->n_syms; i++) {
        symbol *s = &C->syms[i];
        C->work = 0; /* the inlining budget is per expression */
        if (s->kind == SYM_FIELD) {
            p->field_names[s->index] = need(C, strdup(s->name));
            int v;
            if (s->value) {
                lctx x = {.k = p->init, .where = IN_INIT};
                v = lower_expr(C, &x, s->value);
                if (v < 0) continue;
            } else {
                v = kir_const(p->init, 0);
            }
            kir_add_output(p->init, 0, s->index, v);
        } else if (s->kind == SYM_PARAM) {
            p->param_names[s->index] = need(C, strdup(s->name));
            lctx x = {.k = p->params_kernel, .where = IN_PARAM, .param_limit = s->index};
            int v = lower_expr(C, &x, s->value);
            if (v >= 0) kir_add_output(p->params_kernel, 0, s->index, v);
        }
    }
}

/* Marks in `reads` the fields e names, through the funcs and fluxes it calls (each walked once:
 * `seen` per symbol); def's arguments shadow fields of the same name. Depth is bounded by the
 * parser and funcs do not recurse (sema). */
static void fields_named(compiler *C, const ast_expr *e, const ast_stmt *def, char *reads, char *seen)
{
    if (!e) return;
    int is_arg = 0;
    for (int i = 0; def && e->name && i < def->n_words; i++) is_arg |= !strcmp(def->words[i].text, e->name);
    if ((e->kind == AST_NAME || e->kind == AST_INDEX) && !is_arg) {
        symbol *s = sema_lookup(C, e->name);
        if (s && s->kind == SYM_FIELD) reads[s->index] = 1;
    }
    if (e->kind == AST_CALL) {
        symbol *s = sema_lookup(C, e->name);
        if (s && (s->kind == SYM_FUNC || s->kind == SYM_FLUX) && !seen[s - C->syms]) {
            seen[s - C->syms] = 1;
            fields_named(C, s->stmt->rhs, s->stmt, reads, seen);
        }
    }
    fields_named(C, e->a, def, reads, seen);
    fields_named(C, e->b, def, reads, seen);
    fields_named(C, e->c, def, reads, seen);
    for (int i = 0; i < e->n_args; i++) fields_named(C, e->args[i], def, reads, seen);
}

/* The field of an `eq ... for NAME` (dt(NAME) too), or -1 after an error at its name. */
static int equation_field(compiler *C, const ast_stmt *st)
{
    symbol *s = sema_lookup(C, st->name);
    if (!s) {
        diag_error(C->d, st->name_loc, "eq for '%s', which is not defined (declare it: field %s = ...)", st->name, st->name);
        return -1;
    }
    if (s->kind != SYM_FIELD) {
        diag_error(C->d, st->name_loc, "eq for '%s', which is a %s, not a field", st->name, sema_kind_text(s->kind));
        return -1;
    }
    return s->index;
}

/* The equations: `eq dt(u) = F` first, then the algebraic ones. `eq 0 = EXPR for mu` is for mu
 * (a field without a dt(...) equation); `eq 0 = EXPR` is for the one field without a dt(...)
 * equation, and not taken by another algebraic equation, that EXPR reads (through its funcs):
 * these are matched until none is left with exactly one such field; one that reads none is an
 * error, one that reads several must name its field. A field with no equation at all is a
 * coefficient, as before. */
static void read_equations(compiler *C, pj_program *p, const ast_stmt **eqs)
{
    int n_unnamed = 0;
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind != ST_EQ || st->algebraic) continue;
        if (strcmp(st->eq_op, "dt")) {
            diag_error(C->d, st->eq_op_loc, "an equation reads `eq dt(%s) = ...`, not %s(%s)", st->name, st->eq_op, st->name);
            continue;
        }
        int f = equation_field(C, st);
        if (f < 0) continue;
        if (eqs[f]) {
            diag_error(C->d, st->name_loc, "field '%s' already has an equation at line %d", st->name, eqs[f]->loc.line);
            continue;
        }
        eqs[f] = st;
        p->field_has_eq[f] = 1;
    }
    for (int i = 0; i < C->ast->n_stmts; i++) { /* algebraic, naming their field */
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind != ST_EQ || !st->algebraic) continue;
        if (!st->name) {
            n_unnamed++;
            continue;
        }
        int f = equation_field(C, st);
        if (f < 0) continue;
        if (eqs[f]) {
            diag_error(C->d, st->name_loc, "field '%s' already has an equation at line %d: an algebraic equation is "
                       "for a field with no dt(%s) equation of its own", st->name, eqs[f]->loc.line, st->name);
            continue;
        }
        eqs[f] = st;
        p->field_has_eq[f] = p->field_algebraic[f] = 1;
        p->n_algebraic++;
    }
    if (!n_unnamed) return;
    const ast_stmt **todo = arena_alloc(C->arena, sizeof *todo * (size_t)n_unnamed);
    char *reads = arena_alloc(C->arena, (size_t)n_unnamed * ((size_t)p->n_fields + 1));
    char *seen = arena_alloc(C->arena, (size_t)C->n_syms + 1);
    int n = 0;
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind != ST_EQ || !st->algebraic || st->name) continue;
        memset(seen, 0, (size_t)C->n_syms + 1);
        fields_named(C, st->rhs, NULL, reads + (size_t)n * ((size_t)p->n_fields + 1), seen);
        todo[n++] = st;
    }
    for (int progress = 1; progress;) {
        progress = 0;
        for (int k = 0; k < n; k++) {
            if (!todo[k]) continue;
            const char *r = reads + (size_t)k * ((size_t)p->n_fields + 1);
            int found = -1, count = 0;
            for (int f = 0; f < p->n_fields; f++)
                if (r[f] && !eqs[f]) count++, found = found < 0 ? f : found;
            if (count != 1) continue;
            eqs[found] = todo[k];
            p->field_has_eq[found] = p->field_algebraic[found] = 1;
            p->n_algebraic++;
            todo[k] = NULL;
            progress = 1;
        }
    }
    for (int k = 0; k < n; k++) {
        if (!todo[k]) continue;
        const char *r = reads + (size_t)k * ((size_t)p->n_fields + 1);
        int first = -1, second = -1;
        for (int f = 0; f < p->n_fields; f++)
            if (r[f] && !eqs[f]) {
                if (first < 0) first = f;
                else if (second < 0) second = f;
            }
        if (first < 0)
            diag_error(C->d, todo[k]->eq_op_loc, "this algebraic equation reads no field that is left without an "
                       "equation: eq 0 = EXPR determines a field with no dt(...) equation of its own (declare one: "
                       "field mu = 0, and use it in EXPR)");
        else
            diag_error(C->d, todo[k]->eq_op_loc, "this algebraic equation reads %s and %s, fields without an equation "
                       "of their own: say which one it determines (eq 0 = ... for %s)", p->field_names[first],
                       p->field_names[second], p->field_names[first]);
    }
}

/* An algebraic equation needs a scheme that solves it: beuler, bdf2 or steady, or an explicit
 * scheme where it is linear in its field (checked once lowered: check_explicit_algebraic). */
static void check_algebraic(compiler *C, pj_program *p, const ast_stmt **eqs)
{
    for (int f = 0; f < p->n_fields; f++) {
        if (!p->field_algebraic[f]) continue;
        pj_loc at = eqs[f]->eq_op_loc;
        const char *name = p->field_names[f];
        if (p->scheme == PJ_CN)
            diag_error(C->d, at, "cn cannot solve the algebraic equation for %s: Crank-Nicolson averages it over the "
                       "step, (EXPR(U_n) + EXPR(U_n+1))/2 = 0, so %s is never made to satisfy it (not L-stable: an "
                       "error in %s flips sign every step and never decays); use beuler or bdf2", name, name, name);
        else if (p->scheme == PJ_IMEX)
            diag_error(C->d, at, "imex cannot solve the algebraic equation for %s: its explicit part has no place for "
                       "an equation without dt(...); use beuler or bdf2", name);
        else continue;
        return; /* once */
    }
}

/* An explicit scheme evaluates an algebraic equation where EXPR is linear in its field
 * (algebraic.c); the others are refused at the equation's 0. */
static void check_explicit_algebraic(compiler *C, pj_program *p, const ast_stmt **eqs)
{
    if (PJ_SCHEME_IMPLICIT(p->scheme)) return;
    for (int f = 0; f < p->n_fields; f++) {
        if (!p->field_algebraic[f]) continue;
        char why[400];
        int rc = algebraic_explicit_check(p, f, why, sizeof why);
        if (rc == -2) arena_fail(C->arena); /* out of memory */
        if (rc < 0) diag_error(C->d, eqs[f]->eq_op_loc, "explicit schemes cannot evaluate the algebraic equation for %s: "
                               "%s (time ..., scheme = bdf2), or steady", p->field_names[f], why);
    }
}

static void read_boundaries(compiler *C, pj_program *p)
{
    pj_loc periodic_at[3] = {{0, 0}, {0, 0}, {0, 0}};
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind != ST_PERIODIC) continue;
        for (int w = 0; w < st->n_words; w++) {
            const char *n = st->words[w].text;
            int axis = !strcmp(n, "x") ? 0 : !strcmp(n, "y") ? 1 : !strcmp(n, "z") ? 2 : -1;
            if (axis < 0) diag_error(C->d, st->words[w].loc, "unknown axis '%s'; periodic takes x, y, z", n);
            else if (axis >= p->dim) diag_error(C->d, st->words[w].loc, "axis %s does not exist in a %s mesh", n, sema_dim_text(p->dim));
            else if (!periodic_at[axis].line) periodic_at[axis] = st->words[w].loc;
        }
    }
    for (int a = 0; a < 3; a++) {
        p->periodic[a] = periodic_at[a].line > 0;
        if (p->periodic[a])
            for (int f = 0; f < p->n_fields; f++) p->bc[f][2 * a].kind = p->bc[f][2 * a + 1].kind = PJ_BC_PERIODIC;
    }
    const ast_stmt *(*given)[6] = arena_alloc(C->arena, sizeof *given * ((size_t)p->n_fields + 1));
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind != ST_ON) continue;
        int field = lower_bc_field(C, st->lhs, st->rhs, st->lhs->loc);
        int sides[6], n_sides = 0;
        for (int w = 0; w < st->n_words; w++) {
            const char *n = st->words[w].text;
            pj_loc loc = st->words[w].loc;
            if (!strcmp(n, "all")) {
                for (int s = 0; s < 2 * p->dim; s++) {
                    int dup = 0;
                    for (int q = 0; q < n_sides; q++) dup |= sides[q] == s;
                    if (p->periodic[s / 2] || dup || (s == 0 && p->axis_inner)) continue;
                    if (field >= 0 && given[field][s]) {
                        diag_error(C->d, loc, "side '%s' (in all) already has a condition for %s at line %d",
                                   mesh_side_name(p, s), sema_lookup_field_name(C, field), given[field][s]->loc.line);
                        continue;
                    }
                    sides[n_sides++] = s;
                }
                continue;
            }
            int side = mesh_side_index(C, n);
            if (side < 0) {
                const char *near = p->geometry == PJ_GEOM_CARTESIAN ? sema_closest_side(n) : NULL;
                diag_error(C->d, loc, "unknown side '%s'%s%s%s; sides are %s", n,
                           near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "", mesh_side_list(p));
                continue;
            }
            if (side == 0 && p->axis_inner) {
                diag_error(C->d, loc, "the inner side of this %s mesh is the %s (r0 = 0): it takes no condition "
                           "(nothing flows through it)", p->geometry == PJ_GEOM_CYLINDRICAL ? "cylindrical" : "spherical",
                           p->geometry == PJ_GEOM_CYLINDRICAL ? "axis" : "centre");
                continue;
            }
            if (side >= 2 * p->dim) {
                diag_error(C->d, loc, "side '%s' does not exist in a %s mesh", n, sema_dim_text(p->dim));
                continue;
            }
            if (p->periodic[side / 2]) {
                diag_error(C->d, loc, "side '%s' is periodic (periodic %c at line %d); it cannot also have a boundary condition",
                           n, "xyz"[side / 2], periodic_at[side / 2].line);
                continue;
            }
            int dup = 0;
            for (int q = 0; q < n_sides; q++) dup |= sides[q] == side;
            if (dup) {
                diag_error(C->d, loc, "side '%s' is named twice", n);
                continue;
            }
            if (field >= 0 && given[field][side]) {
                diag_error(C->d, loc, "side '%s' already has a condition for %s at line %d", n,
                           sema_lookup_field_name(C, field), given[field][side]->loc.line);
                continue;
            }
            if (n_sides < 6) sides[n_sides++] = side;
        }
        if (field < 0) continue;
        for (int q = 0; q < n_sides; q++) {
            int side = sides[q];
            if (given[field][side]) continue;
            given[field][side] = st;
            if (!p->bc_kernel[side]) {
                char name[32];
                snprintf(name, sizeof name, "bc.%s", mesh_side_name(p, side));
                p->bc_kernel[side] = need(C, kir_new(KIR_BC, p->dim, p->n_fields, p->n_params, 1, name));
                p->bc_kernel[side]->side = side;
            }
            kir_kernel *k = p->bc_kernel[side];
            C->work = 0;
            lctx x = {.k = k, .where = IN_BC, .bc_field = field, .bc_side = side};
            int a, b, c;
            if (lower_bc(C, &x, st->lhs, st->rhs, &a, &b, &c) < 0) break;
            if (a < 0) a = kir_const(k, 0);
            if (b < 0) b = kir_const(k, 0);
            if (mesh_bc_scale(p, side) != 1) b = kir_op2(k, KIR_MUL, b, kir_const(k, mesh_bc_scale(p, side)));
            if (k->nodes[a].op == KIR_CONST && k->nodes[a].value == 0 && k->nodes[b].op == KIR_CONST && k->nodes[b].value == 0) {
                diag_error(C->d, st->lhs->loc, "boundary condition has no %s or dn(%s) term",
                           sema_lookup_field_name(C, field), sema_lookup_field_name(C, field));
                break;
            }
            kir_add_output(k, 0, field, a);
            kir_add_output(k, 1, field, b);
            kir_add_output(k, 2, field, c);
            int lap_value = -1;
            if (st->lhs2) { /* on left: u = 0, lap(u) = VALUE */
                const ast_expr *l2 = st->lhs2;
                const char *fname = sema_lookup_field_name(C, field);
                if (!(l2->kind == AST_CALL && !strcmp(l2->name, "lap") && l2->n_args == 1 &&
                      l2->args[0]->kind == AST_NAME && !strcmp(l2->args[0]->name, fname))) {
                    diag_error(C->d, l2->loc, "a second boundary condition is lap(%s) = value (for fourth-order operators)",
                               fname);
                    break;
                }
                lctx x2 = {.k = k, .where = IN_BC, .bc_field = field, .bc_side = side};
                lap_value = lower_expr(C, &x2, st->rhs2);
                if (lap_value < 0) break;
                if (x2.bc_hit) {
                    diag_error(C->d, st->rhs2->loc, "the value of lap(%s) on a boundary cannot depend on the fields", fname);
                    break;
                }
                kir_add_output(k, 3, field, kir_as_f(k, lap_value));
                p->bc[field][side].lap = 1;
            }
            p->bc[field][side].kind = PJ_BC_LINEAR;
            p->bc[field][side].loc = st->loc;
            p->bc[field][side].constant = !kir_depends_on_place_or_time(k, a) && !kir_depends_on_place_or_time(k, b) &&
                                          !kir_depends_on_place_or_time(k, c) &&
                                          (lap_value < 0 || !kir_depends_on_place_or_time(k, lap_value));
        }
    }
}

/* A KIR_RHS kernel: F of every field with an eq (or one part of it, lower_eq_rhs's mode), reading
 * slot 0, written into slot 1. */
static kir_kernel *lower_rhs_part(compiler *C, pj_program *p, const ast_stmt **eqs, int mode, const char *name)
{
    kir_kernel *k = need(C, kir_new(KIR_RHS, p->dim, p->n_fields, p->n_params, 2, name));
    for (int f = 0; f < p->n_fields; f++) {
        if (!p->field_has_eq[f]) continue;
        C->work = 0; /* the inlining budget is per expression */
        lctx x = {.k = k, .where = IN_STAGE, .slot = 0};
        int v = lower_eq_rhs(C, &x, eqs[f]->rhs, mode, NULL);
        if (v < 0) {
            kir_free(k);
            return NULL;
        }
        kir_add_output(k, 1, f, kir_as_f(k, v));
    }
    return k;
}

static int lower_rhs(compiler *C, pj_program *p, const ast_stmt **eqs)
{
    if (!(p->rhs = lower_rhs_part(C, p, eqs, LOWER_ALL, "rhs"))) return -1;
    if (p->scheme != PJ_IMEX) return 0;
    if (!(p->rhs_implicit = lower_rhs_part(C, p, eqs, LOWER_IMPLICIT, "rhs.implicit"))) return -1;
    if (!(p->rhs_explicit = lower_rhs_part(C, p, eqs, LOWER_EXPLICIT, "rhs.explicit"))) return -1;
    return 0;
}

static int finish(compiler *C, kir_kernel *k)
{
    if (!k) return 0;
    kir_finish(k);
    if (k->failed) arena_fail(C->arena);
    char err[256];
    if (kir_verify(k, err, sizeof err) < 0) {
        diag_error(C->d, (pj_loc){0, 0}, "internal error: kernel %s does not verify: %s", k->name, err);
        return -1;
    }
    return 0;
}

/* ---- noise ------------------------------------------------------------------------------- */

/* Numbers every rand() and randn() call in the order of the text: the call site of its counter
 * (compiler/noise.h). Depth is bounded by the parser. */
static void number_sites(compiler *C, ast_expr *e, int *next)
{
    if (!e) return;
    if (e->kind == AST_CALL && (!strcmp(e->name, "rand") || !strcmp(e->name, "randn"))) {
        if (*next == PJ_RAND_MAX_SITES)
            diag_error(C->d, e->loc, "more than %d rand() and randn() calls in one problem", PJ_RAND_MAX_SITES);
        e->site = (*next)++;
    }
    number_sites(C, e->a, next);
    number_sites(C, e->b, next);
    number_sites(C, e->c, next);
    for (int i = 0; i < e->n_args; i++) number_sites(C, e->args[i], next);
}

static void number_rand_sites(compiler *C)
{
    int next = 0;
    for (int i = 0; i < C->ast->n_stmts; i++) {
        ast_stmt *st = C->ast->stmts[i];
        for (int j = 0; j < st->n_kwargs; j++) number_sites(C, st->kwargs[j].value, &next);
        number_sites(C, st->lhs, &next);
        number_sites(C, st->rhs, &next);
    }
}

/* --set on a const: its value, not its expression (marked evaluated). Names that are no const
 * are reported when `report`. */
static int set_consts(compiler *C, const pj_compile_options *opt, int report)
{
    for (int i = 0; opt && i < opt->n_const_sets; i++) {
        symbol *s = sema_lookup(C, opt->const_names[i]);
        if (s && s->kind == SYM_CONST) {
            s->state = 2;
            s->const_value = opt->const_values[i];
        } else if (report) {
            diag_append(C->d, "%s: error: --set %s: %s\n", C->d->filename, opt->const_names[i],
                        s ? "not a const" : "no const of that name");
            C->d->errors++;
        }
    }
    return C->d->errors ? -1 : 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int run_kir_passes(compiler *C, pj_program *p, const ast_stmt **eqs);

/* The passes, in order (see the top of the file). Returns 0, or -1 with the errors in C->d. */
static int run_passes(compiler *C, pj_program *p, const char *source, size_t len, const pj_compile_options *opt)
{
    diag *d = C->d;
    double t0 = now_ms();
    ast_program *ast = parse_program(C->arena, d, source, len);
    if (!ast || d->errors) return -1;
    C->term_faces = opt && opt->term_faces;
    if (opt && opt->redefine_line > 0 && redefine_apply(C->arena, ast, opt->redefine_line, d) < 0) return -1;
    C->ast = ast;
    C->source = source;
    C->source_len = len;

    sema_collect_symbols(C);
    if (set_consts(C, opt, 1) < 0) return -1;
    int expanded = arrays_expand(C); /* field arrays, sum, prod: ordinary fields from here on */
    if (expanded < 0) return -1;
    if (expanded) { /* the symbols again, of the expanded tree (errors already met are not repeated) */
        C->n_syms = 0;
        memset(C->n_kind, 0, sizeof C->n_kind);
        if (C->sym_index) memset(C->sym_index, 0, sizeof *C->sym_index * (size_t)C->sym_index_cap);
        sema_collect_symbols(C);
        set_consts(C, opt, 0);
    }
    if (read_mesh(C, p) < 0) return -1;
    if (energy_expand(C, ast) < 0) return -1;
    sema_check_program(C);
    if (d->errors) return -1;
    set_consts(C, opt, 0); /* again: the recursion check reused the symbols' states */
    number_rand_sites(C);
    if (d->errors) return -1;
    for (int i = 0; i < C->n_syms; i++) /* every const, used or not, must be a constant */
        if (C->syms[i].kind == SYM_CONST) {
            ast_expr name = {.kind = AST_NAME, .loc = C->syms[i].loc, .name = C->syms[i].name};
            double v;
            lower_const_value(C, &name, &v);
        }
    if (d->errors) return -1;

    build_fields_and_params(C, p);
    if (C->n_arrays) {
        p->array_names = need(C, calloc((size_t)C->n_arrays, sizeof *p->array_names));
        p->array_sizes = need(C, calloc((size_t)C->n_arrays, sizeof *p->array_sizes));
        p->n_arrays = C->n_arrays;
        for (int i = 0; i < C->n_arrays; i++) {
            p->array_names[i] = need(C, strdup(C->array_names[i]));
            p->array_sizes[i] = C->array_sizes[i];
        }
    }
    const ast_stmt **eqs = arena_alloc(C->arena, sizeof *eqs * ((size_t)p->n_fields + 1));
    read_equations(C, p, eqs);
    read_time(C, p, opt);
    check_algebraic(C, p, eqs);
    read_solver(C, p);
    check_single_values(C);
    read_output(C, p);
    read_boundaries(C, p);
    if (d->errors) return -1;
    read_monitors(C, p);
    if (d->errors || finish(C, p->reduce) < 0 || finish(C, p->stop) < 0) return -1;

    for (int a = 0; a < 3; a++) C->periodic[a] = p->periodic[a];
    if (lower_rhs(C, p, eqs) < 0 || d->errors) return -1;
    double t1 = now_ms();
    p->ms_front = t1 - t0;
    int rc = run_kir_passes(C, p, eqs);
    p->ms_kir = now_ms() - t1;
    return rc;
}

/* The kernel IR passes after the lowering: finish (folding, sharing, fused multiply-adds), the
 * check of algebraic equations under an explicit scheme, the scheme's stages and Jacobian, the
 * params' values and the halos. 0, or -1 with errors in C->d. */
static int run_kir_passes(compiler *C, pj_program *p, const ast_stmt **eqs)
{
    diag *d = C->d;
    if (finish(C, p->rhs) < 0 || finish(C, p->rhs_implicit) < 0 || finish(C, p->rhs_explicit) < 0) return -1;
    check_explicit_algebraic(C, p, eqs);
    if (d->errors) return -1;
    int lowered = scheme_lower(p);
    if (lowered == -1) arena_fail(C->arena); /* out of memory */
    if (lowered < 0) {
        diag_error(d, (pj_loc){0, 0}, "internal error: the Jacobian of the right-hand side cannot be derived");
        return -1;
    }

    finish(C, p->params_kernel);
    finish(C, p->init);
    for (int s = 0; s < 6; s++) finish(C, p->bc_kernel[s]);
    for (int s = 0; s < p->n_stages; s++)
        if (finish(C, p->stages[s].kernel) < 0) return -1;
    if (d->errors) return -1;

    kir_eval_params(p->params_kernel, p->param_values, NULL);
    p->halo = 1;
    int *h = arena_alloc(C->arena, sizeof *h * ((size_t)p->n_fields + 1));
    pj_kernel_id *ids = arena_alloc(C->arena, sizeof *ids * ((size_t)p->n_stages + 4));
    int n_ids = program_run_kernels(p, ids); /* a step's kernels, then the monitors' reduction */
    for (int i = 0; i < n_ids; i++) {
        const kir_kernel *k = program_kernel(p, ids[i]);
        if (!k) continue;
        kir_halo(k, h);
        for (int f = 0; f < p->n_fields; f++)
            if (h[f] > p->field_halo[f]) p->field_halo[f] = h[f];
    }
    for (int f = 0; f < p->n_fields; f++)
        if (p->field_halo[f] > p->halo) p->halo = p->field_halo[f];
    for (int a = 0; a < p->dim; a++)
        if (p->n[a] < p->halo)
            diag_error(d, C->mesh_loc, "the mesh has %lld cell%s along %c but the equations reach %d cells away: "
                       "give n%c >= %d", (long long)p->n[a], p->n[a] == 1 ? "" : "s", "xyz"[a], p->halo, "xyz"[a], p->halo);
    return d->errors ? -1 : 0;
}

static void report_out_of_memory(diag *d)
{
    diag_error(d, (pj_loc){0, 0}, "out of memory");
    d->out_of_memory = 1;
}

/* Out of memory anywhere in the passes (an arena allocation, a malloc through need(), a kernel
 * whose builder ran out) longjmps here: the arena and the half-built program are freed and the
 * error is "out of memory". The state lives on the heap, so nothing the handler reads is a local
 * changed after setjmp. */
pj_program *compile_problem(const char *filename, const char *source, size_t len, diag *d,
                            const pj_compile_options *opt)
{
    struct front { arena A; compiler C; pj_program *p; } *F = calloc(1, sizeof *F);
    if (F) F->p = calloc(1, sizeof *F->p);
    if (F && F->p) F->p->filename = strdup(filename ? filename : "<input>");
    if (!F || !F->p || !F->p->filename) {
        if (F) program_free(F->p);
        free(F);
        report_out_of_memory(d);
        return NULL;
    }
    F->C = (compiler){.arena = &F->A, .d = d};
    jmp_buf out_of_memory;
    F->A.on_failure = &out_of_memory;
    pj_program *result = NULL;
    if (setjmp(out_of_memory)) {
        report_out_of_memory(F->C.d);
    } else if (run_passes(&F->C, F->p, source, len, opt) == 0) {
        result = F->p;
        F->p = NULL;
    }
    arena_free(&F->A);
    program_free(F->p);
    free(F);
    return result;
}

void program_free(pj_program *p)
{
    if (!p) return;
    for (int f = 0; f < p->n_fields; f++) free(p->field_names ? p->field_names[f] : NULL);
    for (int i = 0; i < p->n_params; i++) free(p->param_names ? p->param_names[i] : NULL);
    free(p->field_names);
    free(p->field_has_eq);
    free(p->field_algebraic);
    free(p->field_halo);
    free(p->param_names);
    for (int i = 0; i < p->n_consts; i++) free(p->const_names[i]);
    free(p->const_names);
    free(p->param_values);
    free(p->bc);
    free(p->output_fields);
    kir_free(p->params_kernel);
    kir_free(p->init);
    for (int s = 0; s < 6; s++) kir_free(p->bc_kernel[s]);
    kir_free(p->rhs);
    kir_free(p->rhs_implicit);
    kir_free(p->rhs_explicit);
    program_free_jacobian(p);
    free(p->solver_linear);
    free(p->solver_pc);
    for (int i = 0; i < p->n_monitors; i++) free(p->monitor_names ? p->monitor_names[i] : NULL);
    free(p->monitor_names);
    free(p->monitor_kinds);
    for (int i = 0; i < p->n_arrays; i++) free(p->array_names ? p->array_names[i] : NULL);
    free(p->array_names);
    free(p->array_sizes);
    kir_free(p->reduce);
    kir_free(p->stop);
    free(p->stop_text);
    free(p->output_at);
    for (int s = 0; s < p->n_stages; s++) kir_free(p->stages ? p->stages[s].kernel : NULL);
    free(p->stages);
    for (int a = 0; a < 3; a++) free(p->faces[a]);
    kir_metric_unref(p->metric);
    free(p->filename);
    free(p);
}
