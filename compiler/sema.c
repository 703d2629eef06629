/* sema.c — compile_problem(): names, checks and the assembly of a pj_program.
 *
 *   parse_program        text -> AST                                    (grammar/)
 *   collect_symbols      fields, params, consts, funcs, fluxes; duplicates
 *   read_mesh            the grid and its dimension (every later check needs it)
 *   sema_check_expr      names, arities, axes of every expression written
 *   check_recursion      funcs and fluxes calling themselves through others
 *   build_*              params, initial values, time, output, boundaries
 *   scheme_lower         the stage kernels, lowering each eq's right-hand side (lower.c)
 *   kir_finish + kir_verify on every kernel
 */
#include "sema.h"
#include "scheme.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the built-in vocabulary -------------------------------------------------------------- */

typedef struct builtin_fn { const char *name; int min_args, max_args; } builtin_fn;
/* The functions the lowering expands itself; every plain math op is one more, with its name and
 * arity from the op table (kir_ops.h). */
static const builtin_fn special_fns[] = {
    {"min", 2, 2}, {"max", 2, 2}, {"sign", 1, 1}, {"heaviside", 1, 1},
    {"div", 1, 1}, {"grad", 1, 1}, {"lap", 1, 1}, {"L", 1, 1}, {"R", 1, 1}, {"LL", 1, 1},
    {"RR", 1, 1}, {"harm", 1, 1}, {"upwind", 2, 2}, {"normal", 1, 3}, {"dn", 1, 1}, {"dt", 1, 1},
};
#define N_SPECIAL_FNS ((int)(sizeof special_fns / sizeof *special_fns))
static const char *const builtin_names[] = {"x", "y", "z", "t", "dx", "dy", "dz", "pi", "e"};
#define N_BUILTIN_NAMES ((int)(sizeof builtin_names / sizeof *builtin_names))
static const char *const side_names[] = {"left", "right", "bottom", "top", "back", "front"};

/* Fills *fn (when not NULL) and returns 1 when `name` is a built-in function. */
static int find_builtin_fn(const char *name, builtin_fn *fn)
{
    builtin_fn found = {NULL, 0, 0};
    for (int op = 0; op < KIR_N_OPS && !found.name; op++)
        if (kir_ops[op].user && !strcmp(kir_ops[op].user, name))
            found = (builtin_fn){kir_ops[op].user, kir_ops[op].arity, kir_ops[op].arity};
    for (int i = 0; i < N_SPECIAL_FNS && !found.name; i++)
        if (!strcmp(special_fns[i].name, name)) found = special_fns[i];
    if (found.name && fn) *fn = found;
    return found.name != NULL;
}

int sema_is_builtin_function(const char *name) { return find_builtin_fn(name, NULL); }

static int builtin_name_index(const char *name)
{
    for (int i = 0; i < N_BUILTIN_NAMES; i++)
        if (!strcmp(builtin_names[i], name)) return i;
    return -1;
}

/* ---- symbols ------------------------------------------------------------------------------ */

symbol *sema_lookup(compiler *C, const char *name)
{
    for (int i = 0; i < C->n_syms; i++)
        if (!strcmp(C->syms[i].name, name)) return &C->syms[i];
    return NULL;
}

const char *sema_lookup_field_name(compiler *C, int field)
{
    for (int i = 0; i < C->n_syms; i++)
        if (C->syms[i].kind == SYM_FIELD && C->syms[i].index == field) return C->syms[i].name;
    return "?";
}

static const char *kind_text(sym_kind k)
{
    static const char *t[] = {"field", "param", "const", "func", "flux"};
    return t[k];
}

static int count_kind(compiler *C, sym_kind kind)
{
    int n = 0;
    for (int i = 0; i < C->n_syms; i++) n += C->syms[i].kind == kind;
    return n;
}

