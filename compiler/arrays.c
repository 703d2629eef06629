/* arrays.c — order-parameter arrays, expanded in the syntax tree (LANGUAGE.md §9).
 *
 *   field eta[N] = 0.1*i            the fields eta1 ... etaN; in the value, i is the member number
 *   eta[k]                          the field etak: k an index bound here or a whole constant
 *   eta[k][1, 0]                    a neighbour of member k: etak[1, 0]
 *   eq dt(eta[i]) = e(i)            one equation per member, i bound to its number
 *   on left: eta[i] = g(i)          one condition per member (the condition's one unbound index)
 *   sum(j, e(j)), prod(j, e(j))     e(1) + ... + e(N), e(1) * ... * e(N): N is the size of the
 *                                   arrays indexed by j in e (all of one size)
 *   output fields = eta             every member
 *
 * The rewrite happens before names are checked, so every later pass (sema, lowering, the back
 * ends, outputs, checkpoints, the Python package) sees ordinary fields named eta1 ... etaN and
 * ordinary equations, and an array problem compiles to the very kernels of the same problem
 * written field by field. Copies of a template keep the template's positions: an error in it is
 * reported once at its text (diag.c reports an error at one place once).
 *
 * An index is bound by the eq template (the name in dt(eta[NAME])), by sum and prod, by an
 * array's initial value (i) and by a boundary condition (its one index that nothing binds);
 * a bound index used as a value is its member number. */
#include "arrays.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EXPANDED_NODES 2000000L /* nodes the expansion may make in one problem (about 250 MB) */

typedef struct array_def {
    const char *name;
    int n;
    pj_loc loc;
} array_def;

/* An index bound to a member number, innermost first. */
typedef struct binding {
    const char *name;
    int value;
    pj_loc loc;             /* where it is bound */
    const char *by;         /* what binds it, for messages: "eq", "sum", ... */
    const struct binding *up;
} binding;

typedef struct xp {
    compiler *C;
    array_def *arrays;
    int n_arrays;
    const ast_stmt *def;    /* the func or flux whose body is copied (its arguments), or NULL */
    long nodes;             /* nodes made so far */
    int too_many;           /* the node budget ran out (reported) */
} xp;

static const char *const builtin_names[] = {"x", "y", "z", "t", "dx", "dy", "dz", "pi", "e", "boundary", "all"};

static int is_builtin_name(const char *n)
{
    for (size_t i = 0; i < sizeof builtin_names / sizeof *builtin_names; i++)
        if (!strcmp(n, builtin_names[i])) return 1;
    return 0;
}

static int is_arg(const ast_stmt *def, const char *name)
{
    for (int i = 0; def && i < def->n_words; i++)
        if (!strcmp(def->words[i].text, name)) return 1;
    return 0;
}

/* The array called `name` (an argument of the func being copied hides it), or NULL. */
static const array_def *array_named(const xp *X, const char *name)
{
    if (!name || is_arg(X->def, name)) return NULL;
    for (int i = 0; i < X->n_arrays; i++)
        if (!strcmp(X->arrays[i].name, name)) return &X->arrays[i];
    return NULL;
}

static const binding *bound(const binding *b, const char *name)
{
    for (; b; b = b->up)
        if (!strcmp(b->name, name)) return b;
    return NULL;
}

static int is_reduction_call(const xp *X, const ast_expr *e)
{
    if (e->kind != AST_CALL || (strcmp(e->name, "sum") && strcmp(e->name, "prod"))) return 0;
    symbol *s = sema_lookup(X->C, e->name); /* a user's func of that name keeps it */
    return !(s && (s->kind == SYM_FUNC || s->kind == SYM_FLUX)) && !is_arg(X->def, e->name);
}

/* A name that can be a new index: nothing else (symbol, built-in, argument, bound index). */
static int free_name(const xp *X, const char *n, const binding *b)
{
    return !sema_lookup(X->C, n) && !is_builtin_name(n) && !is_arg(X->def, n) && !bound(b, n);
}

static const char *member_name(xp *X, const char *array, int k)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%d", k);
    size_t n = strlen(array);
    char *s = arena_alloc(X->C->arena, n + strlen(buf) + 1);
    memcpy(s, array, n);
    strcpy(s + n, buf);
    return s;
}

