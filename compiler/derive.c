/* derive.c — forward-mode derivatives of a kernel (see derive.h).
 *
 *   check          a verified KIR_STAGE or KIR_RHS kernel, every op with a derivative rule
 *   columns        the distinct loads, sorted (slot, field, off z, y, x)
 *   primal         the source's nodes rebuilt in the new kernel (the same nodes: hash-consed)
 *   sweep          per load, nodes in topological order: d[id] from its operands' d by the op's
 *                  rule (the derivative column of kir_ops.h, expanded in op_rule below)
 *   outputs        per source output, per load, each derivative not structurally zero
 *   kir_finish + kir_verify
 * derive_reads: what a Jacobian's outputs depend on (a linear problem's is independent of the state)
 */
#include "derive.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZERO (-1) /* a derivative known to be zero: no node */

#define FAIL(...)                                              \
    do {                                                       \
        if (err && err_len) snprintf(err, err_len, __VA_ARGS__); \
        goto fail;                                             \
    } while (0)

/* The derivative column of kir_ops.h for op, applied to operands a, b and result r (node ids in
 * kernel k): returns the rule and, for DERIVE_CHAIN, sets *pa (when need_a) and *pb (when
 * need_b) to the partial derivatives by the first and second operand. With neither needed no
 * node is built (k may then be NULL). */
static derive_rule op_rule(kir_kernel *k, kir_op op, int a, int b, int r, int need_a, int need_b, int *pa,
                           int *pb)
{
#define A a
#define B b
#define R r
#define NUM(v) kir_const(k, (v))
#define OP1(o, x) kir_op1(k, KIR_##o, (x))
#define OP2(o, x, y) kir_op2(k, KIR_##o, (x), (y))
#define OP3(o, x, y, z) kir_op3(k, KIR_##o, (x), (y), (z))
#define D0 return DERIVE_ZERO
#define DV return DERIVE_VAR
#define DS return DERIVE_SELECT
#define DF return DERIVE_FMA
#define D1(p)                        \
    do {                             \
        if (need_a) *pa = (p);       \
        return DERIVE_CHAIN;         \
    } while (0)
#define D2(p, q)                     \
    do {                             \
        if (need_a) *pa = (p);       \
        if (need_b) *pb = (q);       \
        return DERIVE_CHAIN;         \
    } while (0)
    switch (op) { /* a line whose derivative column is empty falls out as DERIVE_NONE */
#define X(name, text, arity, type, libm, user, deriv) \
    case KIR_##name: {                               \
        deriv;                                       \
    } break;
        KIR_OPS(X)
#undef X
    case KIR_N_OPS: break;
    }
    return DERIVE_NONE;
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

derive_rule derive_op_rule(kir_op op)
{
    if ((unsigned)op >= KIR_N_OPS) return DERIVE_NONE;
    return op_rule(NULL, op, -1, -1, -1, 0, 0, NULL, NULL);
}

/* ---- building derivative terms ----------------------------------------------------------- */

static int is_const(const kir_kernel *k, int id, double v)
{
    return id >= 0 && k->nodes[id].op == KIR_CONST && k->nodes[id].value == v;
}

/* ZERO for a derivative that is a constant zero (folded), so no term is built from it. */
static int nonzero(const kir_kernel *k, int d) { return d == ZERO || is_const(k, d, 0.0) ? ZERO : d; }

/* p * d without the trivial products. */
static int scale(kir_kernel *k, int p, int d)
{
    if (d == ZERO || is_const(k, p, 0.0)) return ZERO;
    if (is_const(k, p, 1.0)) return d;
    if (is_const(k, p, -1.0)) return kir_op1(k, KIR_NEG, d);
    if (is_const(k, d, 1.0)) return p;
    if (is_const(k, d, -1.0)) return kir_op1(k, KIR_NEG, p);
    return kir_op2(k, KIR_MUL, p, d);
}

/* s + t, where either may be ZERO and a negated term is subtracted. */
static int sum(kir_kernel *k, int s, int t)
{
    if (s == ZERO) return t;
    if (t == ZERO) return s;
    if (k->nodes[t].op == KIR_NEG) return kir_op2(k, KIR_SUB, s, k->nodes[t].arg[0]);
    if (k->nodes[s].op == KIR_NEG) return kir_op2(k, KIR_SUB, t, k->nodes[s].arg[0]);
    return kir_op2(k, KIR_ADD, s, t);
}