static void add_symbol(compiler *C, const char *name, sym_kind kind, pj_loc loc, const ast_stmt *st,
                       ast_expr *value)
{
    symbol *old = sema_lookup(C, name);
    if (old) {
        diag_error(C->d, loc, "'%s' is already defined as a %s at line %d", name, kind_text(old->kind), old->loc.line);
        return;
    }
    if (builtin_name_index(name) >= 0 || find_builtin_fn(name, NULL) ||
        !strcmp(name, "all") ) {
        diag_error(C->d, loc, "'%s' is a built-in name and cannot be redefined", name);
        return;
    }
    if (C->n_syms == C->cap_syms) {
        int cap = C->cap_syms ? 2 * C->cap_syms : 16;
        C->syms = arena_grow(C->arena, C->syms, sizeof *C->syms * (size_t)C->cap_syms, sizeof *C->syms * (size_t)cap);
        C->cap_syms = cap;
    }
    symbol *s = &C->syms[C->n_syms];
    *s = (symbol){.name = name, .kind = kind, .loc = loc, .stmt = st, .value = value};
    s->index = kind == SYM_FIELD || kind == SYM_PARAM ? count_kind(C, kind) : -1;
    s->value_loc = value ? value->loc : loc;
    C->n_syms++;
}

static void collect_symbols(compiler *C)
{
    const ast_program *P = C->ast;
    for (int i = 0; i < P->n_stmts; i++) {
        const ast_stmt *st = P->stmts[i];
        switch (st->kind) {
        case ST_PARAM: case ST_CONST: case ST_FIELD: {
            sym_kind kind = st->kind == ST_PARAM ? SYM_PARAM : st->kind == ST_CONST ? SYM_CONST : SYM_FIELD;
            for (int j = 0; j < st->n_kwargs; j++) {
                const ast_kwarg *kw = &st->kwargs[j];
                if (kind != SYM_FIELD && !kw->value) {
                    diag_error(C->d, kw->loc, "%s '%s' needs a value: %s %s = ...", kind_text(kind), kw->name,
                               kind_text(kind), kw->name);
                    continue;
                }
                if (kw->n_words) {
                    diag_error(C->d, kw->words[0].loc, "unexpected name '%s' (separate definitions with commas)", kw->words[0].text);
                    continue;
                }
                add_symbol(C, kw->name, kind, kw->loc, st, kw->value);
            }
            break;
        }
        case ST_FUNC: case ST_FLUX:
            for (int a = 0; a < st->n_words; a++)
                for (int b = 0; b < a; b++)
                    if (!strcmp(st->words[a].text, st->words[b].text))
                        diag_error(C->d, st->words[a].loc, "duplicate argument '%s' in %s '%s'", st->words[a].text,
                                   st->kind == ST_FUNC ? "func" : "flux", st->name);
            add_symbol(C, st->name, st->kind == ST_FUNC ? SYM_FUNC : SYM_FLUX, st->name_loc, st, st->rhs);
            break;
        default:
            break;
        }
    }
}

/* The names a misspelling may have meant: symbols, arguments, built-ins. */
static const char *suggest(compiler *C, const char *name, const ast_stmt *def, int functions)
{
    const char *cand[512];
    int n = 0;
    for (int i = 0; i < C->n_syms && n < 400; i++)
        if (((C->syms[i].kind == SYM_FUNC || C->syms[i].kind == SYM_FLUX) != 0) == (functions != 0))
            cand[n++] = C->syms[i].name;
    if (functions) {
        for (int op = 0; op < KIR_N_OPS && n < 500; op++)
            if (kir_ops[op].user) cand[n++] = kir_ops[op].user;
        for (int i = 0; i < N_SPECIAL_FNS && n < 500; i++) cand[n++] = special_fns[i].name;
    } else {
        for (int i = 0; i < N_BUILTIN_NAMES && n < 500; i++) cand[n++] = builtin_names[i];
        for (int i = 0; def && i < def->n_words && n < 510; i++) cand[n++] = def->words[i].text;
    }
    return diag_closest(name, cand, n);
}

static int is_arg(const ast_stmt *def, const char *name)
{
    for (int i = 0; def && i < def->n_words; i++)
        if (!strcmp(def->words[i].text, name)) return 1;
    return 0;
}

static const char *dim_text(int dim) { return dim == 1 ? "1D" : dim == 2 ? "2D" : "3D"; }

