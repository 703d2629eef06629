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
#include "redefine.h"
#include "scheme.h"
#include "philox.h"
#include "sema.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A block the compile malloc'd: returned, or (NULL) out of memory, which jumps to
 * compile_problem's handler. Called only where every live allocation is in the arena or owned
 * by the pj_program, so the handler frees everything. */
static void *need(compiler *C, void *block)
{
    if (!block) arena_fail(C->arena);
    return block;
}

/* ---- mesh --------------------------------------------------------------------------------- */

static int read_mesh(compiler *C, pj_program *p)
{
    const ast_stmt *mesh = NULL;
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind != ST_MESH) continue;
        if (mesh) {
            diag_error(C->d, st->loc, "a second mesh (the first is at line %d)", mesh->loc.line);
            continue;
        }
        mesh = st;
    }
    if (mesh) C->mesh_loc = mesh->loc;
    if (!mesh) {
        diag_error(C->d, (pj_loc){1, 1}, "no mesh: a problem needs a line such as `mesh grid(nx = 100)`");
        return -1;
    }
    if (strcmp(mesh->name, "grid")) {
        diag_error(C->d, mesh->name_loc, "unknown mesh '%s': the mesh is grid(nx=, ny=, nz=, Lx=, ...)", mesh->name);
        return -1;
    }
    static const char *const keys[] = {"nx", "ny", "nz", "Lx", "Ly", "Lz", "x0", "y0", "z0"};
    double val[9];
    int given[9] = {0};
    pj_loc where[9];
    C->dim = 3; /* constants may use anything while the mesh is read */
    int errors = C->d->errors;
    for (int j = 0; j < mesh->n_kwargs; j++) {
        const ast_kwarg *kw = &mesh->kwargs[j];
        int key = -1;
        for (int q = 0; q < 9; q++)
            if (!strcmp(kw->name, keys[q])) key = q;
        if (key < 0) {
            const char *near = diag_closest(kw->name, keys, 9);
            if (near) diag_error(C->d, kw->loc, "unknown mesh argument '%s'; did you mean '%s'?", kw->name, near);
            else diag_error(C->d, kw->loc, "unknown mesh argument '%s' (grid takes nx ny nz Lx Ly Lz x0 y0 z0)", kw->name);
            continue;
        }
        if (given[key]) {
            diag_error(C->d, kw->loc, "mesh argument '%s' is given twice", kw->name);
            continue;
        }
        if (!kw->value) {
            diag_error(C->d, kw->loc, "mesh argument '%s' needs a value", kw->name);
            continue;
        }
        if (sema_check_expr(C, kw->value, NULL)) continue;
        lctx dummy = {0};
        (void)dummy;
        if (lower_const_value(C, kw->value, &val[key]) < 0) continue;
        given[key] = 1;
        where[key] = kw->value->loc;
    }
    if (C->d->errors > errors) return -1;
    int dim = given[2] ? 3 : given[1] ? 2 : given[0] ? 1 : 0;
    if (!given[0]) {
        diag_error(C->d, mesh->loc, "the mesh needs nx (cells along x)");
        return -1;
    }
    if (given[2] && !given[1]) {
        diag_error(C->d, mesh->loc, "a 3D mesh needs ny as well as nz");
        return -1;
    }
    p->dim = dim;
    for (int a = 0; a < 3; a++) {
        p->n[a] = 1;
        p->length[a] = 1;
        p->origin[a] = 0;
        if (a < dim) {
            double n = val[a];
            if (n != floor(n) || n < 1 || n > 1e9) {
                diag_error(C->d, where[a], "%s must be a positive whole number of cells, not %g", keys[a], n);
                continue;
            }
            p->n[a] = (int64_t)n;
            if (given[3 + a]) {
                if (!(val[3 + a] > 0) || isinf(val[3 + a])) {
                    diag_error(C->d, where[3 + a], "%s must be positive, not %g", keys[3 + a], val[3 + a]);
                    continue;
                }
                p->length[a] = val[3 + a];
            }
            if (given[6 + a]) {
                if (!isfinite(val[6 + a])) {
                    diag_error(C->d, where[6 + a], "%s must be a finite number, not %g", keys[6 + a], val[6 + a]);
                    continue;
                }
                p->origin[a] = val[6 + a];
            }
        } else {
            for (int q = 3 + a; q < 9; q += 3)
                if (given[q])
                    diag_error(C->d, where[q], "%s is given but the mesh is %s (no n%c)", keys[q], sema_dim_text(dim), "xyz"[a]);
        }
    }
    C->dim = dim;
    return C->d->errors > errors ? -1 : 0;
}