/* A new node like `like` (shallow), or NULL when the expansion grows past its budget. */
static ast_expr *new_node(xp *X, const ast_expr *like)
{
    if (++X->nodes > MAX_EXPANDED_NODES) {
        if (!X->too_many)
            diag_error(X->C->d, like->loc, "the arrays expand the problem into more than %ld expression nodes",
                       MAX_EXPANDED_NODES);
        X->too_many = 1;
        return NULL;
    }
    ast_expr *e = arena_alloc(X->C->arena, sizeof *e);
    *e = *like;
    return e;
}

static int mentions(const ast_expr *e, const char *name)
{
    if (!e) return 0;
    if (e->kind == AST_NAME && !strcmp(e->name, name)) return 1;
    if (mentions(e->a, name) || mentions(e->b, name) || mentions(e->c, name)) return 1;
    for (int i = 0; i < e->n_args; i++)
        if (mentions(e->args[i], name)) return 1;
    return 0;
}

static ast_expr *copy(xp *X, const ast_expr *e, const binding *b);

/* ---- members -------------------------------------------------------------------------------- */

/* The names in an array's index: each a bound index, a const, pi or e; reported otherwise. */
static int check_index_names(xp *X, const array_def *a, const ast_expr *e, const binding *b)
{
    if (!e) return 0;
    if (e->kind == AST_NAME && !bound(b, e->name)) {
        symbol *s = sema_lookup(X->C, e->name);
        if (is_arg(X->def, e->name)) {
            diag_error(X->C->d, e->loc, "the member of '%s' must be known when the problem is compiled: '%s' is an "
                       "argument of %s '%s'", a->name, e->name, X->def->kind == ST_FUNC ? "func" : "flux", X->def->name);
            return -1;
        }
        if (s && s->kind != SYM_CONST) {
            diag_error(X->C->d, e->loc, "the member of '%s' is an index or a whole constant, and '%s' is a %s",
                       a->name, e->name, sema_kind_text(s->kind));
            return -1;
        }
        if (!s && !is_builtin_name(e->name)) {
            diag_error(X->C->d, e->loc, "unbound index '%s': an index is bound by eq dt(%s[%s]) = ..., by sum(%s, ...) "
                       "or prod(%s, ...), or is i in an array's initial value", e->name, a->name, e->name, e->name,
                       e->name);
            return -1;
        }
    }
    if (check_index_names(X, a, e->a, b) < 0 || check_index_names(X, a, e->b, b) < 0 ||
        check_index_names(X, a, e->c, b) < 0)
        return -1;
    for (int i = 0; i < e->n_args; i++)
        if (check_index_names(X, a, e->args[i], b) < 0) return -1;
    return 0;
}

/* The member number 1..n that `ix` (an index of array a) names under the bindings b, or -1
 * (reported). */
static int member_number(xp *X, const array_def *a, const ast_expr *ix, const binding *b)
{
    double v;
    const binding *by = ix->kind == AST_NAME ? bound(b, ix->name) : NULL;
    if (by) {
        v = by->value;
    } else if (ix->kind == AST_NUM) {
        v = ix->value;
    } else {
        if (check_index_names(X, a, ix, b) < 0) return -1;
        ast_expr *e = copy(X, ix, b);
        if (!e) return -1;
        int dim = X->C->dim;
        X->C->dim = 3; /* the mesh is not read yet: any axis may be named */
        int bad = sema_check_expr(X->C, e, X->def) || lower_const_value(X->C, e, &v) < 0;
        X->C->dim = dim;
        if (bad) return -1;
    }
    char num[32];
    if (v != floor(v)) {
        diag_error(X->C->d, ix->loc, "the member of '%s' must be a whole number, not %s", a->name,
                   diag_number(num, sizeof num, v));
        return -1;
    }
    if (v < 1 || v > a->n) {
        char with[96] = "";
        for (const binding *q = b; q; q = q->up)
            if (mentions(ix, q->name)) {
                snprintf(with, sizeof with, " (with %s = %d)", q->name, q->value);
                break;
            }
        diag_error(X->C->d, ix->loc, "member %s of '%s' is out of range: '%s' has members 1 to %d%s",
                   diag_number(num, sizeof num, v), a->name, a->name, a->n, with);
        return -1;
    }
    return (int)v;
}

/* The member index of an array's AST_INDEX: eta[k] or eta[k][offsets]; NULL when it has none. */
static const ast_expr *member_index(const ast_expr *e)
{
    return e->a ? e->a : e->n_args == 1 ? e->args[0] : NULL;
}

