/* kir.c — building, folding, hashing, checking and printing the kernel IR (see kir.h). */
#include "kir.h"
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

const kir_op_info kir_ops[KIR_N_OPS] = {
#define L0 NULL, NULL, 0
#define L1(d, f, how) #d, #f, how
#define L2 L1
#define L3 L1
#define INTRINSIC KIR_LIBM_INTRINSIC
#define CALL KIR_LIBM_CALL
#define LIBMVEC KIR_LIBM_VEC
#define BUILTIN KIR_LIBM_BUILTIN
#define X(name, text, arity, type, libm, user, deriv) [KIR_##name] = {text, arity, KIR_##type, libm, user},
    KIR_OPS(X)
#undef X
#undef L0
#undef L1
#undef L2
#undef L3
#undef INTRINSIC
#undef CALL
#undef LIBMVEC
#undef BUILTIN
};

/* Out of memory never aborts: it sets k->failed, after which every builder returns node 0 (which
 * always exists: kir_new allocates room for it) and changes nothing, kir_finish does nothing
 * and kir_verify reports the failure. Whoever finishes the kernel turns that into an error. */
#define KIR_INITIAL_NODES 64

static int fail(kir_kernel *k)
{
    if (!k->failed && k->n_nodes == 0) {
        memset(&k->nodes[0], 0, sizeof k->nodes[0]);
        k->nodes[0].op = KIR_CONST;
        k->nodes[0].arg[0] = k->nodes[0].arg[1] = k->nodes[0].arg[2] = -1;
    }
    k->failed = 1;
    return 0;
}

kir_kernel *kir_new(kir_kind kind, int dim, int n_fields, int n_params, int n_slots, const char *name)
{
    kir_kernel *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    k->nodes = malloc(sizeof *k->nodes * KIR_INITIAL_NODES);
    k->table = malloc(sizeof *k->table * KIR_INITIAL_NODES);
    if (!k->nodes || !k->table) {
        kir_free(k);
        return NULL;
    }
    k->cap_nodes = k->table_cap = KIR_INITIAL_NODES;
    for (int i = 0; i < k->table_cap; i++) k->table[i] = -1;
    k->kind = kind;
    k->dim = dim;
    k->n_fields = n_fields;
    k->n_params = n_params;
    k->n_slots = n_slots;
    k->side = -1;
    snprintf(k->name, sizeof k->name, "%s", name ? name : "kernel");
    return k;
}

void kir_free(kir_kernel *k)
{
    if (!k) return;
    free(k->nodes);
    free(k->table);
    free(k->outputs);
    kir_metric_unref(k->metric);
    free(k);
}

static void *copy_of(const void *src, size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p && n) memcpy(p, src, n);
    return p;
}

/* A copy of the first n of src's elements in a block with room for cap (a kernel without
 * outputs has src == NULL and n == 0: nothing is copied). */
static void *copy_with_room(const void *src, size_t size, size_t n, size_t cap)
{
    void *p = malloc(size * (cap > n ? cap : n ? n : 1));
    if (p && n) memcpy(p, src, size * n);
    return p;
}

kir_kernel *kir_clone(const kir_kernel *k)
{
    kir_kernel *c = malloc(sizeof *c);
    if (!c) return NULL;
    *c = *k;
    c->nodes = copy_with_room(k->nodes, sizeof *c->nodes, (size_t)k->n_nodes, (size_t)k->cap_nodes);
    c->table = copy_of(k->table, sizeof *c->table * (size_t)k->table_cap);
    c->outputs = copy_with_room(k->outputs, sizeof *c->outputs, (size_t)k->n_outputs,
                                (size_t)k->cap_outputs);
    kir_metric_ref(c->metric);
    if (!c->nodes || !c->table || !c->outputs) {
        kir_free(c);
        return NULL;
    }
    return c;
}

static int table_rebuild(kir_kernel *k, int cap);

/* Outputs [first, first + n) of k with only the nodes they need, in k's order (their hashes
 * unchanged). A Jacobian's outputs are stored by position, so they take the subset's positions. */
kir_kernel *kir_subset(const kir_kernel *k, int first, int n)
{
    kir_kernel *c = calloc(1, sizeof *c);
    char *live = calloc((size_t)k->n_nodes + 1, 1);
    int *map = malloc(sizeof *map * ((size_t)k->n_nodes + 1));
    if (!c || !live || !map) goto oom;
    *c = *k;
    c->nodes = NULL;
    c->table = NULL;
    c->outputs = NULL;
    kir_metric_ref(c->metric);
    for (int i = first; i < first + n; i++) live[k->outputs[i].node] = 1;
    int count = 0;
    for (int id = k->n_nodes - 1; id >= 0; id--)
        if (live[id]) {
            count++;
            for (int j = 0; j < 3; j++)
                if (k->nodes[id].arg[j] >= 0) live[k->nodes[id].arg[j]] = 1;
        }
    int cap = KIR_INITIAL_NODES;
    while (cap < 2 * (count + 1)) cap *= 2;
    c->nodes = malloc(sizeof *c->nodes * (size_t)cap);
    c->outputs = malloc(sizeof *c->outputs * (size_t)(n > 0 ? n : 1));
    if (!c->nodes || !c->outputs) goto oom;
    c->cap_nodes = cap;
    c->n_nodes = 0;
    for (int id = 0; id < k->n_nodes; id++) {
        if (!live[id]) continue;
        kir_node nd = k->nodes[id];
        for (int j = 0; j < 3; j++)
            if (nd.arg[j] >= 0) nd.arg[j] = map[nd.arg[j]];
        map[id] = c->n_nodes;
        c->nodes[c->n_nodes++] = nd;
    }
    for (int i = 0; i < n; i++) {
        kir_output o = k->outputs[first + i];
        o.node = map[o.node];
        if (k->kind == KIR_JACOBIAN) {
            int at = k->n_slots * k->n_fields + i;
            o.slot = at / k->n_fields;
            o.field = at % k->n_fields;
        }
        c->outputs[i] = o;
    }
    c->n_outputs = c->cap_outputs = n;
    c->table_cap = 0;
    if (table_rebuild(c, cap) < 0) goto oom;
    free(live);
    free(map);
    kir_finish(c);
    return c;
oom:
    free(live);
    free(map);
    if (c) {
        free(c->nodes);
        free(c->outputs);
        free(c->table);
        free(c);
    }
    return NULL;
}