static const ast_kwarg *kwarg_named(const ast_stmt *st, const char *name)
{
    for (int j = 0; j < st->n_kwargs; j++)
        if (!strcmp(st->kwargs[j].name, name)) return &st->kwargs[j];
    return NULL;
}

static int check_kwargs(compiler *C, const ast_stmt *st, const char *what, const char *const *keys, int n)
{
    int bad = 0;
    for (int j = 0; j < st->n_kwargs; j++) {
        const ast_kwarg *kw = &st->kwargs[j];
        int known = 0;
        for (int q = 0; q < n; q++) known |= !strcmp(kw->name, keys[q]);
        if (!known) {
            const char *near = diag_closest(kw->name, keys, n);
            if (near) diag_error(C->d, kw->loc, "unknown %s setting '%s'; did you mean '%s'?", what, kw->name, near);
            else diag_error(C->d, kw->loc, "unknown %s setting '%s'", what, kw->name);
            bad = 1;
            continue;
        }
        for (int q = 0; q < j; q++)
            if (!strcmp(st->kwargs[q].name, kw->name)) {
                diag_error(C->d, kw->loc, "%s setting '%s' is given twice", what, kw->name);
                bad = 1;
            }
        if (!kw->value) {
            diag_error(C->d, kw->loc, "%s setting '%s' needs a value", what, kw->name);
            bad = 1;
        }
    }
    return bad;
}

static int const_setting(compiler *C, const ast_kwarg *kw, double *out)
{
    if (kw->n_words) {
        diag_error(C->d, kw->words[0].loc, "unexpected name '%s'", kw->words[0].text);
        return -1;
    }
    if (sema_check_expr(C, kw->value, NULL)) return -1;
    return lower_const_value(C, kw->value, out);
}

static void read_time(compiler *C, pj_program *p, const pj_compile_options *opt)
{
    p->dt = 0;
    p->until = -1;
    p->steps = -1;
    p->scheme = PJ_EULER;
    const ast_stmt *time = NULL;
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind != ST_TIME) continue;
        if (time) {
            diag_error(C->d, st->loc, "a second time statement (the first is at line %d)", time->loc.line);
            continue;
        }
        time = st;
        static const char *const keys[] = {"dt", "until", "steps", "scheme"};
        if (check_kwargs(C, st, "time", keys, 4)) continue;
        const ast_kwarg *kw;
        if ((kw = kwarg_named(st, "dt")) && const_setting(C, kw, &p->dt) == 0 && !(p->dt > 0 && isfinite(p->dt)))
            diag_error(C->d, kw->value->loc, "the time step dt must be positive, not %g", p->dt);
        if ((kw = kwarg_named(st, "until")) && const_setting(C, kw, &p->until) == 0 && !(p->until >= 0 && isfinite(p->until)))
            diag_error(C->d, kw->value->loc, "until must be a time >= 0, not %g", p->until);
        double steps;
        if ((kw = kwarg_named(st, "steps")) && const_setting(C, kw, &steps) == 0) {
            if (!(steps >= 0 && steps == floor(steps) && steps < 9e15))
                diag_error(C->d, kw->value->loc, "steps must be a whole number >= 0, not %g", steps);
            else
                p->steps = (int64_t)steps;
        }
        if (kwarg_named(st, "until") && kwarg_named(st, "steps"))
            diag_error(C->d, kwarg_named(st, "steps")->loc, "give either until or steps, not both");
        if ((kw = kwarg_named(st, "scheme"))) {
            int s = kw->value->kind == AST_NAME && !kw->n_words ? scheme_from_name(kw->value->name) : -1;
            if (s < 0) {
                const char *text = kw->value->kind == AST_NAME ? kw->value->name : "?";
                static const char *const schemes[] = {"euler", "rk2", "rk3", "rk4"};
                const char *near = diag_closest(text, schemes, 4);
                diag_error(C->d, kw->value->loc, "unknown scheme '%s'%s%s%s; schemes are euler, rk2, rk3, rk4", text,
                           near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
            } else {
                p->scheme = (pj_scheme)s;
            }
        }
    }
    if (opt && opt->scheme_set) p->scheme = opt->scheme;
}