/* eta[k][offsets] -> the field etak at those offsets, etak[offsets]. */
static ast_expr *copy_member_neighbour(xp *X, const array_def *a, const ast_expr *e, const binding *b)
{
    if (!a) {
        diag_error(X->C->d, e->loc, "%s[k][...] is a neighbour of member k of a field array, and '%s' is not one", e->name,
                   e->name);
        return NULL;
    }
    int k = member_number(X, a, e->a, b);
    if (k < 0) return NULL;
    ast_expr *m = new_node(X, e);
    if (!m) return NULL;
    m->name = member_name(X, a->name, k);
    m->a = NULL;
    m->args = arena_alloc(X->C->arena, sizeof *m->args * (size_t)(e->n_args + 1));
    m->cap_args = e->n_args;
    m->depth = 1;
    for (int i = 0; i < e->n_args; i++) {
        if (!(m->args[i] = copy(X, e->args[i], b))) return NULL;
        if (m->args[i]->depth + 1 > m->depth) m->depth = m->args[i]->depth + 1;
    }
    return m;
}

/* eta[k] -> the field etak. */
static ast_expr *copy_member(xp *X, const array_def *a, const ast_expr *e, const binding *b)
{
    if (e->a) return copy_member_neighbour(X, a, e, b);
    if (e->n_args != 1) {
        diag_error(X->C->d, e->loc, "'%s' is an array: %s[k] names its member k (one index, not %d)", a->name, a->name,
                   e->n_args);
        return NULL;
    }
    int k = member_number(X, a, e->args[0], b);
    if (k < 0) return NULL;
    ast_expr *m = new_node(X, e);
    if (!m) return NULL;
    m->kind = AST_NAME;
    m->name = member_name(X, a->name, k);
    m->args = NULL;
    m->n_args = 0;
    m->depth = 1;
    return m;
}

/* ---- sum and prod --------------------------------------------------------------------------- */

/* Checks that `name` can be bound as a new index at `loc` by `what` (reported: -1). */
static int check_new_index(xp *X, const char *name, pj_loc loc, const char *what, const binding *b)
{
    const binding *q = bound(b, name);
    symbol *s = sema_lookup(X->C, name);
    if (q)
        diag_error(X->C->d, loc, "%s: the index '%s' is already bound by the %s at line %d; use another name", what,
                   name, q->by, q->loc.line);
    else if (s)
        diag_error(X->C->d, loc, "%s: the index '%s' is the name of a %s (line %d); an index needs a name of its own",
                   what, name, sema_kind_text(s->kind), s->loc.line);
    else if (is_builtin_name(name))
        diag_error(X->C->d, loc, "%s: the index '%s' is a built-in name; an index needs a name of its own", what, name);
    else if (is_arg(X->def, name))
        diag_error(X->C->d, loc, "%s: the index '%s' is an argument of %s '%s'; an index needs a name of its own", what,
                   name, X->def->kind == ST_FUNC ? "func" : "flux", X->def->name);
    else
        return 0;
    return -1;
}

/* The arrays in e whose index mentions `j`: their size (one for all), or -1 (reported). */
static int scan_range(xp *X, const ast_expr *e, const char *j, const array_def **first, pj_loc *first_at)
{
    if (!e) return 0;
    const array_def *a = e->kind == AST_INDEX ? array_named(X, e->name) : NULL;
    if (a && member_index(e) && mentions(member_index(e), j)) {
        if (!*first) {
            *first = a;
            *first_at = e->loc;
        } else if ((*first)->n != a->n) {
            diag_error(X->C->d, e->loc, "the index '%s' runs over arrays of different sizes: '%s' has %d members, "
                       "'%s' (column %d) has %d", j, a->name, a->n, (*first)->name, first_at->col, (*first)->n);
            return -1;
        }
    }
    if (scan_range(X, e->a, j, first, first_at) < 0 || scan_range(X, e->b, j, first, first_at) < 0 ||
        scan_range(X, e->c, j, first, first_at) < 0)
        return -1;
    for (int i = 0; i < e->n_args; i++)
        if (scan_range(X, e->args[i], j, first, first_at) < 0) return -1;
    return 0;
}

/* The size of the arrays `j` indexes in the expressions es, or -1 (reported at `at`). */
static int index_range(xp *X, const ast_expr *const *es, int n, const char *j, pj_loc at, const char *what)
{
    const array_def *first = NULL;
    pj_loc first_at = {0, 0};
    for (int i = 0; i < n; i++)
        if (scan_range(X, es[i], j, &first, &first_at) < 0) return -1;
    if (!first) {
        diag_error(X->C->d, at, "%s: no array is indexed by '%s' here, so '%s' has no range (e.g. sum(j, eta[j]^2))", what,
                   j, j);
        return -1;
    }
    return first->n;
}

