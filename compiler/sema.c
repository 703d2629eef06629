/* sema.c — names and checks: the symbol table of a problem and the checks of every expression
 * written (names, arities, axes), before anything is lowered.
 *
 *   sema_collect_symbols  fields, params, consts, funcs, fluxes; duplicates
 *   sema_check_expr       names, arities, axes of every expression written
 *   sema_check_program    every expression of the problem, then funcs and fluxes calling
 *                         themselves through others
 *
 * The driver that runs these with the mesh, the lowering and the kernels is compile_problem()
 * in frontend.c; nothing here lowers, so sema.c depends on no other pass. */
#include "sema.h"
#include "mesh.h"
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
    {"implicit", 1, 1},
    {"rand", 0, 0}, {"randn", 0, 0}, {"wall", 1, 1}, {"gradx", 1, 1}, {"grady", 1, 1}, {"gradz", 1, 1},
};
#define N_SPECIAL_FNS ((int)(sizeof special_fns / sizeof *special_fns))
static const char *const builtin_names[] = {"x", "y", "z", "t", "dx", "dy", "dz", "pi", "e", "boundary"};
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

static size_t name_hash(const char *name)
{
    size_t h = 1469598103934665603u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 1099511628211u;
    return h;
}

/* The slot of C->sym_index that holds `name`, or the empty slot where it would go. */
static int *index_slot(compiler *C, const char *name)
{
    size_t mask = (size_t)C->sym_index_cap - 1, h = name_hash(name) & mask;
    while (C->sym_index[h] && strcmp(C->syms[C->sym_index[h] - 1].name, name)) h = (h + 1) & mask;
    return &C->sym_index[h];
}

/* Adds symbol number i to the index, growing it so that it stays at most half full. */
static void index_symbol(compiler *C, int i)
{
    if (2 * (i + 1) > C->sym_index_cap) {
        int cap = C->sym_index_cap ? 2 * C->sym_index_cap : 64;
        while (2 * (i + 1) > cap) cap *= 2;
        C->sym_index = arena_alloc(C->arena, sizeof *C->sym_index * (size_t)cap); /* zeroed */
        C->sym_index_cap = cap;
        for (int j = 0; j < i; j++) *index_slot(C, C->syms[j].name) = j + 1;
    }
    *index_slot(C, C->syms[i].name) = i + 1;
}

symbol *sema_lookup(compiler *C, const char *name)
{
    if (!C->sym_index_cap) return NULL;
    int i = *index_slot(C, name);
    return i ? &C->syms[i - 1] : NULL;
}

const char *sema_lookup_field_name(compiler *C, int field)
{
    for (int i = 0; i < C->n_syms; i++)
        if (C->syms[i].kind == SYM_FIELD && C->syms[i].index == field) return C->syms[i].name;
    return "?";
}

static const char *kind_text(sym_kind k)
{
    static const char *t[] = {"field", "param", "const", "func", "flux", "monitor"};
    return t[k];
}

static int count_kind(compiler *C, sym_kind kind) { return C->n_kind[kind]; }