static void read_output(compiler *C, pj_program *p)
{
    p->output_every = 0;
    p->output_formats = 0;
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind != ST_OUTPUT) continue;
        p->has_output = 1;
        static const char *const keys[] = {"every", "format", "fields"};
        if (check_kwargs(C, st, "output", keys, 3)) continue;
        const ast_kwarg *kw;
        if ((kw = kwarg_named(st, "every")) && const_setting(C, kw, &p->output_every) == 0 &&
            !(p->output_every > 0 && isfinite(p->output_every)))
            diag_error(C->d, kw->value->loc, "output every must be a positive time, not %g", p->output_every);
        if ((kw = kwarg_named(st, "format"))) {
            for (int w = -1; w < kw->n_words; w++) {
                const char *name = w < 0 ? (kw->value->kind == AST_NAME ? kw->value->name : NULL) : kw->words[w].text;
                pj_loc loc = w < 0 ? kw->value->loc : kw->words[w].loc;
                if (name && !strcmp(name, "csv")) p->output_formats |= PJ_FMT_CSV;
                else if (name && !strcmp(name, "vtk")) p->output_formats |= PJ_FMT_VTK;
                else if (name && !strcmp(name, "png")) p->output_formats |= PJ_FMT_PNG;
                else diag_error(C->d, loc, "unknown output format%s%s; formats are csv, vtk, png", name ? " " : "", name ? name : "");
            }
        }
        if ((kw = kwarg_named(st, "fields"))) {
            free(p->output_fields); /* a second output statement's list replaces the first */
            p->output_fields = need(C, malloc(sizeof(int) * (size_t)(kw->n_words + 1)));
            p->n_output_fields = 0;
            for (int w = -1; w < kw->n_words; w++) {
                const char *name = w < 0 ? (kw->value->kind == AST_NAME ? kw->value->name : NULL) : kw->words[w].text;
                pj_loc loc = w < 0 ? kw->value->loc : kw->words[w].loc;
                symbol *s = name ? sema_lookup(C, name) : NULL;
                int twice = 0;
                for (int q = 0; s && q < p->n_output_fields; q++) twice |= p->output_fields[q] == s->index;
                if (!s || s->kind != SYM_FIELD) diag_error(C->d, loc, "output fields: '%s' is not a field", name ? name : "?");
                else if (twice) diag_error(C->d, loc, "output fields: '%s' is listed twice", name);
                else p->output_fields[p->n_output_fields++] = s->index;
            }
        }
    }
    if (!p->output_formats) p->output_formats = PJ_FMT_CSV;
    if (!p->output_fields) {
        p->output_fields = need(C, malloc(sizeof(int) * (size_t)(p->n_fields + 1)));
        for (int f = 0; f < p->n_fields; f++) p->output_fields[f] = f;
        p->n_output_fields = p->n_fields;
    }
}

static void build_fields_and_params(compiler *C, pj_program *p)
{
    p->n_fields = sema_count_kind(C, SYM_FIELD);
    p->n_params = sema_count_kind(C, SYM_PARAM);
    p->field_names = need(C, calloc((size_t)p->n_fields + 1, sizeof *p->field_names));
    p->field_has_eq = need(C, calloc((size_t)p->n_fields + 1, sizeof *p->field_has_eq));
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

static void read_equations(compiler *C, pj_program *p, const ast_stmt **eqs)
{
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind != ST_EQ) continue;
        if (strcmp(st->eq_op, "dt")) {
            diag_error(C->d, st->eq_op_loc, "an equation reads `eq dt(%s) = ...`, not %s(%s)", st->name, st->eq_op, st->name);
            continue;
        }
        symbol *s = sema_lookup(C, st->name);
        if (!s) {
            diag_error(C->d, st->name_loc, "eq for '%s', which is not defined (declare it: field %s = ...)", st->name, st->name);
            continue;
        }
        if (s->kind != SYM_FIELD) {
            diag_error(C->d, st->name_loc, "eq for '%s', which is a %s, not a field", st->name, sema_kind_text(s->kind));
            continue;
        }
        if (eqs[s->index]) {
            diag_error(C->d, st->name_loc, "field '%s' already has an equation at line %d", st->name, eqs[s->index]->loc.line);
            continue;
        }
        eqs[s->index] = st;
        p->field_has_eq[s->index] = 1;
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
                    if (p->periodic[s / 2] || dup) continue;
                    if (field >= 0 && given[field][s]) {
                        diag_error(C->d, loc, "side '%s' (in all) already has a condition for %s at line %d",
                                   sema_side_name(s), sema_lookup_field_name(C, field), given[field][s]->loc.line);
                        continue;
                    }
                    sides[n_sides++] = s;
                }
                continue;
            }
            int side = sema_side_index(n);
            if (side < 0) {
                const char *near = sema_closest_side(n);
                diag_error(C->d, loc, "unknown side '%s'%s%s%s; sides are left, right, bottom, top, back, front, all", n,
                           near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
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
                snprintf(name, sizeof name, "bc.%s", sema_side_name(side));
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
            if (k->nodes[a].op == KIR_CONST && k->nodes[a].value == 0 && k->nodes[b].op == KIR_CONST && k->nodes[b].value == 0) {
                diag_error(C->d, st->lhs->loc, "boundary condition has no %s or dn(%s) term",
                           sema_lookup_field_name(C, field), sema_lookup_field_name(C, field));
                break;
            }
            kir_add_output(k, 0, field, a);
            kir_add_output(k, 1, field, b);
            kir_add_output(k, 2, field, c);
            p->bc[field][side].kind = PJ_BC_LINEAR;
            p->bc[field][side].loc = st->loc;
            p->bc[field][side].constant = !kir_depends_on_place_or_time(k, a) && !kir_depends_on_place_or_time(k, b) &&
                                          !kir_depends_on_place_or_time(k, c);
        }
    }
}

