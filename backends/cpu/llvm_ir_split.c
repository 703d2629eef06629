/* llvm_ir_split.c — large kernels (more than llvm_options.large_ops operations) as LLVM IR text:
 * the plan that cuts one into segments, each segment function, and the counts that decide it;
 * llvm_gen_ir (llvm_ir.c) calls the segments from its loop nest. LARGE_PIPELINE, the passes such
 * a kernel gets, is in llvm_internal.h.
 *
 * LLVM's time grows faster than linearly with the size of one loop body: a stage of 100 coupled
 * fields took 1.6 s of CPU per kernel, one of 1000 fields minutes (bench/many_fields.py,
 * docs/performance.md). A kernel of more than llvm_options.large_ops operations
 * (LLVM_LARGE_KERNEL) is therefore cut into segments of about SEG_NODES operations (fewer when
 * large_ops is lower), each an x loop in its own (noinline) function; the kernel's loop nest calls
 * them one after the other on each chunk of seg_chunk cells of a row. Segments follow the outputs
 * (each output's operations together, depth first), so little crosses from one to the next. A
 * value computed in one segment and used in a later one goes through a scratch row (one per such
 * value, seg_chunk long, on the kernel's stack); a load, a coordinate, a loop invariant or a small
 * sum or product of them is computed again where it is used. A store stays in the segment of its
 * value unless a later segment reads its buffer (in place): then it moves to the last segment that
 * does, after that load, as in one loop. A smaller kernel is generated exactly as before, so
 * normal problems keep their code and their speed. */
#include "llvm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEG_NODES 400
#define SEG_CHUNK 256               /* cells; fewer when the scratch rows would pass SCRATCH_BYTES */
#define SCRATCH_BYTES (512 * 1024)

int llvm_large_ops(const llvm_options *opt) { return opt->large_ops > 0 ? opt->large_ops : LLVM_LARGE_KERNEL; }

/* The operations of k's loop body (its nodes less the leaves). */
int llvm_count_ops(const kir_kernel *k)
{
    int ops = 0;
    for (int id = 0; id < k->n_nodes; id++) ops += !llvm_is_leaf_op((kir_op)k->nodes[id].op);
    return ops;
}

/* Which nodes a later segment computes again rather than reading a scratch row: loads,
 * coordinates, anything over leaves alone (loop-invariant: 1/h^2), and additions, subtractions,
 * products and negations of at most REMAT_DEPTH levels over them and leaves (a field squared, a
 * difference of neighbours). */
#define REMAT_DEPTH 2
static void plan_remat(gen *g, char *depth)
{
    const kir_kernel *k = g->k;
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        kir_op op = (kir_op)n->op;
        depth[id] = 0;
        g->remat[id] = 0;
        if (llvm_is_leaf_op(op)) continue;
        if (op == KIR_LOAD || op == KIR_COORD || op == KIR_METRIC) {
            depth[id] = 1;
            g->remat[id] = 1;
            continue;
        }
        /* loop-invariant (only leaves below it: 1/h^2, -L): any operation */
        int inv = 1;
        for (int j = 0; j < 3; j++) {
            int a = n->arg[j];
            if (a >= 0 && !llvm_is_leaf_op((kir_op)k->nodes[a].op) && !(g->remat[a] && depth[a] == 0)) inv = 0;
        }
        if (inv) {
            g->remat[id] = 1;
            continue;
        }
        if (op != KIR_ADD && op != KIR_SUB && op != KIR_MUL && op != KIR_NEG) continue;
        int d = 0, ok = 1;
        for (int j = 0; j < 3 && ok; j++) {
            int a = n->arg[j];
            if (a < 0 || llvm_is_leaf_op((kir_op)k->nodes[a].op)) continue;
            ok = g->remat[a];
            if (depth[a] > d) d = depth[a];
        }
        if (ok && d < REMAT_DEPTH + 1) {
            g->remat[id] = 1;
            depth[id] = (char)(d + 1);
        }
    }
}