/* sum(j, e) -> e(1) + ... + e(N) and prod(j, e) -> e(1) * ... * e(N): one chain, evaluated left to
 * right as the sum written out by hand. */
static ast_expr *copy_reduction(xp *X, const ast_expr *e, const binding *b)
{
    int is_sum = !strcmp(e->name, "sum");
    if (e->n_args != 2 || e->args[0]->kind != AST_NAME) {
        diag_error(X->C->d, e->loc, "%s() takes an index and an expression: %s(j, eta[j]%s)", e->name, e->name,
                   is_sum ? "^2" : "");
        return NULL;
    }
    const char *j = e->args[0]->name;
    char what[64];
    snprintf(what, sizeof what, "%s(%s, ...)", e->name, j);
    if (check_new_index(X, j, e->args[0]->loc, what, b) < 0) return NULL;
    const ast_expr *body = e->args[1];
    int n = index_range(X, &body, 1, j, e->loc, what);
    if (n < 0) return NULL;
    ast_expr *chain = new_node(X, e);
    if (!chain) return NULL;
    chain->kind = AST_BINARY;
    chain->name = NULL;
    chain->n_args = chain->cap_args = n;
    chain->args = arena_alloc(X->C->arena, sizeof *chain->args * (size_t)n);
    chain->ops = arena_alloc(X->C->arena, sizeof *chain->ops * (size_t)n);
    chain->depth = 1;
    for (int k = 1; k <= n; k++) {
        binding here = {j, k, e->args[0]->loc, e->name, b};
        ast_expr *term = copy(X, body, &here);
        if (!term) return NULL;
        chain->args[k - 1] = term;
        chain->ops[k - 1] = k == 1 ? -1 : is_sum ? OP_ADD : OP_MUL;
        if (term->depth + 1 > chain->depth) chain->depth = term->depth + 1;
    }
    return n == 1 ? chain->args[0] : chain;
}

/* ---- expressions ---------------------------------------------------------------------------- */

/* e with its arrays expanded under the bindings b: a copy (NULL: reported). */
static ast_expr *copy(xp *X, const ast_expr *e, const binding *b)
{
    if (!e) return NULL;
    const array_def *a = e->kind == AST_NAME || e->kind == AST_INDEX ? array_named(X, e->name) : NULL;
    if (e->kind == AST_NAME) {
        const binding *q = bound(b, e->name);
        if (a && !q) {
            diag_error(X->C->d, e->loc, "'%s' is an array of %d fields: name a member, %s[1] ... %s[%d], or %s[i] with "
                       "an index", e->name, a->n, e->name, e->name, a->n, e->name);
            return NULL;
        }
        ast_expr *c = new_node(X, e);
        if (c && q) { /* an index as a value: its member number */
            c->kind = AST_NUM;
            c->value = q->value;
            c->name = NULL;
        }
        return c;
    }
    if (a || (e->kind == AST_INDEX && e->a)) return copy_member(X, a, e, b);
    if (is_reduction_call(X, e)) return copy_reduction(X, e, b);
    ast_expr *c = new_node(X, e);
    if (!c) return NULL;
    if (e->a && !(c->a = copy(X, e->a, b))) return NULL;
    if (e->b && !(c->b = copy(X, e->b, b))) return NULL;
    if (e->c && !(c->c = copy(X, e->c, b))) return NULL;
    if (e->n_args) {
        c->args = arena_alloc(X->C->arena, sizeof *c->args * (size_t)e->n_args);
        c->cap_args = e->n_args;
        for (int i = 0; i < e->n_args; i++)
            if (!(c->args[i] = copy(X, e->args[i], b))) return NULL;
        if (e->ops) {
            c->ops = arena_alloc(X->C->arena, sizeof *c->ops * (size_t)e->n_args);
            memcpy(c->ops, e->ops, sizeof *c->ops * (size_t)e->n_args);
        }
    }
    return c;
}

/* copy() of an optional expression: 0 with *out set (NULL stays NULL), or -1 (reported). */
static int copy_opt(xp *X, ast_expr **out, const ast_expr *e, const binding *b)
{
    *out = e ? copy(X, e, b) : NULL;
    return e && !*out ? -1 : 0;
}

/* ---- declarations --------------------------------------------------------------------------- */

