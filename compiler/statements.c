/* statements.c — the front end's readers of the settings statements: mesh, time, solver and
 * output (their keyword arguments checked against each statement's keys, constant settings
 * evaluated), for compile_problem (frontend.c); the mesh statement is mesh.c's. */
#include "statements.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "scheme.h"

/* A block the compile malloc'd, or out of memory: compile_problem's handler (frontend.c's need). */
static void *statements_need(compiler *C, void *block)
{
    if (!block) arena_fail(C->arena);
    return block;
}

int stmt_single(compiler *C, const ast_stmt *st, ast_stmt_kind kind, const char *what, const ast_stmt **first)
{
    if (st->kind != kind) return 0;
    if (*first) {
        diag_error(C->d, st->loc, "a second %s (the first is at line %d)", what, (*first)->loc.line);
        return 0;
    }
    *first = st;
    return 1;
}

const ast_kwarg *stmt_kwarg_named(const ast_stmt *st, const char *name)
{
    for (int j = 0; j < st->n_kwargs; j++)
        if (!strcmp(st->kwargs[j].name, name)) return &st->kwargs[j];
    return NULL;
}

int stmt_check_kwargs(compiler *C, const ast_stmt *st, const char *what, const char *const *keys, int n)
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

int stmt_const_setting(compiler *C, const ast_kwarg *kw, double *out)
{
    if (kw->n_words) {
        diag_error(C->d, kw->words[0].loc, "unexpected name '%s'", kw->words[0].text);
        return -1;
    }
    if (sema_check_expr(C, kw->value, NULL)) return -1;
    return lower_const_value(C, kw->value, out);
}

void read_time(compiler *C, pj_program *p, const pj_compile_options *opt)
{
    p->dt = 0;
    p->until = -1;
    p->steps = -1;
    p->scheme = PJ_EULER;
    const ast_stmt *time = NULL, *steady = NULL;
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind == ST_STEADY) {
            if (steady) diag_error(C->d, st->loc, "a second steady statement (the first is at line %d)", steady->loc.line);
            else if (time) diag_error(C->d, st->loc, "steady replaces the time statement (at line %d): give one of them", time->loc.line);
            steady = st;
            continue;
        }
        if (!stmt_single(C, st, ST_TIME, "time statement", &time)) continue;
        if (steady) diag_error(C->d, st->loc, "steady (at line %d) replaces the time statement: give one of them", steady->loc.line);
        static const char *const keys[] = {"dt", "until", "steps", "scheme", "adapt"};
        if (stmt_check_kwargs(C, st, "time", keys, 5)) continue;
        const ast_kwarg *kw;
        if ((kw = stmt_kwarg_named(st, "dt")) && stmt_const_setting(C, kw, &p->dt) == 0 && !(p->dt > 0 && isfinite(p->dt)))
            diag_error(C->d, kw->value->loc, "the time step dt must be positive, not %g", p->dt);
        if ((kw = stmt_kwarg_named(st, "until")) && stmt_const_setting(C, kw, &p->until) == 0 && !(p->until >= 0 && isfinite(p->until)))
            diag_error(C->d, kw->value->loc, "until must be a time >= 0, not %g", p->until);
        double steps;
        if ((kw = stmt_kwarg_named(st, "steps")) && stmt_const_setting(C, kw, &steps) == 0) {
            if (!(steps >= 0 && steps == floor(steps) && steps < 9e15))
                diag_error(C->d, kw->value->loc, "steps must be a whole number >= 0, not %g", steps);
            else
                p->steps = (int64_t)steps;
        }
        if (stmt_kwarg_named(st, "until") && stmt_kwarg_named(st, "steps"))
            diag_error(C->d, stmt_kwarg_named(st, "steps")->loc, "give either until or steps, not both");
        if ((kw = stmt_kwarg_named(st, "scheme"))) {
            int s = kw->value->kind == AST_NAME && !kw->n_words ? scheme_from_name(kw->value->name) : -1;
            if (s < 0 || s == PJ_STEADY) {
                const char *text = kw->value->kind == AST_NAME ? kw->value->name : "?";
                static const char *const schemes[] = {"euler", "rk2", "rk3", "rk4", "rk23", "rk45", "beuler", "cn", "bdf2", "imex"};
                const char *near = s == PJ_STEADY ? NULL : diag_closest(text, schemes, 10);
                diag_error(C->d, kw->value->loc, "unknown scheme '%s'%s%s%s; schemes are euler, rk2, rk3, rk4, rk23, rk45, beuler, cn, bdf2, imex%s",
                           text, near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "",
                           s == PJ_STEADY ? " (steady is a statement of its own, in place of time)" : "");
            } else {
                p->scheme = (pj_scheme)s;
            }
        }
        if ((kw = stmt_kwarg_named(st, "adapt")) && stmt_const_setting(C, kw, &p->adapt) == 0) {
            if (!(p->adapt > 0 && p->adapt < 1)) {
                diag_error(C->d, kw->value->loc, "adapt is a relative tolerance between 0 and 1, not %g", p->adapt);
                p->adapt = 0;
            }
        }
    }
    if (opt && opt->scheme_set) p->scheme = opt->scheme;
    /* adapt takes a scheme with an error estimate: the embedded pairs or an implicit scheme (the
       scheme given for the run instead of the file's, when there is one) */
    const ast_kwarg *adapt_kw = time && !steady ? stmt_kwarg_named(time, "adapt") : NULL;
    if (adapt_kw && p->adapt > 0 && !PJ_SCHEME_IMPLICIT(p->scheme) && !PJ_SCHEME_EMBEDDED(p->scheme)) {
        if (opt && opt->scheme_set) {
            char tol[32];
            diag_append(C->d, "%s: error: the scheme %s given for this run has no error estimate for the file's adapt = %s "
                        "(line %d): adapt needs rk23 or rk45 (or an implicit scheme: beuler, cn, bdf2, imex)\n",
                        C->d->filename, scheme_name(p->scheme), diag_number(tol, sizeof tol, p->adapt), adapt_kw->loc.line);
            C->d->errors++;
        } else {
            diag_error(C->d, adapt_kw->loc, "adapt needs a scheme with an error estimate: rk23 or rk45 (or an implicit "
                       "one: beuler, cn, bdf2, imex); %s has none", scheme_name(p->scheme));
        }
    }
    if (steady) {
        p->scheme = PJ_STEADY;
        p->dt = 1;     /* one "step": the Newton solve */
        p->steps = 1;
        p->until = -1;
    }
}