/* ---- hash-consing ---------------------------------------------------------------------- */

static uint64_t node_hash(const kir_kernel *k, const kir_node *n)
{
    struct {
        uint8_t op, type, axis;
        int8_t half, off[3];
        int16_t slot;
        int32_t index;
        double value;
        uint64_t args[3];
    } key;
    memset(&key, 0, sizeof key);
    key.op = n->op;
    key.type = n->type;
    key.axis = n->axis;
    key.half = n->half;
    memcpy(key.off, n->off, 3);
    key.slot = n->slot;
    key.index = n->index;
    key.value = n->value == 0 ? 0.0 * (signbit(n->value) ? -1 : 1) : n->value;
    if (n->op == KIR_CONST && isnan(n->value)) key.value = NAN;
    for (int i = 0; i < 3; i++) key.args[i] = n->arg[i] >= 0 ? k->nodes[n->arg[i]].hash : 0;
    if (n->op == KIR_METRIC) key.args[0] = k->metric ? k->metric->hash : 0; /* the tables' contents */
    return XXH3_64bits(&key, sizeof key);
}

static int same_node(const kir_node *a, const kir_node *b)
{
    if (a->op != b->op || a->type != b->type || a->axis != b->axis || a->half != b->half ||
        a->slot != b->slot || a->index != b->index || memcmp(a->off, b->off, 3) ||
        memcmp(a->arg, b->arg, sizeof a->arg))
        return 0;
    if (a->op == KIR_CONST) return memcmp(&a->value, &b->value, sizeof a->value) == 0;
    return 1;
}

/* Refills the hash-cons table from the nodes, in a new array of `cap` entries when cap differs.
 * Returns -1 (the old table kept) when that array cannot be allocated. */
static int table_rebuild(kir_kernel *k, int cap)
{
    if (cap != k->table_cap) {
        int *t = malloc(sizeof *t * (size_t)cap);
        if (!t) return -1;
        free(k->table);
        k->table = t;
        k->table_cap = cap;
    }
    for (int i = 0; i < cap; i++) k->table[i] = -1;
    for (int id = 0; id < k->n_nodes; id++) {
        size_t h = k->nodes[id].hash & (size_t)(cap - 1);
        while (k->table[h] >= 0) h = (h + 1) & (size_t)(cap - 1);
        k->table[h] = id;
    }
    return 0;
}

static int intern(kir_kernel *k, kir_node n)
{
    if (k->failed) return 0;
    n.hash = node_hash(k, &n);
    if (2 * (k->n_nodes + 1) > k->table_cap && table_rebuild(k, 2 * k->table_cap) < 0) return fail(k);
    size_t mask = (size_t)k->table_cap - 1, h = n.hash & mask;
    for (; k->table[h] >= 0; h = (h + 1) & mask) {
        kir_node *o = &k->nodes[k->table[h]];
        if (o->hash == n.hash && same_node(o, &n)) return k->table[h];
    }
    if (k->n_nodes == k->cap_nodes) {
        kir_node *grown = realloc(k->nodes, sizeof *k->nodes * 2 * (size_t)k->cap_nodes);
        if (!grown) return fail(k);
        k->nodes = grown;
        k->cap_nodes *= 2;
    }
    int id = k->n_nodes++;
    k->nodes[id] = n;
    k->table[h] = id;
    return id;
}

static kir_node blank(kir_op op)
{
    kir_node n;
    memset(&n, 0, sizeof n);
    n.op = (uint8_t)op;
    n.type = (uint8_t)kir_ops[op].type;
    n.arg[0] = n.arg[1] = n.arg[2] = -1;
    return n;
}

int kir_const(kir_kernel *k, double value)
{
    kir_node n = blank(KIR_CONST);
    n.value = value;
    return intern(k, n);
}

int kir_param(kir_kernel *k, int index)
{
    kir_node n = blank(KIR_PARAM);
    n.index = index;
    return intern(k, n);
}

int kir_leaf(kir_kernel *k, kir_op op) { return intern(k, blank(op)); }

int kir_spacing(kir_kernel *k, int axis)
{
    kir_node n = blank(KIR_SPACING);
    n.axis = (uint8_t)axis;
    return intern(k, n);
}

int kir_coord(kir_kernel *k, int axis, int half)
{
    kir_node n = blank(KIR_COORD);
    n.axis = (uint8_t)axis;
    n.half = (int8_t)half;
    return intern(k, n);
}