/* What a segment function must load in its entry block. */
typedef struct seg_needs {
    char *buf, *row, *param; /* by buffer, row, param */
    int t, dt, h[3], o[3], edge[3]; /* edge: `boundary` along the axis (the mesh's first and last cell) */
} seg_needs;

static void need_leaf(const gen *g, seg_needs *sn, int id)
{
    const kir_node *n = &g->k->nodes[id];
    switch ((kir_op)n->op) {
    case KIR_PARAM: sn->param[n->index] = 1; break;
    case KIR_TIME: sn->t = 1; break;
    case KIR_DT: sn->dt = 1; break;
    case KIR_SPACING: sn->h[n->axis] = 1; break;
    default: break;
    }
}

static void need_node(const gen *g, seg_needs *sn, int id)
{
    const kir_node *n = &g->k->nodes[id];
    if (n->op == KIR_LOAD) {
        sn->row[g->row_of[id]] = 1;
        sn->buf[g->rows[g->row_of[id]].buf] = 1;
    }
    if (n->op == KIR_COORD) sn->h[n->axis] = sn->o[n->axis] = 1;
    if (n->op == KIR_EDGE) sn->edge[n->axis] = 1;
    if (n->op == KIR_METRIC) sn->o[n->axis] = 1; /* the mesh index: %foA */
    for (int j = 0; j < 3; j++)
        if (n->arg[j] >= 0 && g->seg_of[n->arg[j]] < 0) need_leaf(g, sn, n->arg[j]);
}

/* %vA = node a's value from its scratch row (a boolean is kept there as 0.0 or 1.0). */
static void scratch_load(gen *g, int a)
{
    int boolean = g->k->nodes[a].type == KIR_B;
    sb_printf(g->b, "  %%si%d = add nsw i64 %%xs, %d\n"
                    "  %%sq%d = getelementptr inbounds %s, %s* %%scr, i64 %%si%d\n"
                    "  %%v%d%s = load %s, %s* %%sq%d, align %d, !llvm.access.group !0\n",
              a, g->scr_of[a] * g->seg_chunk, a, g->T, g->T, a, a, boolean ? ".f" : "", g->T, g->T, a,
              g->align);
    if (boolean) sb_printf(g->b, "  %%v%d = fcmp une %s %%v%d.f, 0.0\n", a, g->T, a);
}

/* Brings node a, computed in an earlier segment, into segment t: a load or coordinate computed
 * again, any other value read from its scratch row. emit 0: only records what it needs. */
static void import_node(gen *g, seg_needs *sn, int a, int t, int emit)
{
    if (g->mark[a] == t) return;
    g->mark[a] = t;
    if (g->remat[a]) {
        const kir_node *n = &g->k->nodes[a];
        for (int j = 0; j < 3; j++)
            if (n->arg[j] >= 0 && g->seg_of[n->arg[j]] >= 0) import_node(g, sn, n->arg[j], t, emit);
        if (emit) llvm_emit_node(g, a);
        else need_node(g, sn, a);
    } else if (emit) {
        scratch_load(g, a);
    }
}

/* The body of segment t's x loop (emit 1), or what it needs (emit 0): its nodes, with the values
 * of earlier segments imported before their first use, the scratch rows it fills, the outputs
 * it stores and the running maximum of their exponent fields. */