int sema_check_expr(compiler *C, const ast_expr *e, const ast_stmt *def)
{
    if (!e) return 0;
    int before = C->d->errors;
    switch (e->kind) {
    case AST_NUM:
        break;
    case AST_NAME: {
        if (is_arg(def, e->name)) break;
        symbol *s = sema_lookup(C, e->name);
        if (s) {
            if (s->kind == SYM_FUNC || s->kind == SYM_FLUX)
                diag_error(C->d, e->loc, "'%s' is a %s: call it as %s(...)", e->name, kind_text(s->kind), e->name);
            break;
        }
        int b = builtin_name_index(e->name);
        if (b >= 0) {
            int axis = b <= 2 ? b : (b >= 4 && b <= 6) ? b - 4 : -1;
            if (axis >= C->dim)
                diag_error(C->d, e->loc, "'%s' does not exist in a %s mesh", e->name, dim_text(C->dim));
            break;
        }
        if (find_builtin_fn(e->name, NULL)) {
            diag_error(C->d, e->loc, "'%s' is a function: call it as %s(...)", e->name, e->name);
            break;
        }
        const char *near = suggest(C, e->name, def, 0);
        if (near)
            diag_error(C->d, e->loc, "undefined name '%s'; did you mean '%s'?", e->name, near);
        else
            diag_error(C->d, e->loc, "undefined name '%s'", e->name);
        break;
    }
    case AST_CALL: {
        symbol *s = sema_lookup(C, e->name);
        if (is_arg(def, e->name)) {
            diag_error(C->d, e->loc, "'%s' is an argument, not a function", e->name);
        } else if (s && (s->kind == SYM_FUNC || s->kind == SYM_FLUX)) {
            if (e->n_args != s->stmt->n_words)
                diag_error(C->d, e->loc, "%s '%s' takes %d argument%s, not %d", kind_text(s->kind), e->name,
                           s->stmt->n_words, s->stmt->n_words == 1 ? "" : "s", e->n_args);
        } else if (s) {
            diag_error(C->d, e->loc, "'%s' is a %s, not a function", e->name, kind_text(s->kind));
        } else {
            builtin_fn fn, *b = find_builtin_fn(e->name, &fn) ? &fn : NULL;
            if (!b) {
                const char *near = suggest(C, e->name, def, 1);
                if (near)
                    diag_error(C->d, e->loc, "unknown function '%s'; did you mean '%s'?", e->name, near);
                else
                    diag_error(C->d, e->loc, "unknown function '%s'", e->name);
            } else if (e->n_args < b->min_args || e->n_args > b->max_args) {
                if (b->min_args == b->max_args)
                    diag_error(C->d, e->loc, "%s() takes %d argument%s, not %d", e->name, b->min_args,
                               b->min_args == 1 ? "" : "s", e->n_args);
                else
                    diag_error(C->d, e->loc, "%s() takes %d to %d arguments, not %d", e->name, b->min_args,
                               b->max_args, e->n_args);
            } else if (!strcmp(e->name, "dt")) {
                diag_error(C->d, e->loc, "dt() may only stand on the left of an equation: eq dt(u) = ...");
            }
        }
        break;
    }
    case AST_INDEX: {
        symbol *s = sema_lookup(C, e->name);
        if (!is_arg(def, e->name) && (!s || s->kind != SYM_FIELD)) {
            if (!s && !is_arg(def, e->name))
                diag_error(C->d, e->loc, "undefined name '%s'", e->name);
            else
                diag_error(C->d, e->loc, "only fields have neighbours: '%s' is a %s", e->name,
                           s ? kind_text(s->kind) : "name");
        }
        if (e->n_args > 3)
            diag_error(C->d, e->args[3]->loc, "%d neighbour offsets: at most one per axis (x, y, z)", e->n_args);
        else if (e->n_args > C->dim)
            diag_error(C->d, e->args[C->dim]->loc, "offset along %c, which a %s mesh does not have",
                       "xyz"[C->dim], dim_text(C->dim));
        break;
    }
    default:
        break;
    }
    if (C->d->errors == before || e->kind == AST_UNARY || e->kind == AST_BINARY || e->kind == AST_COND) {
        sema_check_expr(C, e->a, def);
        sema_check_expr(C, e->b, def);
        sema_check_expr(C, e->c, def);
        for (int i = 0; i < e->n_args; i++) sema_check_expr(C, e->args[i], def);
    }
    return C->d->errors - before;
}

/* ---- constants ---------------------------------------------------------------------------- */