int kir_load(kir_kernel *k, int slot, int field, const int off[3])
{
    kir_node n = blank(KIR_LOAD);
    n.slot = (int16_t)slot;
    n.index = field;
    for (int i = 0; i < 3; i++) n.off[i] = (int8_t)off[i];
    return intern(k, n);
}

int kir_rand(kir_kernel *k, int site, int part, const int off[3])
{
    kir_node n = blank(KIR_RAND);
    n.index = site;
    n.axis = (uint8_t)(part == 2 ? 2 : 0); /* 0 rand(), 2 randn() (compiler/noise.h) */
    for (int i = 0; i < 3; i++) n.off[i] = (int8_t)off[i];
    return intern(k, n);
}

int kir_edge(kir_kernel *k, int axis, int off)
{
    kir_node n = blank(KIR_EDGE);
    n.axis = (uint8_t)axis;
    n.off[axis < 3 ? axis : 0] = (int8_t)off;
    return intern(k, n);
}

int kir_metric_node(kir_kernel *k, kir_metric *m, int axis, int t, int off)
{
    if (!k->metric) k->metric = kir_metric_ref(m);
    if (k->metric != m || !m) return fail(k);
    kir_node n = blank(KIR_METRIC);
    n.axis = (uint8_t)axis;
    n.index = t;
    n.off[axis < 3 ? axis : 0] = (int8_t)off;
    return intern(k, n);
}

static int is_const(const kir_kernel *k, int id, double v)
{
    const kir_node *n = &k->nodes[id];
    return n->op == KIR_CONST && n->value == v && !signbit(n->value) == !signbit(v);
}

/* Folding keeps IEEE results bit for bit: only rewrites that are exact for every input. */
static int build(kir_kernel *k, kir_op op, int a, int b, int c)
{
    if (k->failed) return 0;
    int ar = kir_ops[op].arity;
    int args[3] = {a, b, c};
    /* constants: numbers, and booleans (f2b of a number) */
    int all_const = ar > 0 && !(op == KIR_F2B && k->nodes[a].op == KIR_CONST &&
                                (k->nodes[a].value == 0 || k->nodes[a].value == 1));
    double v[3] = {0, 0, 0};
    for (int i = 0; i < ar && all_const; i++) {
        const kir_node *n = &k->nodes[args[i]];
        if (n->op == KIR_CONST) v[i] = n->value;
        else if (n->op == KIR_F2B && k->nodes[n->arg[0]].op == KIR_CONST) v[i] = k->nodes[n->arg[0]].value != 0;
        else all_const = 0;
    }
    if (all_const) {
        double r = kir_eval_scalar(op, v[0], v[1], v[2], 0);
        if (kir_ops[op].type == KIR_B) {
            /* keep booleans typed: true = not(false) */
            kir_node n = blank(KIR_F2B);
            n.arg[0] = kir_const(k, r != 0 ? 1.0 : 0.0);
            return intern(k, n);
        }
        return kir_const(k, r);
    }
    switch (op) {
    case KIR_MUL:
        if (is_const(k, b, 1.0)) return a;
        if (is_const(k, a, 1.0)) return b;
        break;
    case KIR_DIV:
        if (is_const(k, b, 1.0)) return a;
        break;
    case KIR_SUB:
        if (is_const(k, b, 0.0)) return a;
        break;
    case KIR_NEG:
        if (k->nodes[a].op == KIR_NEG) return k->nodes[a].arg[0];
        break;
    case KIR_SELECT: {
        const kir_node *cn = &k->nodes[a];
        if (cn->op == KIR_F2B && k->nodes[cn->arg[0]].op == KIR_CONST)
            return k->nodes[cn->arg[0]].value != 0 ? b : c;
        if (b == c) return b;
        break;
    }
    case KIR_B2F: {
        const kir_node *cn = &k->nodes[a];
        if (cn->op == KIR_F2B && k->nodes[cn->arg[0]].op == KIR_CONST)
            return kir_const(k, k->nodes[cn->arg[0]].value != 0 ? 1.0 : 0.0);
        break;
    }
    default:
        break;
    }
    /* commutative operations: order operands by hash so a+b and b+a are one node */
    if ((op == KIR_ADD || op == KIR_MUL || op == KIR_EQ || op == KIR_NE || op == KIR_AND ||
         op == KIR_OR) &&
        k->nodes[a].hash > k->nodes[b].hash) {
        int t = a;
        a = b;
        b = t;
    }
    kir_node n = blank(op);
    n.arg[0] = a;
    n.arg[1] = ar > 1 ? b : -1;
    n.arg[2] = ar > 2 ? c : -1;
    return intern(k, n);
}

int kir_as_f(kir_kernel *k, int node)
{
    return k->nodes[node].type == KIR_B ? build(k, KIR_B2F, node, -1, -1) : node;
}

int kir_as_b(kir_kernel *k, int node)
{
    return k->nodes[node].type == KIR_F ? build(k, KIR_F2B, node, -1, -1) : node;
}

/* Operands are converted to the types the operation takes. */
static int coerce(kir_kernel *k, kir_op op, int i, int node)
{
    int wants_b = op == KIR_AND || op == KIR_OR || op == KIR_NOT || (op == KIR_SELECT && i == 0);
    if (op == KIR_F2B || op == KIR_B2F) return node;
    return wants_b ? kir_as_b(k, node) : kir_as_f(k, node);
}