/* The source node id rebuilt in j (operands already mapped). */
static int copy_node(kir_kernel *j, const kir_node *n, const int *map)
{
    int off[3] = {n->off[0], n->off[1], n->off[2]};
    switch ((kir_op)n->op) {
    case KIR_CONST: return kir_const(j, n->value);
    case KIR_PARAM: return kir_param(j, n->index);
    case KIR_TIME: case KIR_DT: return kir_leaf(j, (kir_op)n->op);
    case KIR_SPACING: return kir_spacing(j, n->axis);
    case KIR_COORD: return kir_coord(j, n->axis, n->half);
    case KIR_LOAD: return kir_load(j, n->slot, n->index, off);
    case KIR_RAND: return kir_rand(j, n->index, n->axis, off);
    case KIR_EDGE: return kir_edge(j, n->axis, n->off[n->axis]);
    case KIR_METRIC: return kir_metric_node(j, j->metric, n->axis, n->index, n->off[n->axis]);
    default: break;
    }
    switch (kir_ops[n->op].arity) {
    case 1: return kir_op1(j, (kir_op)n->op, map[n->arg[0]]);
    case 2: return kir_op2(j, (kir_op)n->op, map[n->arg[0]], map[n->arg[1]]);
    default: return kir_op3(j, (kir_op)n->op, map[n->arg[0]], map[n->arg[1]], map[n->arg[2]]);
    }
}

/* ---- the columns: distinct loads in canonical order ----------------------------------------- */

static int load_order(const kir_node *x, const kir_node *y)
{
    if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
    if (x->index != y->index) return x->index < y->index ? -1 : 1;
    for (int a = 2; a >= 0; a--)
        if (x->off[a] != y->off[a]) return x->off[a] < y->off[a] ? -1 : 1;
    return 0;
}

static void sort_loads(const kir_kernel *k, int *ids, int n, int *tmp)
{
    /* bottom-up merge sort (insertion sort was quadratic in the loads: thousands of fields) */
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, a = lo, b = mid, t = lo;
            while (a < mid && b < hi) tmp[t++] = load_order(&k->nodes[ids[b]], &k->nodes[ids[a]]) < 0 ? ids[b++] : ids[a++];
            while (a < mid) tmp[t++] = ids[a++];
            while (b < hi) tmp[t++] = ids[b++];
        }
        memcpy(ids, tmp, sizeof *ids * (size_t)n);
    }
}