/* 1 when `name` is the name of a member of an array other than `self`. */
static const array_def *member_of(const xp *X, const char *name, const array_def *self)
{
    for (int i = 0; i < X->n_arrays; i++) {
        const array_def *a = &X->arrays[i];
        size_t n = strlen(a->name);
        if (a == self || strncmp(name, a->name, n) || name[n] < '1' || name[n] > '9') continue;
        char *end;
        long k = strtol(name + n, &end, 10);
        if (!*end && k >= 1 && k <= a->n) return a;
    }
    return NULL;
}

/* Its size, from `field NAME[N]`, or -1 (reported). */
static int array_size(xp *X, const ast_kwarg *kw)
{
    const ast_expr *ix = kw->array;
    if (ix->n_args != 1) {
        diag_error(X->C->d, ix->loc, "field array '%s' takes one size, %s[N], not %d", kw->name, kw->name, ix->n_args);
        return -1;
    }
    double v;
    int dim = X->C->dim;
    X->C->dim = 3;
    int bad = sema_check_expr(X->C, ix->args[0], NULL) || lower_const_value(X->C, ix->args[0], &v) < 0;
    X->C->dim = dim;
    if (bad) return -1;
    char num[32];
    if (v != floor(v) || v < 1 || v > PJ_MAX_ARRAY_MEMBERS) {
        diag_error(X->C->d, ix->args[0]->loc, "the size of field array '%s' must be a whole number from 1 to %d, not %s",
                   kw->name, PJ_MAX_ARRAY_MEMBERS, diag_number(num, sizeof num, v));
        return -1;
    }
    return (int)v;
}

/* The arrays the field statements declare (X->arrays). Returns the errors reported. */
static int declare_arrays(xp *X)
{
    const ast_program *P = X->C->ast;
    int errors = 0, cap = 0;
    for (int i = 0; i < P->n_stmts; i++)
        for (int j = 0; j < P->stmts[i]->n_kwargs; j++) cap += P->stmts[i]->kwargs[j].array != NULL;
    X->arrays = arena_alloc(X->C->arena, sizeof *X->arrays * (size_t)(cap + 1));
    for (int i = 0; i < P->n_stmts; i++) {
        const ast_stmt *st = P->stmts[i];
        for (int j = 0; j < st->n_kwargs; j++) {
            const ast_kwarg *kw = &st->kwargs[j];
            if (!kw->array) continue;
            if (st->kind != ST_FIELD) {
                diag_error(X->C->d, kw->loc, "'%s[...]' declares an array, and only a field can be one (field %s[N] = ...)",
                           kw->name, kw->name);
                errors++;
                continue;
            }
            int n = array_size(X, kw);
            if (n < 0 || array_named(X, kw->name)) { /* a second definition is sema's duplicate */
                errors += n < 0;
                continue;
            }
            X->arrays[X->n_arrays++] = (array_def){kw->name, n, kw->loc};
        }
    }
    /* the members' names are new names: nothing else may have them */
    for (int i = 0; i < X->n_arrays; i++) {
        const array_def *a = &X->arrays[i];
        for (int k = 1; k <= a->n; k++) {
            const char *m = member_name(X, a->name, k);
            symbol *s = sema_lookup(X->C, m);
            const array_def *other = s ? NULL : member_of(X, m, a);
            if (!s && !other) continue;
            if (s)
                diag_error(X->C->d, a->loc, "field array '%s' names its members %s1 ... %s%d, and '%s' is already a %s "
                           "(line %d)", a->name, a->name, a->name, a->n, m, sema_kind_text(s->kind), s->loc.line);
            else
                diag_error(X->C->d, a->loc, "field array '%s' names its members %s1 ... %s%d, and '%s' is also a member "
                           "of field array '%s' (line %d)", a->name, a->name, a->name, a->n, m, other->name,
                           other->loc.line);
            errors++;
            break;
        }
    }
    return errors;
}

/* ---- statements ----------------------------------------------------------------------------- */

typedef PJ_VEC(ast_stmt *) stmt_list;

static ast_stmt *stmt_copy(xp *X, const ast_stmt *st)
{
    ast_stmt *c = arena_alloc(X->C->arena, sizeof *c);
    *c = *st;
    return c;
}