static void walk_segment(gen *g, seg_needs *sn, int t, int emit)
{
    const kir_kernel *k = g->k;
    sbuf *b = g->b;
    const char *T = g->T, *IT = g->opt->single ? "i32" : "i64";
    const char *EXP_MASK = g->opt->single ? "2139095040" : "9218868437227405312";
    for (int id = 0; id < k->n_nodes; id++) g->mark[id] = -1;
    if (emit) sb_printf(b, "  %%xs = sub nsw i64 %%x0, %%c0\n"); /* scratch rows: slot * seg_chunk + xs */
    for (int id = 0; id < k->n_nodes; id++) {
        if (g->seg_of[id] != t) continue;
        const kir_node *n = &k->nodes[id];
        for (int j = 0; j < 3; j++) {
            int a = n->arg[j];
            if (a >= 0 && g->seg_of[a] >= 0 && g->seg_of[a] < t) import_node(g, sn, a, t, emit);
        }
        if (!emit) {
            need_node(g, sn, id);
            continue;
        }
        llvm_emit_node(g, id);
        if (g->scr_of[id] >= 0) {
            int boolean = n->type == KIR_B;
            if (boolean) sb_printf(b, "  %%v%d.f = uitofp i1 %%v%d to %s\n", id, id, T);
            sb_printf(b, "  %%si%d = add nsw i64 %%xs, %d\n"
                         "  %%sw%d = getelementptr inbounds %s, %s* %%scr, i64 %%si%d\n"
                         "  store %s %%v%d%s, %s* %%sw%d, align %d, !llvm.access.group !0\n",
                      id, g->scr_of[id] * g->seg_chunk, id, T, T, id, T, id, boolean ? ".f" : "", T, id,
                      g->align);
        }
    }
    char prev[24] = "acc";
    for (int i = 0; i < k->n_outputs; i++) {
        if (g->store_seg[i] != t) continue;
        int v = k->outputs[i].node;
        if (t >= g->n_reg && g->seg_of[v] >= 0) { /* a commit segment: from scratch only */
            if (emit && g->mark[v] != t) scratch_load(g, v);
            g->mark[v] = t;
        } else if (g->seg_of[v] >= 0 && g->seg_of[v] < t) {
            import_node(g, sn, v, t, emit);
        }
        if (!emit) {
            sn->row[g->out_row[i]] = 1;
            sn->buf[g->rows[g->out_row[i]].buf] = 1;
            if (g->seg_of[v] < 0) need_leaf(g, sn, v);
            continue;
        }
        sb_printf(b, "  %%o%d = getelementptr inbounds %s, %s* %%R%d, i64 %%x0\n", i, T, T, g->out_row[i]);
        sb_printf(b, "  store %s %s, %s* %%o%d, align %d, !llvm.access.group !0\n", T, g->name[v], T, i,
                  g->align);
        sb_printf(b, "  %%nf.b%d = bitcast %s %s to %s\n  %%nf.e%d = and %s %%nf.b%d, %s\n"
                     "  %%nf.a%d = call %s @llvm.umax.%s(%s %%%s, %s %%nf.e%d)\n",
                  i, T, g->name[v], IT, i, IT, i, EXP_MASK, i, IT, IT, IT, prev, IT, i);
        snprintf(prev, sizeof prev, "nf.a%d", i);
    }
    if (emit) sb_printf(b, "  %%acc.next = or %s %%%s, 0\n", IT, prev);
}

/* Decides whether and how k is split (g->n_seg, seg_of, scr_of, store_seg, seg_chunk).
 * Returns 0, or -1 when out of memory. */