int kir_op1(kir_kernel *k, kir_op op, int a) { return build(k, op, coerce(k, op, 0, a), -1, -1); }

int kir_op2(kir_kernel *k, kir_op op, int a, int b)
{
    return build(k, op, coerce(k, op, 0, a), coerce(k, op, 1, b), -1);
}

int kir_op3(kir_kernel *k, kir_op op, int a, int b, int c)
{
    return build(k, op, coerce(k, op, 0, a), coerce(k, op, 1, b), coerce(k, op, 2, c));
}

void kir_import(kir_kernel *dst, const kir_kernel *src, const int *slot_map, const int *field_slot, int *node_map)
{
    kir_import_subst(dst, src, slot_map, field_slot, node_map, -1, -1);
}

void kir_import_subst(kir_kernel *dst, const kir_kernel *src, const int *slot_map, const int *field_slot, int *node_map,
                      int subst_field, int subst_node)
{
    for (int id = 0; id < src->n_nodes; id++) {
        const kir_node *n = &src->nodes[id];
        int a = n->arg[0] >= 0 ? node_map[n->arg[0]] : -1;
        int b = n->arg[1] >= 0 ? node_map[n->arg[1]] : -1;
        int c = n->arg[2] >= 0 ? node_map[n->arg[2]] : -1;
        int off[3] = {n->off[0], n->off[1], n->off[2]};
        switch ((kir_op)n->op) {
        case KIR_CONST: node_map[id] = kir_const(dst, n->value); break;
        case KIR_PARAM: node_map[id] = kir_param(dst, n->index); break;
        case KIR_TIME: case KIR_DT: node_map[id] = kir_leaf(dst, (kir_op)n->op); break;
        case KIR_SPACING: node_map[id] = kir_spacing(dst, n->axis); break;
        case KIR_COORD: node_map[id] = kir_coord(dst, n->axis, n->half); break;
        case KIR_RAND: node_map[id] = kir_rand(dst, n->index, n->axis, off); break;
        case KIR_EDGE: node_map[id] = kir_edge(dst, n->axis, n->off[n->axis]); break;
        case KIR_METRIC: node_map[id] = kir_metric_node(dst, src->metric, n->axis, n->index, n->off[n->axis]); break;
        case KIR_LOAD: {
            if (n->index == subst_field) {
                node_map[id] = subst_node;
                break;
            }
            int fixed = field_slot ? field_slot[n->index] : -1;
            node_map[id] = kir_load(dst, fixed >= 0 ? fixed : slot_map[n->slot], n->index, off);
            break;
        }
        default:
            switch (kir_ops[n->op].arity) {
            case 1: node_map[id] = kir_op1(dst, (kir_op)n->op, a); break;
            case 2: node_map[id] = kir_op2(dst, (kir_op)n->op, a, b); break;
            default: node_map[id] = kir_op3(dst, (kir_op)n->op, a, b, c); break;
            }
        }
    }
}

void kir_add_output(kir_kernel *k, int slot, int field, int node)
{
    if (k->failed) return;
    if (k->n_outputs == k->cap_outputs) {
        int cap = k->cap_outputs ? 2 * k->cap_outputs : 8;
        kir_output *grown = realloc(k->outputs, sizeof *k->outputs * (size_t)cap);
        if (!grown) {
            fail(k);
            return;
        }
        k->outputs = grown;
        k->cap_outputs = cap;
    }
    int value = kir_as_f(k, node);
    if (k->failed) return;
    k->outputs[k->n_outputs++] = (kir_output){slot, field, value};
}

/* ---- passes ---------------------------------------------------------------------------- */

/* Contraction: the sum of a product that nothing else uses becomes one fused multiply-add,
 * a * b + c rounded once (the first operand fused when both are such products). Every back end
 * computes it exactly (C's fma in the interpreter, llvm.fma, CUDA's fma), so the bits stay the
 * interpreter's everywhere, with one rounding and one instruction fewer (a 2D Laplacian step:
 * 15 floating-point operations a cell become 12). In place: the fused node keeps its position,
 * its operands come before it, the product is left dead. 0, or -1 out of memory. */
static int contract(kir_kernel *k)
{
    int *uses = calloc((size_t)k->n_nodes + 1, sizeof *uses), changed = 0;
    if (!uses) return -1;
    /* uses by live nodes only (the outputs and what they reach), counted from the outputs back */
    for (int i = 0; i < k->n_outputs; i++) uses[k->outputs[i].node]++;
    for (int id = k->n_nodes - 1; id >= 0; id--)
        if (uses[id])
            for (int j = 0; j < 3; j++)
                if (k->nodes[id].arg[j] >= 0) uses[k->nodes[id].arg[j]]++;
    for (int id = 0; id < k->n_nodes; id++) {
        kir_node *n = &k->nodes[id];
        for (int s = 0; s < 2 && n->op == KIR_ADD; s++) {
            const kir_node *m = &k->nodes[n->arg[s]];
            if (m->op != KIR_MUL || uses[n->arg[s]] != 1) continue;
            int c = n->arg[1 - s];
            n->op = KIR_FMA;
            n->arg[0] = m->arg[0];
            n->arg[1] = m->arg[1];
            n->arg[2] = c;
            changed = 1;
        }
        if (changed) n->hash = node_hash(k, n); /* operands' hashes may have changed too */
    }
    free(uses);
    return 0;
}