/* solver rtol = 1e-10, atol = ..., max_it = 50, linear = gmres, pc = mg */
void read_solver(compiler *C, pj_program *p)
{
    const ast_stmt *seen = NULL;
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (!stmt_single(C, st, ST_SOLVER, "solver statement", &seen)) continue;
        static const char *const keys[] = {"rtol", "atol", "max_it", "linear", "pc"};
        if (stmt_check_kwargs(C, st, "solver", keys, 5)) continue;
        const ast_kwarg *kw;
        if ((kw = stmt_kwarg_named(st, "rtol")) && stmt_const_setting(C, kw, &p->solver_rtol) == 0 &&
            !(p->solver_rtol > 0 && p->solver_rtol < 1))
            diag_error(C->d, kw->value->loc, "rtol is a relative tolerance between 0 and 1, not %g", p->solver_rtol);
        if ((kw = stmt_kwarg_named(st, "atol")) && stmt_const_setting(C, kw, &p->solver_atol) == 0 &&
            !(p->solver_atol > 0 && isfinite(p->solver_atol)))
            diag_error(C->d, kw->value->loc, "atol must be positive, not %g", p->solver_atol);
        double it;
        if ((kw = stmt_kwarg_named(st, "max_it")) && stmt_const_setting(C, kw, &it) == 0) {
            if (!(it >= 1 && it == floor(it) && it < 1e9)) diag_error(C->d, kw->value->loc, "max_it must be a whole number >= 1, not %g", it);
            else p->solver_max_it = (int)it;
        }
        static const char *const linear[] = {"gmres", "cg", "bicg", "bcgs", "preonly", "fgmres", "minres"};
        static const char *const pcs[] = {"mg", "gamg", "hypre", "ilu", "lu", "jacobi", "sor", "none", "icc", "cholesky"};
        for (int which = 0; which < 2; which++) {
            const char *key = which ? "pc" : "linear";
            const char *const *names = which ? pcs : linear;
            int n = which ? 10 : 7;
            if (!(kw = stmt_kwarg_named(st, key))) continue;
            const char *v = kw->value->kind == AST_NAME && !kw->n_words ? kw->value->name : NULL;
            int ok = 0;
            for (int q = 0; v && q < n; q++) ok |= !strcmp(v, names[q]);
            if (!ok) {
                const char *near = v ? diag_closest(v, names, n) : NULL;
                diag_error(C->d, kw->value->loc, "unknown %s '%s'%s%s%s; %s", which ? "preconditioner" : "linear solver",
                           v ? v : "?", near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "",
                           which ? "pc is one of mg, gamg, hypre, ilu, lu, jacobi, sor, none, icc, cholesky"
                                 : "linear is one of gmres, cg, bicg, bcgs, preonly, fgmres, minres");
                continue;
            }
            char **dst = which ? &p->solver_pc : &p->solver_linear;
            free(*dst);
            *dst = statements_need(C, strdup(v));
        }
    }
    if (seen && !PJ_SCHEME_IMPLICIT(p->scheme))
        diag_error(C->d, seen->loc, "the solver statement needs an implicit scheme (beuler, cn, bdf2, imex) or steady; "
                   "this problem steps explicitly with %s", scheme_name(p->scheme));
}