int llvm_plan_split(gen *g)
{
    const kir_kernel *k = g->k;
    g->n_seg = 1;
    int ops = llvm_count_ops(k);
    if (ops <= llvm_large_ops(g->opt) || k->dim < 1 || k->kind == KIR_REDUCE) return 0; /* reductions: their own loop */
    int seg_nodes = llvm_large_ops(g->opt) < SEG_NODES ? llvm_large_ops(g->opt) : SEG_NODES;
    int n_seg = (ops + seg_nodes - 1) / seg_nodes, per = (ops + n_seg - 1) / n_seg;
    g->seg_of = malloc(sizeof *g->seg_of * (size_t)k->n_nodes);
    g->scr_of = malloc(sizeof *g->scr_of * (size_t)k->n_nodes);
    g->mark = malloc(sizeof *g->mark * (size_t)k->n_nodes);
    g->remat = malloc((size_t)k->n_nodes);
    g->store_seg = malloc(sizeof *g->store_seg * ((size_t)k->n_outputs + 1));
    char *depth = malloc((size_t)k->n_nodes);
    if (!g->seg_of || !g->scr_of || !g->mark || !g->remat || !g->store_seg || !depth) {
        free(depth);
        return -1;
    }
    plan_remat(g, depth);
    free(depth);
    /* segments follow the outputs: each output's operations (those no earlier output needed),
       depth first, so that a segment holds whole outputs and only what they share crosses */
    int *stack = malloc(sizeof *stack * 2 * ((size_t)k->n_nodes + 1)), pos = 0;
    if (!stack) return -1;
    for (int id = 0; id < k->n_nodes; id++) {
        g->scr_of[id] = -1;
        g->seg_of[id] = llvm_is_leaf_op((kir_op)k->nodes[id].op) ? -1 : -2; /* -2: not reached yet */
    }
    for (int i = 0; i < k->n_outputs; i++) {
        int sp = 0, root = k->outputs[i].node;
        if (g->seg_of[root] != -2) continue;
        stack[sp++] = root;
        stack[sp++] = 0;
        g->seg_of[root] = -3; /* on the stack */
        while (sp) {
            int id = stack[sp - 2], j = stack[sp - 1];
            if (j < 3) {
                stack[sp - 1] = j + 1;
                int a = k->nodes[id].arg[j];
                if (a >= 0 && g->seg_of[a] == -2) {
                    g->seg_of[a] = -3;
                    stack[sp++] = a;
                    stack[sp++] = 0;
                }
                continue;
            }
            g->seg_of[id] = pos++ / per;
            sp -= 2;
        }
    }
    free(stack);
    for (int id = 0; id < k->n_nodes; id++) /* what no output needs (dead code): anywhere */
        if (g->seg_of[id] == -2) g->seg_of[id] = n_seg - 1;
    for (int id = 0; id < k->n_nodes; id++)
        if (g->seg_of[id] >= n_seg) g->seg_of[id] = n_seg - 1;
    /* Stores. Any two buffers may be one array (the aliasing contract, llvm_backend.h), so no
       store may come before a load of a later segment: an output whose segment precedes the
       last one that loads (emit_max: the last segment a node is computed in, a computed-again
       node in every segment that uses it) is stored after it, from its scratch row, in extra
       commit segments of about seg_nodes / 4 stores each, which load nothing else. */
    int *emit_max = malloc(sizeof *emit_max * (size_t)k->n_nodes);
    if (!emit_max) return -1;
    for (int id = 0; id < k->n_nodes; id++) emit_max[id] = g->seg_of[id];
    for (int id = k->n_nodes - 1; id >= 0; id--) { /* users before their operands */
        if (g->seg_of[id] < 0) continue;
        for (int j = 0; j < 3; j++) {
            int a = k->nodes[id].arg[j];
            if (a >= 0 && g->seg_of[a] >= 0 && g->remat[a] && emit_max[id] > emit_max[a]) emit_max[a] = emit_max[id];
        }
    }
    int last_load = -1, n_late = 0;
    for (int id = 0; id < k->n_nodes; id++)
        if (k->nodes[id].op == KIR_LOAD && emit_max[id] > last_load) last_load = emit_max[id];
    free(emit_max);
    int per_commit = seg_nodes / 4 < 1 ? 1 : seg_nodes / 4;
    for (int i = 0; i < k->n_outputs; i++) {
        int v = k->outputs[i].node, sv = g->seg_of[v] < 0 ? n_seg - 1 : g->seg_of[v];
        if (sv >= last_load) {
            g->store_seg[i] = sv;
        } else {
            g->store_seg[i] = n_seg + n_late++ / per_commit; /* its value from scratch there */
        }
    }
    int n_commit = (n_late + per_commit - 1) / per_commit;
    /* the scratch rows: values used after their segment that are not loads or coordinates */
    int n_scr = 0;
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        for (int j = 0; j < 3; j++) {
            int a = n->arg[j];
            if (a >= 0 && g->seg_of[a] >= 0 && g->seg_of[a] < g->seg_of[id] && g->scr_of[a] < 0 &&
                !g->remat[a])
                g->scr_of[a] = n_scr++;
        }
    }
    for (int i = 0; i < k->n_outputs; i++) {
        int v = k->outputs[i].node;
        if (g->store_seg[i] >= n_seg && g->seg_of[v] >= 0 && g->scr_of[v] < 0) g->scr_of[v] = n_scr++;
    }
    int chunk = SEG_CHUNK;
    while (chunk > 8 && (size_t)n_scr * (size_t)chunk * (size_t)g->align > SCRATCH_BYTES) chunk /= 2;
    if ((size_t)n_scr * (size_t)chunk * (size_t)g->align > SCRATCH_BYTES) return 0; /* not split */
    g->seg_chunk = chunk;
    g->n_reg = n_seg;
    g->n_seg = n_seg + n_commit;
    return 0;
}