static int int_less(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

/* ---- the pass ----------------------------------------------------------------------------- */

/* Node id's derivative by load v, in j, from its operands' (d, by k's node; ZERO: none) and their
 * copies in j (map); one is j's constant 1. */
static int derive_node(kir_kernel *j, const kir_kernel *k, int id, int v, const int *d, const int *map, int one)
{
    const kir_node *n = &k->nodes[id];
    int arity = kir_ops[n->op].arity;
    if (arity == 0) return id == v ? one : ZERO;
    int da[3] = {ZERO, ZERO, ZERO}, any = 0;
    for (int a = 0; a < arity; a++) any |= (da[a] = d[n->arg[a]]) != ZERO;
    if (!any) return ZERO;
    int pa = ZERO, pb = ZERO, r;
    int a0 = map[n->arg[0]], a1 = arity > 1 ? map[n->arg[1]] : -1;
    switch (op_rule(j, (kir_op)n->op, a0, a1, map[id], da[0] != ZERO, da[1] != ZERO, &pa, &pb)) {
    case DERIVE_SELECT: {
        /* the condition is piecewise constant; each branch keeps its own derivative */
        int zero = kir_const(j, 0.0);
        r = da[1] == ZERO && da[2] == ZERO
                ? ZERO
                : kir_op3(j, KIR_SELECT, a0, da[1] == ZERO ? zero : da[1], da[2] == ZERO ? zero : da[2]);
        break;
    }
    case DERIVE_CHAIN: r = sum(j, scale(j, pa, da[0]), scale(j, pb, da[1])); break;
    case DERIVE_FMA: r = sum(j, sum(j, scale(j, a1, da[0]), scale(j, a0, da[1])), da[2]); break;
    default: r = ZERO; break; /* DERIVE_ZERO (NONE was refused above, VAR is a leaf) */
    }
    return nonzero(j, r);
}

kir_kernel *derive_jacobian(const kir_kernel *k, derive_entry **entries, int *n_entries, char *err,
                            size_t err_len)
{
    kir_kernel *j = NULL;
    int *map = NULL, *d = NULL, *loads = NULL, *trip = NULL;
    int *ustart = NULL, *users = NULL, *ostart = NULL, *outs = NULL, *reach = NULL;
    char *mark = NULL;
    derive_entry *ent = NULL;
    if (entries) *entries = NULL;
    if (n_entries) *n_entries = 0;
    if (!k || !entries || !n_entries) FAIL("derive: no kernel or no place for the descriptors");
    if (k->kind != KIR_STAGE && k->kind != KIR_RHS)
        FAIL("derive: kernel %s is not a stage kernel (outputs at the cell from loads)", k->name);
    char verr[200];
    if (kir_verify(k, verr, sizeof verr)) FAIL("derive: kernel %s: %s", k->name, verr);
    for (int id = 0; id < k->n_nodes; id++)
        if (derive_op_rule((kir_op)k->nodes[id].op) == DERIVE_NONE)
            FAIL("derive: kernel %s: op %s has no derivative rule in kir_ops.h", k->name,
                 kir_ops[k->nodes[id].op].text);

    size_t nn = (size_t)k->n_nodes + 1;
    map = malloc(sizeof *map * nn);
    d = malloc(sizeof *d * nn);
    loads = malloc(sizeof *loads * nn);
    /* Each column visits only the nodes that depend on its load (users, in node order), not every
       node after it: the pass was quadratic in the fields (every load times every node). */
    ustart = calloc(nn + 1, sizeof *ustart);
    users = malloc(sizeof *users * (3 * nn));
    ostart = calloc(nn + 1, sizeof *ostart);
    outs = malloc(sizeof *outs * ((size_t)k->n_outputs + 1));
    reach = malloc(sizeof *reach * nn);
    mark = calloc(nn, 1);
    if (!map || !d || !loads || !ustart || !users || !ostart || !outs || !reach || !mark) FAIL("derive: out of memory");
    for (int id = 0; id < k->n_nodes; id++)
        for (int a = 0; a < kir_ops[k->nodes[id].op].arity; a++) ustart[k->nodes[id].arg[a] + 1]++;
    for (int id = 0; id < k->n_nodes; id++) ustart[id + 1] += ustart[id];
    for (int id = 0; id < k->n_nodes; id++) map[id] = ustart[id]; /* map: the fill point, set again below */
    for (int id = 0; id < k->n_nodes; id++)
        for (int a = 0; a < kir_ops[k->nodes[id].op].arity; a++) users[map[k->nodes[id].arg[a]]++] = id;
    for (int o = 0; o < k->n_outputs; o++) ostart[k->outputs[o].node + 1]++;
    for (int id = 0; id < k->n_nodes; id++) ostart[id + 1] += ostart[id];
    for (int id = 0; id < k->n_nodes; id++) map[id] = ostart[id];
    for (int o = 0; o < k->n_outputs; o++) outs[map[k->outputs[o].node]++] = o;

    int n_loads = 0;
    for (int id = 0; id < k->n_nodes; id++)
        if (k->nodes[id].op == KIR_LOAD) loads[n_loads++] = id; /* hash-consed: each one distinct */
    sort_loads(k, loads, n_loads, reach);

    char name[32];
    snprintf(name, sizeof name, "%.27s.jac", k->name);
    if ((j = kir_new(KIR_JACOBIAN, k->dim, k->n_fields, k->n_params, k->n_slots, name))) j->metric = kir_metric_ref(k->metric);
    for (int id = 0; id < k->n_nodes; id++) map[id] = copy_node(j, &k->nodes[id], map);
    int one = kir_const(j, 1.0);

    for (int id = 0; id < k->n_nodes; id++) d[id] = ZERO;
    size_t n_trip = 0, cap_trip = 0;
    for (int c = 0; c < n_loads; c++) {
        int v = loads[c];
        /* the nodes that depend on v, in node order (topological: operands before users) */
        int n_reach = 0, top = 0;
        reach[n_reach++] = v;
        mark[v] = 1;
        while (top < n_reach) {
            int x = reach[top++];
            for (int u = ustart[x]; u < ustart[x + 1]; u++)
                if (!mark[users[u]]) {
                    mark[users[u]] = 1;
                    reach[n_reach++] = users[u];
                }
        }
        qsort(reach, (size_t)n_reach, sizeof *reach, int_less);
        for (int r = 0; r < n_reach; r++) {
            int id = reach[r];
            d[id] = derive_node(j, k, id, v, d, map, one);
        }
        for (int r = 0; r < n_reach; r++) {
            int id = reach[r];
            for (int q = ostart[id]; q < ostart[id + 1] && d[id] != ZERO; q++) {
                if (n_trip == cap_trip) {
                    cap_trip = cap_trip ? 2 * cap_trip : 64;
                    int *t = realloc(trip, sizeof *trip * 3 * cap_trip);
                    if (!t) FAIL("derive: out of memory");
                    trip = t;
                }
                trip[3 * n_trip] = outs[q];
                trip[3 * n_trip + 1] = c;
                trip[3 * n_trip + 2] = d[id];
                n_trip++;
            }
        }
        for (int r = 0; r < n_reach; r++) {
            d[reach[r]] = ZERO;
            mark[reach[r]] = 0;
        }
    }

    /* the entries by output, then by column (the triples are by column: a stable counting sort) */
    int n_out = (int)n_trip;
    if (n_trip > (size_t)INT_MAX / 2) FAIL("derive: too many derivatives");
    int *by_out = calloc((size_t)k->n_outputs + 1, sizeof *by_out), *order = malloc(sizeof *order * (n_trip + 1));
    if (!by_out || !order) {
        free(by_out);
        free(order);
        FAIL("derive: out of memory");
    }
    for (size_t t = 0; t < n_trip; t++) by_out[trip[3 * t] + 1]++;
    for (int o = 0; o < k->n_outputs; o++) by_out[o + 1] += by_out[o];
    for (size_t t = 0; t < n_trip; t++) order[by_out[trip[3 * t]]++] = (int)t;
    free(by_out);
    if (n_out) {
        ent = malloc(sizeof *ent * (size_t)n_out);
        if (!ent) {
            free(order);
            FAIL("derive: out of memory");
        }
    }
    for (int e = 0; e < n_out; e++) {
        const int *t = &trip[3 * (size_t)order[e]];
        int o = t[0], node = t[2];
        const kir_node *ld = &k->nodes[loads[t[1]]];
        ent[e] = (derive_entry){o, k->outputs[o].slot, k->outputs[o].field, ld->slot, ld->index,
                                {ld->off[0], ld->off[1], ld->off[2]}};
        int buf = k->n_slots * k->n_fields + e;
        kir_add_output(j, buf / k->n_fields, buf % k->n_fields, node);
    }
    free(order);
    kir_finish(j);
    if (kir_verify(j, verr, sizeof verr)) FAIL("derive: internal error: %s does not verify: %s", j->name, verr);
    *entries = ent;
    *n_entries = n_out;
    ent = NULL; /* the caller's now */
    goto done;
fail:
    kir_free(j);
    j = NULL;
done:
    free(map);
    free(d);
    free(loads);
    free(trip);
    free(ustart);
    free(users);
    free(ostart);
    free(outs);
    free(reach);
    free(mark);
    free(ent);
    return j;
}

/* The nodes of k that its outputs depend on (live[id] = 1), or only those output o with
 * use[o] nonzero depends on (use NULL: every output); NULL when out of memory. */
static char *live_nodes(const kir_kernel *k, const char *use)
{
    char *live = calloc((size_t)k->n_nodes + 1, 1);
    if (!live) return NULL;
    for (int o = 0; o < k->n_outputs; o++)
        if (!use || use[o]) live[k->outputs[o].node] = 1;
    for (int id = k->n_nodes - 1; id >= 0; id--) /* topological order: users after operands */
        if (live[id])
            for (int a = 0; a < kir_ops[k->nodes[id].op].arity; a++)
                if (k->nodes[id].arg[a] >= 0) live[k->nodes[id].arg[a]] = 1;
    return live;
}

/* 1 when F (k) depends on an unknown through a piecewise-constant op (floor, a comparison, a
 * select's condition): its Jacobian misses the jumps, so F is not affine even if the Jacobian is
 * constant. -1 when out of memory. */
static int piecewise_in_unknowns(const kir_kernel *k, const int *unknown)
{
    char *live = live_nodes(k, NULL), *dep = calloc((size_t)k->n_nodes + 1, 1);
    int found = 0;
    if (!live || !dep) found = -1;
    for (int id = 0; id < k->n_nodes && !found; id++) {
        const kir_node *n = &k->nodes[id];
        int arity = kir_ops[n->op].arity;
        if (n->op == KIR_LOAD) dep[id] = unknown && unknown[n->index];
        for (int a = 0; a < arity; a++) dep[id] |= dep[n->arg[a]];
        if (!live[id] || !dep[id] || !arity) continue;
        derive_rule r = derive_op_rule((kir_op)n->op);
        if (r == DERIVE_ZERO || (r == DERIVE_SELECT && dep[n->arg[0]])) found = 1;
    }
    free(live);
    free(dep);
    return found;
}

/* derive_reads of the outputs that are derivatives by an unknown, all of them or (off_diagonal)
 * those off the diagonal: at another cell, or by another field. */
static unsigned reads_of(const kir_kernel *jac, const derive_entry *entries, const kir_kernel *f, const int *unknown,
                         int off_diagonal)
{
    unsigned reads = 0;
    if (!jac) return 0;
    char *use = calloc((size_t)jac->n_outputs + 1, 1), *live = NULL;
    for (int o = 0; use && o < jac->n_outputs; o++) {
        const derive_entry *d = &entries[o];
        use[o] = (!unknown || unknown[d->field]) &&
                 (!off_diagonal || d->off[0] || d->off[1] || d->off[2] || d->field != d->out_field);
    }
    if (use) live = live_nodes(jac, use);
    free(use);
    if (!live) return DERIVE_READS_UNKNOWN | DERIVE_READS_TIME; /* out of memory: assume the worst */
    for (int id = 0; id < jac->n_nodes; id++) {
        const kir_node *n = &jac->nodes[id];
        if (!live[id]) continue;
        switch ((kir_op)n->op) {
        case KIR_LOAD: reads |= unknown && unknown[n->index] ? DERIVE_READS_UNKNOWN : DERIVE_READS_FIELD; break;
        case KIR_TIME: case KIR_DT: reads |= DERIVE_READS_TIME; break;
        case KIR_PARAM: reads |= DERIVE_READS_PARAM; break;
        case KIR_RAND: reads |= DERIVE_READS_RAND; break;
        default: break;
        }
    }
    free(live);
    if (f && piecewise_in_unknowns(f, unknown)) reads |= DERIVE_READS_UNKNOWN;
    return reads;
}

unsigned derive_reads(const kir_kernel *jac, const derive_entry *entries, const kir_kernel *f, const int *unknown)
{
    return reads_of(jac, entries, f, unknown, 0);
}

unsigned derive_reads_off_diagonal(const kir_kernel *jac, const derive_entry *entries, const int *unknown)
{
    return reads_of(jac, entries, NULL, unknown, 1);
}

/* 1 when node `node` of k reads only constants, params and spacings (the same value at every cell,
 * time and state); -1 out of memory. */
static int position_free(const kir_kernel *k, int node)
{
    char *mark = calloc((size_t)node + 1, 1);
    if (!mark) return -1;
    mark[node] = 1;
    int free_of = 1;
    for (int id = node; id >= 0 && free_of; id--) {
        if (!mark[id]) continue;
        const kir_node *n = &k->nodes[id];
        if (kir_ops[n->op].arity == 0 && n->op != KIR_CONST && n->op != KIR_PARAM && n->op != KIR_SPACING) free_of = 0;
        for (int a = 0; a < kir_ops[n->op].arity; a++)
            if (n->arg[a] >= 0) mark[n->arg[a]] = 1;
    }
    free(mark);
    return free_of;
}

int derive_symmetric(const kir_kernel *jac, const derive_entry *entries, int n_entries, const int *unknown,
                     const int periodic[3])
{
    for (int e = 0; e < n_entries; e++) {
        const derive_entry *d = &entries[e];
        if (unknown && !unknown[d->field]) continue;
        int axes = 0, off = 0;
        for (int a = 0; a < 3; a++) {
            axes += d->off[a] != 0;
            off |= d->off[a] != 0;
            if (!periodic[a] && (d->off[a] > 1 || d->off[a] < -1)) return 0; /* a second ghost layer */
        }
        if (!off && d->out_field == d->field) continue; /* the diagonal: anything */
        if (axes > 1) return 0;                          /* a corner: folded off the diagonal */
        if (off && d->out_field != d->field) return 0;   /* a boundary folds it onto another field */
        if (off && position_free(jac, jac->outputs[e].node) != 1) return 0;
        int partner = -1;
        for (int f = 0; f < n_entries && partner < 0; f++)
            if (entries[f].out_field == d->field && entries[f].field == d->out_field && entries[f].off[0] == -d->off[0] &&
                entries[f].off[1] == -d->off[1] && entries[f].off[2] == -d->off[2])
                partner = f;
        if (partner < 0 || jac->outputs[partner].node != jac->outputs[e].node) return 0;
    }
    return 1;
}
