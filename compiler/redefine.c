/* redefine.c — later definitions replace earlier ones: how a running simulation's problem is
 * redefined from text (hot swap, pj_sim_redefine).
 *
 * The text of a redefinition is compiled after the problem's own text, as one source. Every
 * statement from `first_line` on may replace what an earlier statement defined:
 *
 *     func / flux NAME     the earlier func or flux called NAME
 *     eq dt(F)             the earlier eq of field F
 *     energy NAME          the earlier energy called NAME (every delta() and integral() of it)
 *     const A = ...        A in an earlier const statement (the other consts there stay)
 *     on SIDES: BC of F    the conditions of field F on those sides (`all`: every side that is
 *                          not periodic; an earlier `all` keeps the sides not given again)
 *
 * Replaced statements (or their consts and sides) are dropped from the tree before any other
 * pass sees it, so the rest of the front end compiles one consistent problem. Any other
 * statement from first_line on (mesh, field, param, periodic, time, output) is an error: it would
 * change what a running simulation holds. */
#include <string.h>
#include "redefine.h"

static const char *const side_names[6] = {"left", "right", "bottom", "top", "back", "front"};

/* The first field named in e (a name, or an argument of a call or index), or NULL. */
static const char *field_in(const ast_expr *e, const char *const *fields, int n_fields)
{
    if (!e) return NULL;
    if (e->kind == AST_NAME)
        for (int f = 0; f < n_fields; f++)
            if (!strcmp(e->name, fields[f])) return fields[f];
    const ast_expr *kids[3] = {e->a, e->b, e->c};
    for (int i = 0; i < 3; i++) {
        const char *n = field_in(kids[i], fields, n_fields);
        if (n) return n;
    }
    for (int i = 0; i < e->n_args; i++) {
        const char *n = field_in(e->args[i], fields, n_fields);
        if (n) return n;
    }
    return NULL;
}

static const char *bc_field(const ast_stmt *st, const char *const *fields, int n_fields)
{
    const char *f = field_in(st->lhs, fields, n_fields);
    return f ? f : field_in(st->rhs, fields, n_fields);
}

/* The sides a statement's words name, as a bit set (`all`: every non-periodic side). */
static unsigned sides_of(const ast_stmt *st, unsigned every)
{
    unsigned set = 0;
    for (int w = 0; w < st->n_words; w++) {
        if (!strcmp(st->words[w].text, "all")) set |= every;
        for (int s = 0; s < 6; s++)
            if (!strcmp(st->words[w].text, side_names[s])) set |= 1u << s;
    }
    return set;
}

int redefine_apply(arena *a, ast_program *ast, int first_line, diag *d)
{
    int n = ast->n_stmts, errors = d->errors;
    /* the mesh's dimension, the periodic axes and the fields, from the statements before */
    int dim = 1;
    unsigned periodic = 0;
    size_t cap = 1;
    for (int i = 0; i < n; i++)
        if (ast->stmts[i]->kind == ST_FIELD) cap += (size_t)ast->stmts[i]->n_kwargs;
    const char **fields = arena_alloc(a, sizeof *fields * cap);
    int n_fields = 0;
    if (!fields) {
        diag_error(d, (pj_loc){0, 0}, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const ast_stmt *st = ast->stmts[i];
        if (st->loc.line >= first_line) continue;
        if (st->kind == ST_MESH)
            for (int k = 0; k < st->n_kwargs; k++) {
                if (!strcmp(st->kwargs[k].name, "ny") && dim < 2) dim = 2;
                if (!strcmp(st->kwargs[k].name, "nz")) dim = 3;
            }
        if (st->kind == ST_PERIODIC)
            for (int w = 0; w < st->n_words; w++)
                for (int ax = 0; ax < 3; ax++)
                    if (st->words[w].text[0] == "xyz"[ax] && !st->words[w].text[1]) periodic |= 3u << (2 * ax);
        if (st->kind == ST_FIELD)
            for (int k = 0; k < st->n_kwargs; k++) fields[n_fields++] = st->kwargs[k].name;
    }
    unsigned every = ((1u << (2 * dim)) - 1) & ~periodic;

    for (int i = 0; i < n; i++) {
        ast_stmt *st = ast->stmts[i];
        if (!st || st->loc.line < first_line) continue;
        switch (st->kind) {
        case ST_FUNC: case ST_FLUX: case ST_EQ: case ST_ENERGY:
            if (!st->name) break; /* an algebraic equation without `for FIELD`: added, not redefined */
            for (int j = 0; j < i; j++) {
                ast_stmt *old = ast->stmts[j];
                if (!old || !old->name || strcmp(old->name, st->name)) continue;
                int same = st->kind == ST_EQ || st->kind == ST_ENERGY ? old->kind == st->kind
                                                                      : old->kind == ST_FUNC || old->kind == ST_FLUX;
                if (same) ast->stmts[j] = NULL;
            }
            break;
        case ST_CONST:
            for (int k = 0; k < st->n_kwargs; k++)
                for (int j = 0; j < i; j++) {
                    ast_stmt *old = ast->stmts[j];
                    if (!old || old->kind != ST_CONST) continue;
                    int kept = 0;
                    for (int q = 0; q < old->n_kwargs; q++)
                        if (strcmp(old->kwargs[q].name, st->kwargs[k].name)) old->kwargs[kept++] = old->kwargs[q];
                    old->n_kwargs = kept;
                    if (!kept) ast->stmts[j] = NULL;
                }
            break;
        case ST_ON: {
            const char *field = bc_field(st, fields, n_fields);
            unsigned given = sides_of(st, every);
            if (!field || !given) break; /* the front end reports what is wrong with it */
            for (int j = 0; j < i; j++) {
                ast_stmt *old = ast->stmts[j];
                if (!old || old->kind != ST_ON) continue;
                const char *of = bc_field(old, fields, n_fields);
                if (!of || strcmp(of, field)) continue;
                unsigned left = sides_of(old, every) & ~given;
                if (left == sides_of(old, every)) continue;
                if (!left) {
                    ast->stmts[j] = NULL;
                    continue;
                }
                /* the sides it still sets, written out */
                ast_word *w = arena_alloc(a, sizeof *w * 6);
                if (!w) {
                    diag_error(d, (pj_loc){0, 0}, "out of memory");
                    return -1;
                }
                int nw = 0;
                for (int s = 0; s < 6; s++)
                    if (left & (1u << s)) w[nw++] = (ast_word){side_names[s], old->words[0].loc};
                old->words = w;
                old->n_words = nw;
            }
            break;
        }
        default:
            diag_error(d, st->loc, "a running simulation can take new func, flux, eq, energy, const and boundary "
                       "conditions only: this statement would change what it holds (restart it for that)");
        }
    }
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (ast->stmts[i]) ast->stmts[kept++] = ast->stmts[i];
    ast->n_stmts = kept;
    return d->errors > errors ? -1 : 0;
}