/* Segment t of a split kernel: internal IT @"SYMBOL.sT"(%L, x1, x2, c0, cend, scratch), the x
 * loop over [c0, cend) of row (x1, x2), returning the maximum exponent field it stored. */
int llvm_emit_segment(gen *g, const char *symbol, int t, int n_bufs)
{
    const kir_kernel *k = g->k;
    sbuf *b = g->b;
    const char *T = g->T, *IT = g->opt->single ? "i32" : "i64";
    int dim = k->dim;
    seg_needs sn = {calloc((size_t)n_bufs + 1, 1), calloc((size_t)g->n_rows + 1, 1),
                    calloc((size_t)k->n_params + 1, 1), 0, 0, {0}, {0}, {0}};
    if (!sn.buf || !sn.row || !sn.param) {
        free(sn.buf);
        free(sn.row);
        free(sn.param);
        return -1;
    }
    walk_segment(g, &sn, t, 0);
    sb_printf(b, "\ndefine internal %s @\"%s.s%d\"(%%pj.launch* nocapture readonly %%L, i64 %%x1, i64 %%x2, "
                 "i64 %%c0, i64 %%cend, %s* nocapture %%scr) #7 {\nentry:\n", IT, symbol, t, T);
    sb_printf(b, "  %%bufs.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d\n"
                 "  %%bufs = load i8**, i8*** %%bufs.p, align 8\n", LF_BUF);
    for (int bi = 0; bi < n_bufs; bi++) {
        if (!sn.buf[bi]) continue;
        sb_printf(b, "  %%B%d.p = getelementptr inbounds i8*, i8** %%bufs, i64 %d\n", bi, bi);
        sb_printf(b, "  %%B%d.r = load i8*, i8** %%B%d.p, align 8\n", bi, bi);
        sb_printf(b, "  %%B%d = bitcast i8* %%B%d.r to %s*\n", bi, bi, T);
    }
    int any_param = 0;
    for (int p = 0; p < k->n_params; p++) any_param |= sn.param[p];
    if (any_param)
        sb_printf(b, "  %%params.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d\n"
                     "  %%params = load double*, double** %%params.p, align 8\n", LF_PARAM);
    for (int p = 0; p < k->n_params; p++) {
        if (!sn.param[p]) continue;
        sb_printf(b, "  %%pd%d.p = getelementptr inbounds double, double* %%params, i64 %d\n", p, p);
        sb_printf(b, "  %%pd%d = load double, double* %%pd%d.p, align 8\n", p, p);
        if (g->opt->single) sb_printf(b, "  %%pf%d = fptrunc double %%pd%d to float\n", p, p);
    }
#define SFIELD(name, f, i)                                                                        \
    sb_printf(b, "  %s.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d, i64 %d\n" \
                 "  %s = load double, double* %s.p, align 8\n", name, f, i, name, name)
    if (sn.t) {
        sb_printf(b, "  %%td.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d\n"
                     "  %%td = load double, double* %%td.p, align 8\n", LF_T);
        if (g->opt->single) sb_printf(b, "  %%tf = fptrunc double %%td to float\n");
    }
    if (sn.dt) {
        sb_printf(b, "  %%dtd.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d\n"
                     "  %%dtd = load double, double* %%dtd.p, align 8\n", LF_DT);
        if (g->opt->single) sb_printf(b, "  %%dtf = fptrunc double %%dtd to float\n");
    }
    char nm[32];
    for (int a = 0; a < 3; a++) {
        if (sn.h[a]) {
            snprintf(nm, sizeof nm, "%%hd%d", a);
            SFIELD(nm, LF_H, a);
            if (g->opt->single) sb_printf(b, "  %%hf%d = fptrunc double %%hd%d to float\n", a, a);
        }
        if (sn.o[a]) {
            snprintf(nm, sizeof nm, "%%od%d", a);
            SFIELD(nm, LF_ORIGIN, a);
        }
        if (sn.o[a] || sn.edge[a])
            sb_printf(b, "  %%fo%d.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d, i64 %d\n"
                         "  %%fo%d = load i64, i64* %%fo%d.p, align 8\n", a, LF_FIRST, a, a, a);
        if (sn.edge[a]) /* the last cell index of the mesh along the axis: first + n + beyond - 1 */
            sb_printf(b, "  %%en%d.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d, i64 %d\n"
                         "  %%en%d = load i64, i64* %%en%d.p, align 8\n"
                         "  %%by%d.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d, i64 %d\n"
                         "  %%by%d = load i64, i64* %%by%d.p, align 8\n"
                         "  %%bf%d = add nsw i64 %%fo%d, %%en%d\n  %%mn%d = add nsw i64 %%bf%d, %%by%d\n"
                         "  %%elast%d = sub nsw i64 %%mn%d, 1\n",
                      a, LF_N, a, a, a, a, LF_BEYOND, a, a, a, a, a, a, a, a, a, a, a);
    }
#undef SFIELD
    for (int a = 1; a < dim; a++)
        sb_printf(b, "  %%s%d.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d, i64 %d\n"
                     "  %%s%d = load i64, i64* %%s%d.p, align 8\n", a, LF_STRIDE, a, a, a);
    for (int r = 0; r < g->n_rows; r++) {
        if (!sn.row[r]) continue;
        const row *rw = &g->rows[r];
        if (dim == 1) {
            sb_printf(b, "  %%R%d = getelementptr inbounds %s, %s* %%B%d, i64 0\n", r, T, T, rw->buf);
            continue;
        }
        sb_printf(b, "  %%ry%d = add nsw i64 %%x1, %d\n  %%ro%d = mul nsw i64 %%ry%d, %%s1\n", r, rw->dy, r, r);
        if (dim == 3)
            sb_printf(b, "  %%rz%d = add nsw i64 %%x2, %d\n  %%rw%d = mul nsw i64 %%rz%d, %%s2\n"
                         "  %%rs%d = add nsw i64 %%ro%d, %%rw%d\n", r, rw->dz, r, r, r, r, r);
        sb_printf(b, "  %%R%d = getelementptr inbounds %s, %s* %%B%d, i64 %%r%c%d\n", r, T, T, rw->buf,
                  dim == 3 ? 's' : 'o', r);
    }
    sb_printf(b, "  %%g = icmp slt i64 %%c0, %%cend\n  br i1 %%g, label %%l, label %%done\nl:\n"
                 "  %%x0 = phi i64 [ %%c0, %%entry ], [ %%x0.next, %%l ]\n"
                 "  %%acc = phi %s [ 0, %%entry ], [ %%acc.next, %%l ]\n", IT);
    walk_segment(g, &sn, t, 1);
    sb_printf(b, "  %%x0.next = add nsw i64 %%x0, 1\n  %%x0.more = icmp slt i64 %%x0.next, %%cend\n"
                 "  br i1 %%x0.more, label %%l, label %%done, !llvm.loop !%d\n"
                 "done:\n  %%r = phi %s [ 0, %%entry ], [ %%acc.next, %%l ]\n  ret %s %%r\n}\n",
              10 + t, IT, IT);
    free(sn.buf);
    free(sn.row);
    free(sn.param);
    return b->oom ? -1 : 0;
}