void kir_finish(kir_kernel *k)
{
    if (k->failed) return;
    if (contract(k) < 0) {
        fail(k);
        return;
    }
    XXH3_state_t *st = XXH3_createState();
    char *live = calloc((size_t)k->n_nodes + 1, 1);
    int *map = malloc(sizeof *map * ((size_t)k->n_nodes + 1));
    if (!st || !live || !map) {
        XXH3_freeState(st);
        free(live);
        free(map);
        fail(k);
        return;
    }
    for (int i = 0; i < k->n_outputs; i++) live[k->outputs[i].node] = 1;
    for (int id = k->n_nodes - 1; id >= 0; id--)
        if (live[id])
            for (int j = 0; j < 3; j++)
                if (k->nodes[id].arg[j] >= 0) live[k->nodes[id].arg[j]] = 1;
    int n = 0;
    for (int id = 0; id < k->n_nodes; id++) {
        if (!live[id]) continue;
        kir_node nd = k->nodes[id];
        for (int j = 0; j < 3; j++)
            if (nd.arg[j] >= 0) nd.arg[j] = map[nd.arg[j]];
        map[id] = n;
        k->nodes[n++] = nd;
    }
    k->n_nodes = n;
    for (int i = 0; i < k->n_outputs; i++) k->outputs[i].node = map[k->outputs[i].node];
    free(live);
    free(map);
    table_rebuild(k, k->table_cap); /* the same size: refilled in place, cannot fail */

    XXH3_128bits_reset(st);
    int32_t header[6] = {(int32_t)k->kind, k->dim, k->n_fields, k->n_params, k->n_slots, k->side};
    XXH3_128bits_update(st, header, sizeof header);
    for (int i = 0; i < k->n_outputs; i++) {
        struct { int32_t slot, field; uint64_t h; } o = {k->outputs[i].slot, k->outputs[i].field,
                                                         k->nodes[k->outputs[i].node].hash};
        XXH3_128bits_update(st, &o, sizeof o);
    }
    XXH128_hash_t h = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, h);
    memcpy(k->hash, canon.digest, 16);
}

int kir_verify(const kir_kernel *k, char *err, size_t err_len)
{
#define FAIL(...) do { if (err) snprintf(err, err_len, __VA_ARGS__); return -1; } while (0)
    if (k->failed) FAIL("out of memory while building kernel %s", k->name);
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        if (n->op >= KIR_N_OPS) FAIL("node %d: bad op %d", id, n->op);
        const kir_op_info *info = &kir_ops[n->op];
        if (n->type != info->type) FAIL("node %d (%s): wrong type", id, info->text);
        for (int j = 0; j < 3; j++) {
            if (j < info->arity) {
                if (n->arg[j] < 0 || n->arg[j] >= id) FAIL("node %d (%s): operand %d not before it", id, info->text, j);
                int want_b = n->op == KIR_AND || n->op == KIR_OR || n->op == KIR_NOT ||
                             (n->op == KIR_SELECT && j == 0) || n->op == KIR_B2F;
                if (n->op == KIR_F2B) want_b = 0;
                if ((k->nodes[n->arg[j]].type == KIR_B) != want_b)
                    FAIL("node %d (%s): operand %d has the wrong type", id, info->text, j);
            } else if (n->arg[j] != -1)
                FAIL("node %d (%s): extra operand", id, info->text);
        }
        if (n->op == KIR_LOAD) {
            if (n->slot < 0 || n->slot >= k->n_slots) FAIL("node %d: slot %d out of range", id, n->slot);
            if (n->index < 0 || n->index >= k->n_fields) FAIL("node %d: field %d out of range", id, n->index);
            for (int a = k->dim; a < 3; a++)
                if (n->off[a]) FAIL("node %d: offset along axis %d in a %dD kernel", id, a, k->dim);
            if (k->kind == KIR_INIT || k->kind == KIR_PARAMS) FAIL("node %d: load in a %s kernel", id, k->name);
        }
        if (n->op == KIR_RAND) {
            for (int a = k->dim; a < 3; a++)
                if (n->off[a]) FAIL("node %d: rand offset along axis %d in a %dD kernel", id, a, k->dim);
            if (k->kind == KIR_BC || k->kind == KIR_PARAMS) FAIL("node %d: rand in a %s kernel", id, k->name);
            if (n->index < 0 || n->index >= 65536 || (n->axis != 0 && n->axis != 2)) FAIL("node %d: rand site %d part %d", id, n->index, n->axis);
        }
        if (n->op == KIR_METRIC && (!k->metric || n->index < 0 || n->index >= KIR_MT_KINDS || !k->metric->len[n->axis < 3 ? n->axis : 0]))
            FAIL("node %d: metric table %d of axis %d is missing", id, n->index, n->axis);
        if ((n->op == KIR_COORD || n->op == KIR_SPACING || n->op == KIR_EDGE || n->op == KIR_METRIC) && n->axis >= k->dim)
            FAIL("node %d: axis %d in a %dD kernel", id, n->axis, k->dim);
        if (n->op == KIR_PARAM && (n->index < 0 || n->index >= k->n_params))
            FAIL("node %d: param %d out of range", id, n->index);
    }
    for (int i = 0; i < k->n_outputs; i++) {
        const kir_output *o = &k->outputs[i];
        if (o->node < 0 || o->node >= k->n_nodes) FAIL("output %d: bad node", i);
        if (k->nodes[o->node].type != KIR_F) FAIL("output %d: not a number", i);
        if (k->kind == KIR_REDUCE) {
            if (o->field != i || o->slot < KIR_RED_SUM || o->slot > KIR_RED_MIN)
                FAIL("output %d: a reduce kernel's output %d is (op, %d), not (%d, %d)", i, i, i, o->slot, o->field);
            continue;
        }
        if (o->field < 0 || (k->kind != KIR_PARAMS && o->field >= k->n_fields) ||
            (k->kind == KIR_PARAMS && o->field >= k->n_params))
            FAIL("output %d: field %d out of range", i, o->field);
        if (k->kind == KIR_JACOBIAN && o->slot * k->n_fields + o->field != k->n_slots * k->n_fields + i)
            FAIL("output %d: a jacobian kernel writes derivative %d into buffer %d, not (slot %d, field %d)", i, i,
                 k->n_slots * k->n_fields + i, o->slot, o->field);
    }
    return 0;