int sema_const_value(compiler *C, ast_expr *e, double *out)
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
            int r = sema_const_value(C, s->value, &s->const_value);
            s->state = r < 0 ? 0 : 2;
            *out = s->const_value;
            return r;
        }
    }
    kir_kernel *k = kir_new(KIR_PARAMS, C->dim ? C->dim : 1, 0, 0, 1, "const");
    lctx x = {.k = k, .where = IN_CONST};
    int node = lower_expr(C, &x, e);
    int r = -1;
    if (node >= 0) {
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
        if (sema_const_value(C, kw->value, &val[key]) < 0) continue;
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
                    diag_error(C->d, where[q], "%s is given but the mesh is %s (no n%c)", keys[q], dim_text(dim), "xyz"[a]);
        }
    }
    C->dim = dim;
    return C->d->errors > errors ? -1 : 0;
}

/* ---- recursion among funcs ---------------------------------------------------------------- */

/* The user funcs and fluxes an expression calls (each once), appended to calls. */
static void collect_calls(compiler *C, const ast_expr *e, symbol ***calls, int *n, int *cap)
{
    if (!e) return;
    if (e->kind == AST_CALL) {
        symbol *s = sema_lookup(C, e->name);
        if (s && (s->kind == SYM_FUNC || s->kind == SYM_FLUX)) {
            int seen = 0;
            for (int i = 0; i < *n && !seen; i++) seen = (*calls)[i] == s;
            if (!seen) {
                if (*n == *cap) {
                    *cap = *cap ? 2 * *cap : 8;
                    *calls = arena_grow(C->arena, *calls, sizeof **calls * (size_t)*n, sizeof **calls * (size_t)*cap);
                }
                (*calls)[(*n)++] = s;
            }
        }
    }
    collect_calls(C, e->a, calls, n, cap);
    collect_calls(C, e->b, calls, n, cap);
    collect_calls(C, e->c, calls, n, cap);
    for (int i = 0; i < e->n_args; i++) collect_calls(C, e->args[i], calls, n, cap);
}

/* Depth-first over the call graph with an explicit stack (no limit on the number of funcs):
 * a func met again while it is on the stack closes a cycle, reported once with its path. */
static void check_recursion(compiler *C)
{
    int nf = C->n_syms;
    symbol ***calls = arena_alloc(C->arena, sizeof *calls * (size_t)(nf + 1));
    int *n_calls = arena_alloc(C->arena, sizeof *n_calls * (size_t)(nf + 1));
    int *next = arena_alloc(C->arena, sizeof *next * (size_t)(nf + 1));
    symbol **stack = arena_alloc(C->arena, sizeof *stack * (size_t)(nf + 1));
    for (int i = 0; i < nf; i++) {
        symbol *s = &C->syms[i];
        int cap = 0;
        if (s->kind == SYM_FUNC || s->kind == SYM_FLUX) collect_calls(C, s->stmt->rhs, &calls[i], &n_calls[i], &cap);
        s->state = 0;
    }
    for (int root = 0; root < nf; root++) {
        if (C->syms[root].state || (C->syms[root].kind != SYM_FUNC && C->syms[root].kind != SYM_FLUX)) continue;
        int depth = 0;
        stack[depth++] = &C->syms[root];
        C->syms[root].state = 1;
        next[root] = 0;
        while (depth > 0) {
            symbol *top = stack[depth - 1];
            int t = (int)(top - C->syms);
            if (next[t] == n_calls[t]) {
                top->state = 2;
                depth--;
                continue;
            }
            symbol *callee = calls[t][next[t]++];
            int c = (int)(callee - C->syms);
            if (callee->state == 1) {
                char path[512] = "";
                int from = depth - 1;
                while (from > 0 && stack[from] != callee) from--;
                /* a long cycle shows its first and last calls */
                for (int i = from; i < depth; i++) {
                    if (depth - from > 8 && i == from + 3) {
                        strncat(path, "... -> ", sizeof path - strlen(path) - 1);
                        i = depth - 4;
                        continue;
                    }
                    strncat(path, stack[i]->name, sizeof path - strlen(path) - 8);
                    strncat(path, " -> ", sizeof path - strlen(path) - 1);
                }
                strncat(path, callee->name, sizeof path - strlen(path) - 1);
                diag_error(C->d, callee->loc, "%s '%s' is recursive (%s); funcs are inlined and may not call themselves",
                           kind_text(callee->kind), callee->name, path);
                for (int i = 0; i < nf; i++) C->syms[i].state = 0;
                return;
            }
            if (callee->state == 0) {
                callee->state = 1;
                next[c] = 0;
                stack[depth++] = callee;
            }
        }
    }
    for (int i = 0; i < nf; i++) C->syms[i].state = 0;
}