/* A field statement: an array's kwarg becomes its members, i bound in the value. */
static int expand_field(xp *X, ast_stmt *st)
{
    PJ_VEC(ast_kwarg) out = {0};
    for (int j = 0; j < st->n_kwargs; j++) {
        const ast_kwarg *kw = &st->kwargs[j];
        const array_def *a = kw->array ? array_named(X, kw->name) : NULL;
        if (!a || a->loc.line != kw->loc.line || a->loc.col != kw->loc.col) { /* a plain field (or a duplicate) */
            ast_kwarg c = *kw;
            c.array = NULL;
            if (copy_opt(X, &c.value, kw->value, NULL) < 0) return -1;
            vec_push(X->C->arena, &out, c);
            continue;
        }
        symbol *s = sema_lookup(X->C, "i");
        if (s && mentions(kw->value, "i")) {
            diag_error(X->C->d, kw->value->loc, "in the initial value of field array '%s', i is the member number, and "
                       "'i' is also a %s (line %d): rename the %s", a->name, sema_kind_text(s->kind), s->loc.line,
                       sema_kind_text(s->kind));
            return -1;
        }
        for (int k = 1; k <= a->n; k++) {
            ast_kwarg c = *kw;
            c.array = NULL;
            c.name = member_name(X, a->name, k);
            binding i = {"i", k, kw->loc, "field array", NULL};
            if (copy_opt(X, &c.value, kw->value, &i) < 0) return -1;
            vec_push(X->C->arena, &out, c);
        }
    }
    st->kwargs = out.items;
    st->n_kwargs = out.len;
    return 0;
}

/* eq dt(eta[i]) = ...: one equation per member; eq dt(eta[2]) = ...: one. */
static int expand_eq(xp *X, const ast_stmt *st, stmt_list *out)
{
    const array_def *a = array_named(X, st->name);
    if (!st->member) {
        if (a) {
            diag_error(X->C->d, st->name_loc, "'%s' is an array of %d fields: write eq dt(%s[i]) = ... (one equation "
                       "per member) or eq dt(%s[1]) = ...", st->name, a->n, st->name, st->name);
            return -1;
        }
        ast_stmt *c = stmt_copy(X, st);
        if (copy_opt(X, &c->rhs, st->rhs, NULL) < 0) return -1;
        vec_push(X->C->arena, out, c);
        return 0;
    }
    if (!a) {
        symbol *s = sema_lookup(X->C, st->name);
        diag_error(X->C->d, st->name_loc, "eq dt(%s[...]): '%s' is %s%s, not a field array (field %s[N] declares one)",
                   st->name, st->name, s ? "a " : "not defined", s ? sema_kind_text(s->kind) : "", st->name);
        return -1;
    }
    if (strcmp(st->eq_op, "dt")) {
        diag_error(X->C->d, st->eq_op_loc, "an equation reads `eq dt(%s[i]) = ...`, not %s(%s[...])", st->name,
                   st->eq_op, st->name);
        return -1;
    }
    if (st->member->n_args != 1) {
        diag_error(X->C->d, st->member->loc, "'%s' is an array: %s[k] names its member k (one index, not %d)", st->name,
                   st->name, st->member->n_args);
        return -1;
    }
    const ast_expr *ix = st->member->args[0];
    int template = ix->kind == AST_NAME && !sema_lookup(X->C, ix->name);
    if (template && check_new_index(X, ix->name, ix->loc, "eq", NULL) < 0) return -1;
    int from = 1, to = a->n;
    if (!template) {
        symbol *s = ix->kind == AST_NAME ? sema_lookup(X->C, ix->name) : NULL;
        if (s && s->kind != SYM_CONST) {
            diag_error(X->C->d, ix->loc, "dt(%s[%s]): '%s' is a %s, not an index: the member is an index of its own "
                       "(%s[i]) or a whole constant (%s[2])", st->name, ix->name, ix->name, sema_kind_text(s->kind),
                       st->name, st->name);
            return -1;
        }
        if ((from = to = member_number(X, a, ix, NULL)) < 0) return -1;
    }
    for (int k = from; k <= to; k++) {
        ast_stmt *c = stmt_copy(X, st);
        c->name = member_name(X, a->name, k);
        c->member = NULL;
        binding i = {template ? ix->name : "", k, ix->loc, "eq", NULL};
        if (copy_opt(X, &c->rhs, st->rhs, template ? &i : NULL) < 0) return -1;
        vec_push(X->C->arena, out, c);
    }
    return 0;
}

/* The indices of a condition that nothing binds (names in an array's index that are no symbol):
 * up to 2 distinct, in *found. */