#undef FAIL
}

void kir_halo(const kir_kernel *k, int *halo)
{
    for (int f = 0; f < k->n_fields; f++) halo[f] = 0;
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        if (n->op != KIR_LOAD) continue;
        for (int a = 0; a < 3; a++) {
            int o = abs(n->off[a]);
            if (o > halo[n->index]) halo[n->index] = o;
        }
    }
}

int kir_values_per_cell(const kir_kernel *k)
{
    int n = k->n_outputs;
    /* one mark per (slot, field): linear (the scan of the nodes before each load was quadratic in the fields) */
    size_t slots = k->n_slots > 0 ? (size_t)k->n_slots : 0, fields = k->n_fields > 0 ? (size_t)k->n_fields : 0;
    unsigned char *seen = calloc(slots * fields + 1, 1);
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *a = &k->nodes[id];
        if (a->op != KIR_LOAD) continue;
        if (seen && a->slot >= 0 && (size_t)a->slot < slots && a->index >= 0 && (size_t)a->index < fields) {
            size_t i = (size_t)a->slot * fields + (size_t)a->index;
            n += !seen[i];
            seen[i] = 1;
            continue;
        }
        int first = 1; /* the first load of its (slot, field); a kernel kir_verify would refuse, or no memory */
        for (int j = 0; j < id && first; j++)
            first = !(k->nodes[j].op == KIR_LOAD && k->nodes[j].slot == a->slot && k->nodes[j].index == a->index);
        n += first;
    }
    free(seen);
    return n;
}

void kir_halo_axes(const kir_kernel *k, int halo[3])
{
    halo[0] = halo[1] = halo[2] = 0;
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        if (n->op != KIR_LOAD) continue;
        for (int a = 0; a < 3; a++)
            if (abs(n->off[a]) > halo[a]) halo[a] = abs(n->off[a]);
    }
}

const char *kir_kind_name(kir_kind kind)
{
    static const char *const names[] = {[KIR_STAGE] = "stage", [KIR_INIT] = "init", [KIR_BC] = "bc",
                                        [KIR_PARAMS] = "params", [KIR_RHS] = "rhs",
                                        [KIR_JACOBIAN] = "jacobian", [KIR_REDUCE] = "reduce"};
    return (unsigned)kind < sizeof names / sizeof *names && names[kind] ? names[kind] : "?";
}

void kir_hash_hex(const kir_kernel *k, char out[33])
{
    for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", k->hash[i]);
}

static const char *axis_name = "xyz";

void kir_print(const kir_kernel *k, FILE *out, const char *const *field_names,
               const char *const *param_names)
{
    char hex[33];
    kir_hash_hex(k, hex);
    fprintf(out, "kernel %s  (%s, %dD, %d nodes, hash %s)\n", k->name, kir_kind_name(k->kind), k->dim,
            k->n_nodes, hex);
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        fprintf(out, "  %%%-4d = %s", id, kir_ops[n->op].text);
        switch (n->op) {
        case KIR_CONST: fprintf(out, " %.17g", n->value); break;
        case KIR_PARAM:
            if (param_names) fprintf(out, " %s", param_names[n->index]);
            else fprintf(out, " p%d", n->index);
            break;
        case KIR_SPACING: fprintf(out, " %c", axis_name[n->axis]); break;
        case KIR_COORD: fprintf(out, " %c%+g", axis_name[n->axis], n->half * 0.5); break;
        case KIR_LOAD:
            if (field_names) fprintf(out, " %s", field_names[n->index]);
            else fprintf(out, " f%d", n->index);
            fprintf(out, "@%d [", n->slot);
            for (int a = 0; a < k->dim; a++) fprintf(out, "%s%d", a ? "," : "", n->off[a]);
            fprintf(out, "]");
            break;
        case KIR_EDGE: fprintf(out, " %c%+d", axis_name[n->axis], n->off[n->axis]); break;
        case KIR_METRIC: fprintf(out, " %s %c%+d", kir_metric_names[n->index < KIR_MT_KINDS ? n->index : 0], axis_name[n->axis], n->off[n->axis]); break;
        case KIR_RAND:
            fprintf(out, " site %d part %d [", n->index, n->axis);
            for (int a = 0; a < k->dim; a++) fprintf(out, "%s%d", a ? "," : "", n->off[a]);
            fprintf(out, "]");
            break;
        default:
            for (int j = 0; j < kir_ops[n->op].arity; j++) fprintf(out, " %%%d", n->arg[j]);
        }
        fprintf(out, "%s\n", n->type == KIR_B ? "  : bool" : "");
    }
    for (int i = 0; i < k->n_outputs; i++) {
        const kir_output *o = &k->outputs[i];
        if (k->kind == KIR_PARAMS)
            fprintf(out, "  %s = %%%d\n", param_names ? param_names[o->field] : "param", o->node);
        else if (k->kind == KIR_BC)
            fprintf(out, "  %c(%s) = %%%d\n", "abcl"[o->slot & 3], field_names ? field_names[o->field] : "f", o->node);
        else if (k->kind == KIR_JACOBIAN)
            fprintf(out, "  store d%d = %%%d\n", i, o->node);
        else if (k->kind == KIR_REDUCE)
            fprintf(out, "  %s r%d = %%%d\n", o->slot == KIR_RED_SUM ? "sum" : o->slot == KIR_RED_MAX ? "max" : "min", i,
                    o->node);
        else if (field_names)
            fprintf(out, "  store %s@%d = %%%d\n", field_names[o->field], o->slot, o->node);
        else
            fprintf(out, "  store f%d@%d = %%%d\n", o->field, o->slot, o->node);
    }
}