static void add_symbol(compiler *C, const char *name, sym_kind kind, pj_loc loc, const ast_stmt *st,
                       ast_expr *value)
{
    symbol *old = sema_lookup(C, name);
    if (old) {
        diag_error(C->d, loc, "'%s' is already defined as a %s at line %d", name, kind_text(old->kind), old->loc.line);
        return;
    }
    if (builtin_name_index(name) >= 0 || !strcmp(name, "all")) {
        diag_error(C->d, loc, "'%s' is a built-in name and cannot be redefined", name);
        return;
    }
    /* A value may take a built-in function's name: a call always means the function and a plain
     * name the value. A func or flux would make the call itself ambiguous: an error, after which
     * the func is defined all the same, so its calls are checked as the user meant them and
     * report nothing more. */
    if ((kind == SYM_FUNC || kind == SYM_FLUX) && find_builtin_fn(name, NULL))
        diag_error(C->d, loc, "'%s' is a built-in function: a %s cannot take its name (a field, param or const can)",
                   name, kind_text(kind));
    if (C->n_syms == C->cap_syms) {
        int cap = C->cap_syms ? 2 * C->cap_syms : 16;
        C->syms = arena_grow(C->arena, C->syms, sizeof *C->syms * (size_t)C->cap_syms, sizeof *C->syms * (size_t)cap);
        C->cap_syms = cap;
    }
    symbol *s = &C->syms[C->n_syms];
    *s = (symbol){.name = name, .kind = kind, .loc = loc, .stmt = st, .value = value};
    s->index = kind == SYM_FIELD || kind == SYM_PARAM || kind == SYM_MONITOR ? count_kind(C, kind) : -1;
    s->value_loc = value ? value->loc : loc;
    index_symbol(C, C->n_syms);
    C->n_syms++;
    C->n_kind[kind]++;
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
        case ST_MONITOR:
            for (int j = 0; j < st->n_kwargs; j++) {
                const ast_kwarg *kw = &st->kwargs[j];
                if (!strcmp(kw->name, "every")) continue;
                if (!kw->value) {
                    diag_error(C->d, kw->loc, "monitor '%s' needs a value: monitor %s = integral(...)", kw->name, kw->name);
                    continue;
                }
                if (kw->n_words) {
                    diag_error(C->d, kw->words[0].loc, "unexpected name '%s' (separate monitors with commas)", kw->words[0].text);
                    continue;
                }
                add_symbol(C, kw->name, SYM_MONITOR, kw->loc, st, kw->value);
            }
            break;
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

int sema_term_face(const compiler *C, const char *name, int *axis, int *high)
{
    if (!C->term_faces || strncmp(name, "face_", 5) || !name[5] || !strchr("xyz", name[5]) ||
        (name[6] != '0' && name[6] != '1') || strcmp(name + 7, "__"))
        return 0;
    *axis = name[5] - 'x';
    *high = name[6] == '1';
    return 1;
}

int sema_grad_axis(const char *name)
{
    if (strncmp(name, "grad", 4) || !name[4] || name[5] || !strchr("xyz", name[4])) return -1;
    return name[4] - 'x';
}

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
        if (C->mesh && C->mesh->geometry != PJ_GEOM_CARTESIAN) { /* r, z, dr, dz (mesh.c) */
            int spacing, axis = mesh_name_axis(C, e->name, &spacing);
            if (axis == -2) mesh_name_error(C, e->loc, e->name);
            else if (axis == -3) diag_error(C->d, e->loc, "'%s' does not exist in a %s mesh", e->name, dim_text(C->dim));
            if (axis != -1) break;
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
        /* a call names a user func or flux, else a built-in function, even where a value or an
           argument has the same name (`const L = 1` beside `L(u)`) */
        symbol *s = sema_lookup(C, e->name);
        int builtin = find_builtin_fn(e->name, NULL), axis, high;
        if (!strcmp(e->name, "[]")) {
            diag_error(C->d, e->loc, "a list [...] only gives a mesh's cell widths (mesh grid(dx = [...]))");
            break;
        }
        if (sema_term_face(C, e->name, &axis, &high)) {
            if (e->n_args != 1 || axis >= C->dim)
                diag_error(C->d, e->loc, "%s() takes one argument in a mesh with that axis", e->name);
        } else if (is_arg(def, e->name) && !builtin) {
            diag_error(C->d, e->loc, "'%s' is an argument, not a function", e->name);
        } else if (s && (s->kind == SYM_FUNC || s->kind == SYM_FLUX)) {
            if (e->n_args != s->stmt->n_words)
                diag_error(C->d, e->loc, "%s '%s' takes %d argument%s, not %d", kind_text(s->kind), e->name,
                           s->stmt->n_words, s->stmt->n_words == 1 ? "" : "s", e->n_args);
        } else if (s && !builtin) {
            diag_error(C->d, e->loc, "'%s' is a %s, not a function", e->name, kind_text(s->kind));
        } else if (!builtin && sema_reduction(e->name) >= 0) {
            diag_error(C->d, e->loc, "%s() is a reduction over the cells: it may only stand in a monitor "
                       "(monitor NAME = %s(...))", e->name, e->name);
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
            } else if (sema_grad_axis(e->name) >= C->dim) {
                diag_error(C->d, e->loc, "%s() does not exist in a %s mesh", e->name, dim_text(C->dim));
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

int sema_reduction(const char *name)
{
    static const char *const names[] = {"integral", "maxval", "minval", "mean"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

/* A monitor's value: one reduction of a cell expression, `integral(e)` ... */
static void check_monitor(compiler *C, const symbol *s)
{
    const ast_expr *e = s->value;
    if (e->kind != AST_CALL || sema_reduction(e->name) < 0 ||
        (sema_lookup(C, e->name) && sema_lookup(C, e->name)->kind == SYM_FUNC)) {
        diag_error(C->d, e->loc, "monitor '%s' must be integral(e), maxval(e), minval(e) or mean(e) of a cell expression e",
                   s->name);
        return;
    }
    if (e->n_args != 1) {
        diag_error(C->d, e->loc, "%s() takes 1 argument, not %d", e->name, e->n_args);
        return;
    }
    sema_check_expr(C, e->args[0], NULL);
}

static void check_all_expressions(compiler *C)
{
    for (int i = 0; i < C->n_syms; i++) {
        symbol *s = &C->syms[i];
        if (s->kind == SYM_FUNC || s->kind == SYM_FLUX) sema_check_expr(C, s->stmt->rhs, s->stmt);
        else if (s->kind == SYM_MONITOR) check_monitor(C, s);
        else sema_check_expr(C, s->value, NULL);
    }
    for (int i = 0; i < C->ast->n_stmts; i++) {
        const ast_stmt *st = C->ast->stmts[i];
        if (st->kind == ST_EQ) sema_check_expr(C, st->rhs, NULL);
        if (st->kind == ST_STOP) {
            if (strcmp(st->name, "when"))
                diag_error(C->d, st->name_loc, "a stop condition reads `stop when CONDITION`, not `stop %s`", st->name);
            else sema_check_expr(C, st->rhs, NULL);
        }
        if (st->kind == ST_ON) {
            sema_check_expr(C, st->lhs, NULL);
            sema_check_expr(C, st->rhs, NULL);
            if (st->lhs2) sema_check_expr(C, st->lhs2, NULL);
            if (st->rhs2) sema_check_expr(C, st->rhs2, NULL);
        }
    }
}


/* ---- for the driver (frontend.c) ---------------------------------------------------------- */

void sema_collect_symbols(compiler *C) { collect_symbols(C); }

void sema_check_program(compiler *C)
{
    check_all_expressions(C);
    check_recursion(C);
}

const char *sema_kind_text(sym_kind k) { return kind_text(k); }
int sema_count_kind(compiler *C, sym_kind kind) { return count_kind(C, kind); }
const char *sema_dim_text(int dim) { return dim_text(dim); }
const char *sema_side_name(int side) { return side >= 0 && side < 6 ? side_names[side] : "?"; }

int sema_side_index(const char *name)
{
    for (int s = 0; s < 6; s++)
        if (!strcmp(name, side_names[s])) return s;
    return -1;
}

const char *sema_closest_side(const char *name) { return diag_closest(name, side_names, 6); }