/* `slice = AXIS[, AT]` of an output statement: the plane of a 3D field its PNG frames show. */
static void read_output_slice(compiler *C, const ast_kwarg *kw, pj_program *p)
{
    static const char *const axes[] = {"x", "y", "z"};
    const char *v = kw->value && kw->value->kind == AST_NAME ? kw->value->name : NULL;
    int axis = -1;
    for (int a = 0; v && a < 3; a++)
        if (!strcmp(v, axes[a])) axis = a;
    if (axis < 0) {
        if (v) diag_error(C->d, kw->value->loc, "output slice: the axis is x, y or z, not '%s'", v);
        else diag_error(C->d, kw->value ? kw->value->loc : kw->loc, "output slice: the axis is x, y or z (slice = z, "
                        "or slice = z, 0.5 for the plane through z = 0.5)");
        return;
    }
    if (kw->n_more > 1) {
        diag_error(C->d, kw->more[1]->loc, "output slice takes an axis and at most one position: slice = %s, AT", v);
        return;
    }
    if (p->dim != 3) {
        diag_error(C->d, kw->loc, "output slice needs a 3D mesh; this one is %dD, and its pictures show every cell", p->dim);
        return;
    }
    int64_t index = p->n[axis] / 2;
    double at;
    if (kw->n_more == 1) {
        if (sema_check_expr(C, kw->more[0], NULL) || lower_const_value(C, kw->more[0], &at) < 0) return;
        double lo = p->origin[axis], hi = lo + p->length[axis];
        char a[32], b[32], c[32];
        if (!(at >= lo && at <= hi)) {
            diag_error(C->d, kw->more[0]->loc, "output slice: %s = %s is outside the mesh, which spans %s to %s along %s",
                       v, diag_number(a, sizeof a, at), diag_number(b, sizeof b, lo), diag_number(c, sizeof c, hi), v);
            return;
        }
        index = (int64_t)floor((at - lo) / p->length[axis] * (double)p->n[axis]);
        if (p->faces[axis]) /* listed or stretched widths: the cell between whose faces AT lies */
            for (index = 0; index + 1 < p->n[axis] && p->faces[axis][index + 1] <= at; index++) {}
        if (index >= p->n[axis]) index = p->n[axis] - 1; /* at the far end: the last plane */
    }
    p->output_slice = axis + 1;
    p->output_slice_index = index;
}

/* `range = LO, HI`, `colormap = NAME` and `slice = AXIS[, AT]` of an output statement: the PNG
 * frames' scale and plane. */