double kir_eval_scalar(kir_op op, double a, double b, double c, int single)
{
    /* libm's functions, from the table (kir_ops.h); in single precision of the operands rounded to
       float, as the interpreter computes them */
    switch (op) {
#define L0 break
#define L1(d, f, how) return single ? (double)f((float)a) : d(a)
#define L2(d, f, how) return single ? (double)f((float)a, (float)b) : d(a, b)
#define L3(d, f, how) return single ? (double)f((float)a, (float)b, (float)c) : d(a, b, c)
#define X(name, text, arity, type, libm, user, deriv) \
    case KIR_##name:                                  \
        libm;
        KIR_OPS(X)
#undef X
#undef L0
#undef L1
#undef L2
#undef L3
    case KIR_N_OPS: break;
    }
    if (single) {
        float x = (float)a, y = (float)b;
        switch (op) {
        case KIR_NEG: return -x;
        case KIR_ADD: return x + y;
        case KIR_SUB: return x - y;
        case KIR_MUL: return x * y;
        case KIR_DIV: return x / y;
        case KIR_LT: return x < y;
        case KIR_LE: return x <= y;
        case KIR_GT: return x > y;
        case KIR_GE: return x >= y;
        case KIR_EQ: return x == y;
        case KIR_NE: return x != y;
        case KIR_F2B: return x != 0;
        case KIR_SELECT: return a != 0 ? (float)b : (float)c;
        default: break;
        }
    }
    switch (op) {
    case KIR_CONST: case KIR_PARAM: case KIR_TIME: case KIR_DT: case KIR_SPACING:
    case KIR_COORD: case KIR_LOAD: case KIR_RAND: case KIR_EDGE: case KIR_METRIC: case KIR_N_OPS:
        return NAN; /* leaves are not evaluated here */
    case KIR_NEG: return -a;
    case KIR_ADD: return a + b;
    case KIR_SUB: return a - b;
    case KIR_MUL: return a * b;
    case KIR_DIV: return a / b;
    case KIR_LT: return a < b;
    case KIR_LE: return a <= b;
    case KIR_GT: return a > b;
    case KIR_GE: return a >= b;
    case KIR_EQ: return a == b;
    case KIR_NE: return a != b;
    case KIR_AND: return (a != 0) & (b != 0);
    case KIR_OR: return (a != 0) | (b != 0);
    case KIR_NOT: return a == 0;
    case KIR_SELECT: return a != 0 ? b : c;
    case KIR_B2F: return a != 0 ? 1.0 : 0.0;
    case KIR_F2B: return a != 0;
    default: break; /* libm's functions: above */
    }
    return NAN;
}

double kir_eval_uniform(const kir_kernel *k, int node, const double *params, double t)
{
    if (node < 0) return NAN;
    double small[1024]; /* typical param kernels: no allocation, so nothing can run out */
    double *v = node < 1024 ? small : malloc(sizeof *v * ((size_t)node + 1));
    if (!v) return NAN;
    for (int id = 0; id <= node; id++) {
        const kir_node *n = &k->nodes[id];
        double a = n->arg[0] >= 0 ? v[n->arg[0]] : 0, b = n->arg[1] >= 0 ? v[n->arg[1]] : 0,
               c = n->arg[2] >= 0 ? v[n->arg[2]] : 0;
        switch (n->op) {
        case KIR_CONST: v[id] = n->value; break;
        case KIR_PARAM: v[id] = params ? params[n->index] : NAN; break;
        case KIR_TIME: v[id] = t; break;
        case KIR_DT: case KIR_SPACING: case KIR_COORD: case KIR_LOAD: case KIR_RAND: case KIR_EDGE: case KIR_METRIC: v[id] = NAN; break;
        default: v[id] = kir_eval_scalar((kir_op)n->op, a, b, c, 0);
        }
    }
    double r = v[node];
    if (v != small) free(v);
    return r;
}

/* The params in one pass over the nodes (linear; evaluating each output's nodes from the first was quadratic in the
   count: 10^5 params took 25 s). The values are those of evaluating the outputs one after another, each with the
   params the outputs before it wrote, bit for bit, whenever each read of a written param (a PARAM node) comes after
   the node of the one output that writes it and before the node of every output after that one in order: the front
   end's kernels do (a param's expression reads params declared before it only). A kernel where that does not hold
   is evaluated output after output, as before. */