static void unbound_indices(xp *X, const ast_expr *e, const binding *b, const char **found, pj_loc *at, int *n)
{
    if (!e) return;
    if (e->kind == AST_INDEX && array_named(X, e->name) && member_index(e)) {
        const ast_expr *ix = member_index(e);
        if (ix->kind == AST_NAME && free_name(X, ix->name, b) && *n < 2 && !(*n == 1 && !strcmp(found[0], ix->name))) {
            at[*n] = ix->loc;
            found[(*n)++] = ix->name;
        }
    }
    binding inner = {"", 0, e->loc, "", b};
    if (is_reduction_call(X, e) && e->n_args == 2 && e->args[0]->kind == AST_NAME) inner.name = e->args[0]->name;
    unbound_indices(X, e->a, &inner, found, at, n);
    unbound_indices(X, e->b, &inner, found, at, n);
    unbound_indices(X, e->c, &inner, found, at, n);
    for (int i = 0; i < e->n_args; i++) unbound_indices(X, e->args[i], &inner, found, at, n);
}

/* on SIDES: eta[i] = ...: one condition per member, over the condition's one unbound index. */
static int expand_on(xp *X, const ast_stmt *st, stmt_list *out)
{
    const ast_expr *parts[4] = {st->lhs, st->rhs, st->lhs2, st->rhs2};
    const char *found[2];
    pj_loc at[2];
    int n_found = 0;
    for (int p = 0; p < 4; p++) unbound_indices(X, parts[p], NULL, found, at, &n_found);
    if (n_found > 1) {
        diag_error(X->C->d, at[1], "a boundary condition runs over one index, and this one has two, '%s' and '%s'",
                   found[0], found[1]);
        return -1;
    }
    int n = 1;
    if (n_found == 1 && (n = index_range(X, parts, 4, found[0], at[0], "the boundary condition")) < 0) return -1;
    for (int k = 1; k <= n; k++) {
        binding i = {n_found ? found[0] : "", k, n_found ? at[0] : st->loc, "boundary condition", NULL};
        const binding *b = n_found ? &i : NULL;
        ast_stmt *c = stmt_copy(X, st);
        if (copy_opt(X, &c->lhs, st->lhs, b) < 0 || copy_opt(X, &c->rhs, st->rhs, b) < 0 ||
            copy_opt(X, &c->lhs2, st->lhs2, b) < 0 || copy_opt(X, &c->rhs2, st->rhs2, b) < 0)
            return -1;
        vec_push(X->C->arena, out, c);
    }
    return 0;
}

/* output fields = eta c: an array's name lists its members. Returns 0, or -1 (reported). */
static int expand_output_fields(xp *X, ast_kwarg *kw)
{
    PJ_VEC(ast_word) words = {0};
    const array_def *first = kw->value && kw->value->kind == AST_NAME ? array_named(X, kw->value->name) : NULL;
    for (int w = -1; w < kw->n_words; w++) {
        const array_def *a = w < 0 ? first : array_named(X, kw->words[w].text);
        pj_loc loc = w < 0 ? kw->value->loc : kw->words[w].loc;
        if (!a && w >= 0) vec_push(X->C->arena, &words, kw->words[w]);
        for (int k = w < 0 ? 2 : 1; a && k <= a->n; k++)
            vec_push(X->C->arena, &words, ((ast_word){member_name(X, a->name, k), loc}));
    }
    kw->words = words.items;
    kw->n_words = words.len;
    if (!first) return copy_opt(X, &kw->value, kw->value, NULL);
    ast_expr *v = new_node(X, kw->value);
    if (!v) return -1;
    v->name = member_name(X, first->name, 1);
    kw->value = v;
    return 0;
}