static void read_output_picture(compiler *C, const ast_stmt *st, pj_program *p)
{
    const ast_kwarg *kw;
    if ((kw = stmt_kwarg_named(st, "slice"))) read_output_slice(C, kw, p);
    if ((kw = stmt_kwarg_named(st, "range"))) {
        double v[2];
        if (kw->n_more != 1)
            diag_error(C->d, kw->n_more ? kw->more[1]->loc : kw->value->loc, "output range takes two values: range = LO, HI");
        else if (stmt_const_setting(C, kw, &v[0]) == 0 && sema_check_expr(C, kw->more[0], NULL) == 0 &&
                 lower_const_value(C, kw->more[0], &v[1]) == 0) {
            char a[32], b[32];
            if (!isfinite(v[0]) || !isfinite(v[1]) || !(v[0] < v[1]))
                diag_error(C->d, kw->value->loc, "output range: LO must be below HI (both finite), not %s, %s",
                           diag_number(a, sizeof a, v[0]), diag_number(b, sizeof b, v[1]));
            else {
                p->has_output_range = 1;
                p->output_range[0] = v[0];
                p->output_range[1] = v[1];
            }
        }
    }
    if ((kw = stmt_kwarg_named(st, "colormap"))) {
        static const char *const names[] = PJ_CMAP_NAMES;
        const char *v = kw->value && kw->value->kind == AST_NAME ? kw->value->name : NULL;
        int found = -1;
        for (int q = 0; v && q < PJ_N_CMAPS; q++)
            if (!strcmp(v, names[q])) found = q;
        if (found >= 0) p->output_colormap = found;
        else {
            const char *near = v ? diag_closest(v, names, PJ_N_CMAPS) : NULL;
            diag_error(C->d, kw->value ? kw->value->loc : kw->loc, "unknown colormap '%s'%s%s%s; colormaps are viridis, "
                       "magma, gray, coolwarm", v ? v : "?", near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
        }
    }
}

void read_output(compiler *C, pj_program *p)
{
    p->output_every = 0;
    p->output_formats = 0;
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind != ST_OUTPUT) continue;
        p->has_output = 1;
        static const char *const keys[] = {"every", "at", "format", "fields", "range", "colormap", "slice"};
        if (stmt_check_kwargs(C, st, "output", keys, 7)) continue;
        const ast_kwarg *kw;
        if ((kw = stmt_kwarg_named(st, "at"))) {
            if (stmt_kwarg_named(st, "every")) {
                diag_error(C->d, kw->loc, "give either output every or output at, not both");
                continue;
            }
            free(p->output_at); /* a second output statement's times replace the first's */
            p->output_at = statements_need(C, malloc(sizeof *p->output_at * (size_t)(kw->n_more + 1)));
            p->n_output_at = 0;
            pj_loc *locs = statements_need(C, malloc(sizeof *locs * (size_t)(kw->n_more + 1)));
            for (int v = -1; v < kw->n_more && locs; v++) {
                ast_expr *e = v < 0 ? kw->value : kw->more[v];
                double t;
                if (v < 0 ? stmt_const_setting(C, kw, &t) < 0 : (sema_check_expr(C, e, NULL) || lower_const_value(C, e, &t) < 0))
                    continue;
                if (!(t >= 0 && isfinite(t)))
                    diag_error(C->d, e->loc, "an output time must be >= 0, not %g", t);
                else if (p->n_output_at && !(t > p->output_at[p->n_output_at - 1]))
                    diag_error(C->d, e->loc, "output times must increase: %g comes after %g", t, p->output_at[p->n_output_at - 1]);
                else {
                    locs[p->n_output_at] = e->loc;
                    p->output_at[p->n_output_at++] = t;
                }
            }
            /* the run lands on a time within 1e-12*max(1, |end|) of it (driver.c): times closer than
               that to each other, or to the start, would be one snapshot. The end as the file gives
               it, else the last time listed (a longer --until is checked again before the run) */
            double end = p->until >= 0 ? p->until : p->steps >= 0 && p->dt > 0 ? (double)p->steps * p->dt : 0;
            if (p->n_output_at && p->output_at[p->n_output_at - 1] > end) end = p->output_at[p->n_output_at - 1];
            const double tol = 1e-12 * fmax(1, end);
            int kept = 0;
            for (int k = 0; k < p->n_output_at && locs; k++) {
                double t = p->output_at[k], prev = kept ? p->output_at[kept - 1] : 0;
                char a[32], b[32];
                if (t > 0 && t - prev <= tol)
                    diag_error(C->d, locs[k], "output time %s is within %g of %s%s, the tolerance a run lands on a time "
                               "with: the two would be one snapshot", diag_number(a, sizeof a, t), tol,
                               kept ? "" : "the start t = ", diag_number(b, sizeof b, prev));
                else p->output_at[kept++] = t;
            }
            p->n_output_at = kept;
            free(locs);
            p->output_every = 0;
        }
        if ((kw = stmt_kwarg_named(st, "every")) && stmt_const_setting(C, kw, &p->output_every) == 0 &&
            !(p->output_every > 0 && isfinite(p->output_every)))
            diag_error(C->d, kw->value->loc, "output every must be a positive time, not %g", p->output_every);
        if ((kw = stmt_kwarg_named(st, "format"))) {
            for (int w = -1; w < kw->n_words; w++) {
                const char *name = w < 0 ? (kw->value->kind == AST_NAME ? kw->value->name : NULL) : kw->words[w].text;
                pj_loc loc = w < 0 ? kw->value->loc : kw->words[w].loc;
                if (name && !strcmp(name, "csv")) p->output_formats |= PJ_FMT_CSV;
                else if (name && !strcmp(name, "vtk")) p->output_formats |= PJ_FMT_VTK;
                else if (name && !strcmp(name, "png")) p->output_formats |= PJ_FMT_PNG;
                else diag_error(C->d, loc, "unknown output format%s%s; formats are csv, vtk, png", name ? " " : "", name ? name : "");
            }
        }
        read_output_picture(C, st, p);
        if ((kw = stmt_kwarg_named(st, "fields"))) {
            free(p->output_fields); /* a second output statement's list replaces the first */
            p->output_fields = statements_need(C, malloc(sizeof(int) * (size_t)(kw->n_words + 1)));
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
        p->output_fields = statements_need(C, malloc(sizeof(int) * (size_t)(p->n_fields + 1)));
        for (int f = 0; f < p->n_fields; f++) p->output_fields[f] = f;
        p->n_output_fields = p->n_fields;
    }
}