static int params_in_one_pass(const kir_kernel *k, const unsigned char *fixed, int *writer, int *sufmin)
{
    int n = k->n_nodes;
    for (int f = 0; f < k->n_params; f++) writer[f] = -1;
    for (int id = 0; id <= n; id++) sufmin[id] = INT_MAX;
    for (int o = 0; o < k->n_outputs; o++) {
        int f = k->outputs[o].field, node = k->outputs[o].node;
        if (f < 0 || f >= k->n_params || node < 0 || node >= n) return 0;
        if (fixed && fixed[f]) continue;
        if (writer[f] >= 0) return 0; /* written twice */
        writer[f] = o;
        if (o < sufmin[node]) sufmin[node] = o;
    }
    for (int id = n - 1; id >= 0; id--)
        if (sufmin[id + 1] < sufmin[id]) sufmin[id] = sufmin[id + 1];
    for (int id = 0; id < n; id++) {
        const kir_node *p = &k->nodes[id];
        if (p->op != KIR_PARAM) continue;
        if (p->index < 0 || p->index >= k->n_params) return 0;
        int w = writer[p->index];
        if (w < 0) continue; /* never written: the value given */
        if (k->outputs[w].node >= id || sufmin[id] <= w) return 0;
    }
    return 1;
}

void kir_eval_params(const kir_kernel *k, double *param, const unsigned char *fixed)
{
    int n = k->n_nodes;
    int *writer = malloc(sizeof *writer * ((size_t)k->n_params + 1)), *sufmin = malloc(sizeof *sufmin * ((size_t)n + 1));
    /* at[id]: the first output (in order) whose node is id, then[o]: the next output at the same node */
    int *at = malloc(sizeof *at * ((size_t)n + 1)), *then = malloc(sizeof *then * ((size_t)k->n_outputs + 1));
    double *v = malloc(sizeof *v * ((size_t)n + 1));
    if (!writer || !sufmin || !at || !then || !v || !params_in_one_pass(k, fixed, writer, sufmin)) {
        for (int o = 0; o < k->n_outputs; o++)
            if (!fixed || !fixed[k->outputs[o].field])
                param[k->outputs[o].field] = kir_eval_uniform(k, k->outputs[o].node, param, 0);
        goto done;
    }
    for (int id = 0; id < n; id++) at[id] = -1;
    for (int o = k->n_outputs - 1; o >= 0; o--) {
        if (fixed && fixed[k->outputs[o].field]) continue;
        then[o] = at[k->outputs[o].node];
        at[k->outputs[o].node] = o;
    }
    for (int id = 0; id < n; id++) {
        const kir_node *nd = &k->nodes[id];
        double a = nd->arg[0] >= 0 ? v[nd->arg[0]] : 0, b = nd->arg[1] >= 0 ? v[nd->arg[1]] : 0,
               c = nd->arg[2] >= 0 ? v[nd->arg[2]] : 0;
        switch (nd->op) { /* as kir_eval_uniform at t = 0 */
        case KIR_CONST: v[id] = nd->value; break;
        case KIR_PARAM: v[id] = param[nd->index]; break;
        case KIR_TIME: v[id] = 0; break;
        case KIR_DT: case KIR_SPACING: case KIR_COORD: case KIR_LOAD: case KIR_RAND: case KIR_EDGE: case KIR_METRIC: v[id] = NAN; break;
        default: v[id] = kir_eval_scalar((kir_op)nd->op, a, b, c, 0);
        }
        for (int o = at[id]; o >= 0; o = then[o]) param[k->outputs[o].field] = v[id];
    }
done:
    free(writer);
    free(sufmin);
    free(at);
    free(then);
    free(v);
}

int kir_depends_on_place_or_time(const kir_kernel *k, int node)
{
    char small[4096];
    char *mark = node < 4096 ? memset(small, 0, (size_t)node + 1) : calloc((size_t)node + 1, 1);
    if (!mark) return 1; /* "depends" is always safe: the value is then evaluated every time */
    mark[node] = 1;
    int found = 0;
    for (int id = node; id >= 0 && !found; id--) {
        if (!mark[id]) continue;
        const kir_node *n = &k->nodes[id];
        if (n->op == KIR_TIME || n->op == KIR_COORD || n->op == KIR_RAND || n->op == KIR_EDGE || n->op == KIR_METRIC) found = 1;
        for (int j = 0; j < 3; j++)
            if (n->arg[j] >= 0) mark[n->arg[j]] = 1;
    }
    if (mark != small) free(mark);
    return found;
}

/* ---- reductions (kir.h) ------------------------------------------------------------------ */

double kir_reduce_identity(int op) { return op == KIR_RED_SUM ? 0.0 : op == KIR_RED_MAX ? -INFINITY : INFINITY; }

int64_t kir_reduce_parts(int dim, const int64_t n[3])
{
    if (dim <= 1) return (n[0] + KIR_REDUCE_BLOCK_1D - 1) / KIR_REDUCE_BLOCK_1D;
    return n[dim - 1];
}

double kir_reduce_finish(int op, const double *part, int64_t n_parts)
{
    double r = kir_reduce_identity(op);
    for (int64_t i = 0; i < n_parts; i++) r = kir_reduce_combine(op, r, part[i]);
    return r;
}