/* ---- statements --------------------------------------------------------------------------- */

static void check_all_expressions(compiler *C)
{
    for (int i = 0; i < C->n_syms; i++) {
        symbol *s = &C->syms[i];
        if (s->kind == SYM_FUNC || s->kind == SYM_FLUX) sema_check_expr(C, s->stmt->rhs, s->stmt);
        else sema_check_expr(C, s->value, NULL);
    }
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind == ST_EQ) sema_check_expr(C, st->rhs, NULL);
        if (st->kind == ST_ON) {
            sema_check_expr(C, st->lhs, NULL);
            sema_check_expr(C, st->rhs, NULL);
        }
    }
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
    return sema_const_value(C, kw->value, out);
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
            p->output_fields = malloc(sizeof(int) * (size_t)(kw->n_words + 1));
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
        p->output_fields = malloc(sizeof(int) * (size_t)(p->n_fields + 1));
        for (int f = 0; f < p->n_fields; f++) p->output_fields[f] = f;
        p->n_output_fields = p->n_fields;
    }
}

static void build_fields_and_params(compiler *C, pj_program *p)
{
    p->n_fields = count_kind(C, SYM_FIELD);
    p->n_params = count_kind(C, SYM_PARAM);
    p->field_names = calloc((size_t)p->n_fields + 1, sizeof *p->field_names);
    p->field_has_eq = calloc((size_t)p->n_fields + 1, sizeof *p->field_has_eq);
    p->field_halo = calloc((size_t)p->n_fields + 1, sizeof *p->field_halo);
    p->param_names = calloc((size_t)p->n_params + 1, sizeof *p->param_names);
    p->param_values = calloc((size_t)p->n_params + 1, sizeof *p->param_values);
    p->bc = calloc((size_t)p->n_fields + 1, sizeof *p->bc);
    p->params_kernel = kir_new(KIR_PARAMS, p->dim, p->n_fields, p->n_params, 1, "params");
    p->init = kir_new(KIR_INIT, p->dim, p->n_fields, p->n_params, 1, "init");
    for (int i = 0; i < C->n_syms; i++) {
        symbol *s = &C->syms[i];
        C->work = 0; /* the inlining budget is per expression */
        if (s->kind == SYM_FIELD) {
            p->field_names[s->index] = strdup(s->name);
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
            p->param_names[s->index] = strdup(s->name);
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
            diag_error(C->d, st->name_loc, "eq for '%s', which is a %s, not a field", st->name, kind_text(s->kind));
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
            else if (axis >= p->dim) diag_error(C->d, st->words[w].loc, "axis %s does not exist in a %s mesh", n, dim_text(p->dim));
            else if (!periodic_at[axis].line) periodic_at[axis] = st->words[w].loc;
        }
    }
    for (int a = 0; a < 3; a++) {
        p->periodic[a] = periodic_at[a].line > 0;
        if (p->periodic[a])
            for (int f = 0; f < p->n_fields; f++) p->bc[f][2 * a].kind = p->bc[f][2 * a + 1].kind = PJ_BC_PERIODIC;
    }
    const ast_stmt *(*given)[6] = calloc((size_t)p->n_fields + 1, sizeof *given);
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
                                   side_names[s], sema_lookup_field_name(C, field), given[field][s]->loc.line);
                        continue;
                    }
                    sides[n_sides++] = s;
                }
                continue;
            }
            int side = -1;
            for (int s = 0; s < 6; s++)
                if (!strcmp(n, side_names[s])) side = s;
            if (side < 0) {
                const char *near = diag_closest(n, side_names, 6);
                diag_error(C->d, loc, "unknown side '%s'%s%s%s; sides are left, right, bottom, top, back, front, all", n,
                           near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
                continue;
            }
            if (side >= 2 * p->dim) {
                diag_error(C->d, loc, "side '%s' does not exist in a %s mesh", n, dim_text(p->dim));
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
                snprintf(name, sizeof name, "bc.%s", side_names[side]);
                p->bc_kernel[side] = kir_new(KIR_BC, p->dim, p->n_fields, p->n_params, 1, name);
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
    free(given);
}

typedef struct rhs_ctx { compiler *C; const ast_stmt **eqs; } rhs_ctx;

static int lower_rhs(void *vctx, kir_kernel *k, int read_slot, int field)
{
    rhs_ctx *r = vctx;
    r->C->work = 0; /* the inlining budget is per expression */
    lctx x = {.k = k, .where = IN_STAGE, .slot = read_slot};
    int v = lower_expr(r->C, &x, r->eqs[field]->rhs);
    return v < 0 ? -1 : kir_as_f(k, v);
}

static int finish(compiler *C, kir_kernel *k)
{
    if (!k) return 0;
    kir_finish(k);
    char err[256];
    if (kir_verify(k, err, sizeof err) < 0) {
        diag_error(C->d, (pj_loc){0, 0}, "internal error: kernel %s does not verify: %s", k->name, err);
        return -1;
    }
    return 0;
}

pj_program *compile_problem(const char *filename, const char *source, size_t len, diag *d,
                            const pj_compile_options *opt)
{
    arena A = {0};
    compiler C = {.arena = &A, .d = d};
    pj_program *p = calloc(1, sizeof *p);
    p->filename = strdup(filename ? filename : "<input>");
    const ast_stmt **eqs = NULL;
    C.ast = parse_program(&A, d, source, len);
    if (!C.ast || d->errors) goto fail;

    collect_symbols(&C);
    if (read_mesh(&C, p) < 0) goto fail;
    check_all_expressions(&C);
    check_recursion(&C);
    if (d->errors) goto fail;
    for (int i = 0; i < C.n_syms; i++) /* every const, used or not, must be a constant */
        if (C.syms[i].kind == SYM_CONST) {
            ast_expr name = {.kind = AST_NAME, .loc = C.syms[i].loc, .name = C.syms[i].name};
            double v;
            sema_const_value(&C, &name, &v);
        }
    if (d->errors) goto fail;

    build_fields_and_params(&C, p);
    eqs = calloc((size_t)p->n_fields + 1, sizeof *eqs);
    read_equations(&C, p, eqs);
    read_time(&C, p, opt);
    read_output(&C, p);
    read_boundaries(&C, p);
    if (d->errors) goto fail;

    rhs_ctx r = {&C, eqs};
    if (scheme_lower(p, lower_rhs, &r) < 0 || d->errors) goto fail;

    finish(&C, p->params_kernel);
    finish(&C, p->init);
    for (int s = 0; s < 6; s++) finish(&C, p->bc_kernel[s]);
    for (int s = 0; s < p->n_stages; s++)
        if (finish(&C, p->stages[s].kernel) < 0) goto fail;
    if (d->errors) goto fail;

    for (int i = 0; i < p->params_kernel->n_outputs; i++) {
        const kir_output *o = &p->params_kernel->outputs[i];
        p->param_values[o->field] = kir_eval_uniform(p->params_kernel, o->node, p->param_values, 0);
    }
    p->halo = 1;
    int *h = calloc((size_t)p->n_fields + 1, sizeof *h);
    for (int s = 0; s < p->n_stages; s++) {
        kir_halo(p->stages[s].kernel, h);
        for (int f = 0; f < p->n_fields; f++)
            if (h[f] > p->field_halo[f]) p->field_halo[f] = h[f];
    }
    for (int f = 0; f < p->n_fields; f++)
        if (p->field_halo[f] > p->halo) p->halo = p->field_halo[f];
    free(h);
    for (int a = 0; a < p->dim; a++)
        if (p->n[a] < p->halo)
            diag_error(d, C.mesh_loc, "the mesh has %lld cell%s along %c but the equations reach %d cells away: "
                       "give n%c >= %d", (long long)p->n[a], p->n[a] == 1 ? "" : "s", "xyz"[a], p->halo, "xyz"[a], p->halo);
    if (d->errors) goto fail;
    free(eqs);
    arena_free(&A);
    return p;
fail:
    free(eqs);
    arena_free(&A);
    program_free(p);
    return NULL;
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
    free(p->param_values);
    free(p->bc);
    free(p->output_fields);
    kir_free(p->params_kernel);
    kir_free(p->init);
    for (int s = 0; s < 6; s++) kir_free(p->bc_kernel[s]);
    for (int s = 0; s < p->n_stages; s++) kir_free(p->stages[s].kernel);
    free(p->filename);
    free(p);
}