/* Any other statement: its expressions copied, func and flux bodies with their arguments. */
static int expand_other(xp *X, const ast_stmt *st, stmt_list *out)
{
    ast_stmt *c = stmt_copy(X, st);
    if (st->kind == ST_FIELD) { /* from the text: an array's value is copied per member */
        if (expand_field(X, c) < 0) return -1;
        vec_push(X->C->arena, out, c);
        return 0;
    }
    X->def = st->kind == ST_FUNC || st->kind == ST_FLUX ? st : NULL;
    int bad = copy_opt(X, &c->lhs, st->lhs, NULL) < 0 || copy_opt(X, &c->rhs, st->rhs, NULL) < 0 ||
              copy_opt(X, &c->lhs2, st->lhs2, NULL) < 0 || copy_opt(X, &c->rhs2, st->rhs2, NULL) < 0;
    X->def = NULL;
    if (bad) return -1;
    if (st->n_kwargs) {
        c->kwargs = arena_alloc(X->C->arena, sizeof *c->kwargs * (size_t)st->n_kwargs);
        memcpy(c->kwargs, st->kwargs, sizeof *c->kwargs * (size_t)st->n_kwargs);
    }
    for (int j = 0; j < c->n_kwargs; j++) {
        ast_kwarg *kw = &c->kwargs[j];
        if (st->kind == ST_OUTPUT && kw->name && !strcmp(kw->name, "fields") && kw->value) {
            if (expand_output_fields(X, kw) < 0) return -1;
            continue;
        }
        if (copy_opt(X, &kw->value, kw->value, NULL) < 0) return -1;
        if (kw->n_more) {
            ast_expr **more = arena_alloc(X->C->arena, sizeof *more * (size_t)kw->n_more);
            for (int m = 0; m < kw->n_more; m++)
                if (copy_opt(X, &more[m], kw->more[m], NULL) < 0) return -1;
            kw->more = more;
        }
    }
    vec_push(X->C->arena, out, c);
    return 0;
}

static int uses_reduction(const ast_expr *e)
{
    if (!e) return 0;
    if (e->kind == AST_CALL && (!strcmp(e->name, "sum") || !strcmp(e->name, "prod"))) return 1;
    if (e->kind == AST_INDEX && e->a) return 1; /* eta[k][offsets] */
    if (uses_reduction(e->a) || uses_reduction(e->b) || uses_reduction(e->c)) return 1;
    for (int i = 0; i < e->n_args; i++)
        if (uses_reduction(e->args[i])) return 1;
    return 0;
}

/* 1 when the problem declares an array or calls sum or prod. */
static int arrays_used(const ast_program *P)
{
    for (int i = 0; i < P->n_stmts; i++) {
        const ast_stmt *st = P->stmts[i];
        if (st->member || uses_reduction(st->lhs) || uses_reduction(st->rhs) || uses_reduction(st->lhs2) ||
            uses_reduction(st->rhs2))
            return 1;
        for (int j = 0; j < st->n_kwargs; j++) {
            if (st->kwargs[j].array || uses_reduction(st->kwargs[j].value)) return 1;
            for (int m = 0; m < st->kwargs[j].n_more; m++)
                if (uses_reduction(st->kwargs[j].more[m])) return 1;
        }
    }
    return 0;
}

/* A field with two equations where an array's template gives one of them: reported once, at the
 * statement that repeats it (the equations' reader would report it once per member). */
static int check_equations(xp *X, ast_stmt **stmts, int n)
{
    for (int i = 0; i < n; i++) {
        if (stmts[i]->kind != ST_EQ) continue;
        for (int j = 0; j < i; j++) {
            if (stmts[j]->kind != ST_EQ || stmts[j] == stmts[i] || !stmts[i]->name || !stmts[j]->name ||
                strcmp(stmts[j]->name, stmts[i]->name))
                continue;
            diag_error(X->C->d, stmts[i]->name_loc, "field '%s' already has an equation at line %d", stmts[i]->name,
                       stmts[j]->loc.line);
            return -1;
        }
    }
    return 0;
}

int arrays_expand(compiler *C)
{
    ast_program *P = (ast_program *)C->ast;
    if (!P || !arrays_used(P)) return 0;
    xp X = {.C = C};
    if (declare_arrays(&X)) return -1;
    stmt_list out = {0};
    for (int i = 0; i < P->n_stmts; i++) {
        const ast_stmt *st = P->stmts[i];
        int r = st->kind == ST_EQ ? expand_eq(&X, st, &out) : st->kind == ST_ON ? expand_on(&X, st, &out)
                                                                                : expand_other(&X, st, &out);
        if (r < 0) return -1;
    }
    if (X.n_arrays && check_equations(&X, out.items, out.len) < 0) return -1;
    C->n_arrays = X.n_arrays; /* for the program (pj_program's arrays: the APIs name them) */
    C->array_names = arena_alloc(C->arena, sizeof *C->array_names * (size_t)(X.n_arrays + 1));
    C->array_sizes = arena_alloc(C->arena, sizeof *C->array_sizes * (size_t)(X.n_arrays + 1));
    for (int i = 0; i < X.n_arrays; i++) {
        C->array_names[i] = X.arrays[i].name;
        C->array_sizes[i] = X.arrays[i].n;
    }
    P->stmts = out.items;
    P->n_stmts = out.len;
    P->n_nodes += X.nodes;
    return 1;
}