/* The KIR_RHS kernel: F of every field with an eq, reading slot 0, written into slot 1. */
static int lower_rhs(compiler *C, pj_program *p, const ast_stmt **eqs)
{
    kir_kernel *k = p->rhs = need(C, kir_new(KIR_RHS, p->dim, p->n_fields, p->n_params, 2, "rhs"));
    for (int f = 0; f < p->n_fields; f++) {
        if (!p->field_has_eq[f]) continue;
        C->work = 0; /* the inlining budget is per expression */
        lctx x = {.k = k, .where = IN_STAGE, .slot = 0};
        int v = lower_expr(C, &x, eqs[f]->rhs);
        if (v < 0) return -1;
        kir_add_output(k, 1, f, kir_as_f(k, v));
    }
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
 * (compiler/philox.h). Depth is bounded by the parser. */
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

/* The passes, in order (see the top of the file). Returns 0, or -1 with the errors in C->d. */
static int run_passes(compiler *C, pj_program *p, const char *source, size_t len, const pj_compile_options *opt)
{
    diag *d = C->d;
    ast_program *ast = parse_program(C->arena, d, source, len);
    if (!ast || d->errors) return -1;
    if (opt && opt->redefine_line > 0 && redefine_apply(C->arena, ast, opt->redefine_line, d) < 0) return -1;
    C->ast = ast;

    sema_collect_symbols(C);
    if (set_consts(C, opt, 1) < 0) return -1;
    if (read_mesh(C, p) < 0) return -1;
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
    const ast_stmt **eqs = arena_alloc(C->arena, sizeof *eqs * ((size_t)p->n_fields + 1));
    read_equations(C, p, eqs);
    read_time(C, p, opt);
    read_output(C, p);
    read_boundaries(C, p);
    if (d->errors) return -1;

    for (int a = 0; a < 3; a++) C->periodic[a] = p->periodic[a];
    if (lower_rhs(C, p, eqs) < 0 || d->errors || finish(C, p->rhs) < 0) return -1;
    if (scheme_lower(p) < 0) arena_fail(C->arena); /* out of memory */

    finish(C, p->params_kernel);
    finish(C, p->init);
    for (int s = 0; s < 6; s++) finish(C, p->bc_kernel[s]);
    for (int s = 0; s < p->n_stages; s++)
        if (finish(C, p->stages[s].kernel) < 0) return -1;
    if (d->errors) return -1;

    for (int i = 0; i < p->params_kernel->n_outputs; i++) {
        const kir_output *o = &p->params_kernel->outputs[i];
        p->param_values[o->field] = kir_eval_uniform(p->params_kernel, o->node, p->param_values, 0);
    }
    p->halo = 1;
    int *h = arena_alloc(C->arena, sizeof *h * ((size_t)p->n_fields + 1));
    for (int s = 0; s < p->n_stages; s++) {
        kir_halo(p->stages[s].kernel, h);
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
    for (int s = 0; s < p->n_stages; s++) kir_free(p->stages ? p->stages[s].kernel : NULL);
    free(p->stages);
    free(p->filename);
    free(p);
}
