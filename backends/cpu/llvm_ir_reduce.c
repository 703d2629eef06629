/* llvm_ir_reduce.c — the loop nest of a reduction kernel (KIR_REDUCE; kir.h, "Reductions") as
 * LLVM IR text, for llvm_gen_ir (llvm_ir.c), which writes the module and entry block around it. */
#include "llvm_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* Cells a reduction computes into its scratch rows before folding them into the lanes: a
 * multiple of KIR_REDUCE_LANES, small enough that the scratch stays in L1. */
#define REDUCE_CHUNK 256

/* `r = combine(op, a, v)` (kir.h) on double or <8 x double> values: never with fast-math flags,
 * so the order of kir.h holds in every mode. */
static void emit_combine(sbuf *b, int op, const char *ty, const char *cty, const char *r, const char *a, const char *v)
{
    if (op == KIR_RED_SUM) {
        sb_printf(b, "  %s = fadd %s %s, %s\n", r, ty, a, v);
        return;
    }
    sb_printf(b, "  %s.c1 = fcmp %s %s %s, %s\n  %s.c2 = fcmp uno %s %s, %s\n  %s.c = or %s %s.c1, %s.c2\n"
                 "  %s = select %s %s.c, %s %s, %s %s\n",
              r, op == KIR_RED_MAX ? "ogt" : "olt", ty, v, a, r, ty, v, v, r, cty, r, r, r, cty, r, ty, v, ty, a);
}

/* The nodes outputs [j0, j1) of k use (use[id] = 1: a walk from them, the group's own, not every
 * node), or NULL out of memory. */
static char *group_nodes(const kir_kernel *k, int j0, int j1)
{
    char *use = calloc((size_t)k->n_nodes + 1, 1);
    int *todo = malloc(sizeof *todo * ((size_t)k->n_nodes + 1));
    if (!use || !todo) {
        free(use);
        free(todo);
        return NULL;
    }
    int n_todo = 0;
    for (int j = j0; j < j1; j++)
        if (!use[k->outputs[j].node]) {
            use[k->outputs[j].node] = 1;
            todo[n_todo++] = k->outputs[j].node;
        }
    while (n_todo > 0) {
        const kir_node *n = &k->nodes[todo[--n_todo]];
        for (int a = 0; a < 3; a++)
            if (n->arg[a] >= 0 && !use[n->arg[a]]) {
                use[n->arg[a]] = 1;
                todo[n_todo++] = n->arg[a];
            }
    }
    free(todo);
    return use;
}

/* The loop nest of a KIR_REDUCE kernel (kir.h, "Reductions"): per part q in [begin, end), its
 * rows in chunks of REDUCE_CHUNK cells; each chunk is computed by the vectorisable x loop into a
 * scratch row per output, then folded into the output's 8 lanes (an [8 x double] accumulator)
 * with <8 x double> operations, the tail lane by lane; at the end of the part the lanes are
 * folded in order and stored at partial[j][q]. Leaves and rows are set up by llvm_gen_ir. */
int llvm_emit_reduce(gen *g, int n_state_bufs, int j0, int j1, int loop_md)
{
    const kir_kernel *k = g->k;
    sbuf *b = g->b;
    const char *T = g->T;
    int dim = k->dim, L = KIR_REDUCE_LANES, CH = REDUCE_CHUNK;
    char *use = group_nodes(k, j0, j1);
    if (!use) return -1;
    if (dim == 1) sb_printf(b, "  %%n0.p = getelementptr inbounds %%pj.launch, %%pj.launch* %%L, i64 0, i32 %d, i64 0\n"
                               "  %%n0 = load i64, i64* %%n0.p, align 8\n", LF_N);
    for (int j = j0; j < j1; j++) {
        sb_printf(b, "  %%pp%d.p = getelementptr inbounds i8*, i8** %%bufs, i64 %d\n  %%pp%d.r = load i8*, i8** %%pp%d.p, align 8\n"
                     "  %%pp%d = bitcast i8* %%pp%d.r to double*\n", j, n_state_bufs + j, j, j, j, j);
        sb_printf(b, "  %%acc%d = alloca [%d x double], align 64\n  %%accv%d = bitcast [%d x double]* %%acc%d to <%d x double>*\n",
                  j, L, j, L, j, L);
        sb_printf(b, "  %%scr%d = alloca [%d x %s], align 64\n", j, CH, T);
    }
    sb_printf(b, "  %%g = icmp slt i64 %%begin, %%end\n  br i1 %%g, label %%part, label %%exit\n");
    sb_printf(b, "part:\n  %%q = phi i64 [ %%begin, %%entry ], [ %%q.next, %%fold ]\n");
    for (int j = j0; j < j1; j++) {
        char id[40];
        llvm_const_text(id, sizeof id, kir_reduce_identity(k->outputs[j].slot), 0);
        sb_printf(b, "  store <%d x double> <", L);
        for (int l = 0; l < L; l++) sb_printf(b, "%sdouble %s", l ? ", " : "", id);
        sb_printf(b, ">, <%d x double>* %%accv%d, align 64\n", L, j);
    }
    if (dim == 1) {
        sb_printf(b, "  %%rs = mul nsw i64 %%q, %d\n  %%re.a = add nsw i64 %%rs, %d\n  %%re.c = icmp slt i64 %%re.a, %%n0\n"
                     "  %%re = select i1 %%re.c, i64 %%re.a, i64 %%n0\n  br label %%row\nrow:\n",
                  KIR_REDUCE_BLOCK_1D, KIR_REDUCE_BLOCK_1D);
        for (int r = 0; r < g->n_rows; r++)
            sb_printf(b, "  %%R%d = getelementptr inbounds %s, %s* %%B%d, i64 0\n", r, T, T, g->rows[r].buf);
    } else {
        if (dim == 2) sb_printf(b, "  %%x1 = add i64 %%q, 0\n  br label %%row\nrow:\n");
        else sb_printf(b, "  %%x2 = add i64 %%q, 0\n  br label %%row\nrow:\n  %%x1 = phi i64 [ 0, %%part ], [ %%x1.next, %%row.end ]\n");
        for (int r = 0; r < g->n_rows; r++) {
            const row *rw = &g->rows[r];
            sb_printf(b, "  %%ry%d = add nsw i64 %%x1, %d\n  %%ro%d = mul nsw i64 %%ry%d, %%s1\n", r, rw->dy, r, r);
            if (dim == 3)
                sb_printf(b, "  %%rz%d = add nsw i64 %%x2, %d\n  %%rw%d = mul nsw i64 %%rz%d, %%s2\n  %%rs%d = add nsw i64 %%ro%d, %%rw%d\n",
                          r, rw->dz, r, r, r, r, r);
            sb_printf(b, "  %%R%d = getelementptr inbounds %s, %s* %%B%d, i64 %%r%c%d\n", r, T, T, rw->buf,
                      dim == 3 ? 's' : 'o', r);
        }
    }
    sb_printf(b, "  br label %%ck\nck:\n  %%ck0 = phi i64 [ %s, %%row ], [ %%ck1, %%red.done ]\n"
                 "  %%ck1.a = add nsw i64 %%ck0, %d\n  %%ck1.c = icmp slt i64 %%ck1.a, %s\n"
                 "  %%ck1 = select i1 %%ck1.c, i64 %%ck1.a, i64 %s\n  br label %%xl\n",
              dim == 1 ? "%rs" : "0", CH, dim == 1 ? "%re" : "%n0", dim == 1 ? "%re" : "%n0");
    /* the x loop: every node, each output into its scratch row */
    sb_printf(b, "xl:\n  %%x0 = phi i64 [ %%ck0, %%ck ], [ %%x0.next, %%xl ]\n");
    for (int id = 0; id < k->n_nodes; id++) {
        kir_op op = (kir_op)k->nodes[id].op;
        if (!use[id] || llvm_is_leaf_op(op)) continue;
        llvm_emit_node(g, id);
    }
    sb_printf(b, "  %%si = sub nsw i64 %%x0, %%ck0\n");
    for (int j = j0; j < j1; j++)
        sb_printf(b, "  %%sp%d = getelementptr inbounds [%d x %s], [%d x %s]* %%scr%d, i64 0, i64 %%si\n"
                     "  store %s %s, %s* %%sp%d, align %d, !llvm.access.group !0\n",
                  j, CH, T, CH, T, j, T, g->name[k->outputs[j].node], T, j, g->align);
    sb_printf(b, "  %%x0.next = add nsw i64 %%x0, 1\n  %%x0.more = icmp slt i64 %%x0.next, %%ck1\n"
                 "  br i1 %%x0.more, label %%xl, label %%red, !llvm.loop !%d\n", loop_md);
    /* fold the chunk into the lanes: whole vectors, then the tail lane by lane */
    char vt[32], vd[32], vb[32];
    snprintf(vt, sizeof vt, "<%d x %s>", L, T);
    snprintf(vd, sizeof vd, "<%d x double>", L);
    snprintf(vb, sizeof vb, "<%d x i1>", L);
    sb_printf(b, "red:\n  %%len = sub nsw i64 %%ck1, %%ck0\n  %%len8 = and i64 %%len, %d\n  %%rv.g = icmp sgt i64 %%len8, 0\n"
                 "  br i1 %%rv.g, label %%rv, label %%rt.pre\nrv:\n  %%i = phi i64 [ 0, %%red ], [ %%i.next, %%rv ]\n",
              -L);
    for (int j = j0; j < j1; j++) {
        char r[24], a[24], v[24];
        sb_printf(b, "  %%vp%d = getelementptr inbounds [%d x %s], [%d x %s]* %%scr%d, i64 0, i64 %%i\n"
                     "  %%vq%d = bitcast %s* %%vp%d to %s*\n  %%vv%d = load %s, %s* %%vq%d, align %d\n",
                  j, CH, T, CH, T, j, j, T, j, vt, j, vt, vt, j, g->align);
        if (g->opt->single) sb_printf(b, "  %%vx%d = fpext %s %%vv%d to %s\n", j, vt, j, vd);
        sb_printf(b, "  %%va%d = load %s, %s* %%accv%d, align 64\n", j, vd, vd, j);
        snprintf(r, sizeof r, "%%vn%d", j);
        snprintf(a, sizeof a, "%%va%d", j);
        snprintf(v, sizeof v, g->opt->single ? "%%vx%d" : "%%vv%d", j);
        emit_combine(b, k->outputs[j].slot, vd, vb, r, a, v);
        sb_printf(b, "  store %s %%vn%d, %s* %%accv%d, align 64\n", vd, j, vd, j);
    }
    sb_printf(b, "  %%i.next = add nsw i64 %%i, %d\n  %%i.more = icmp slt i64 %%i.next, %%len8\n"
                 "  br i1 %%i.more, label %%rv, label %%rt.pre\n"
                 "rt.pre:\n  %%tg = icmp slt i64 %%len8, %%len\n  br i1 %%tg, label %%rt, label %%red.done\n"
                 "rt:\n  %%kk = phi i64 [ %%len8, %%rt.pre ], [ %%kk.next, %%rt ]\n  %%lane = sub nsw i64 %%kk, %%len8\n",
              L);
    for (int j = j0; j < j1; j++) {
        char r[24], a[24], v[24];
        sb_printf(b, "  %%tp%d = getelementptr inbounds [%d x %s], [%d x %s]* %%scr%d, i64 0, i64 %%kk\n"
                     "  %%tv%d = load %s, %s* %%tp%d, align %d\n",
                  j, CH, T, CH, T, j, j, T, T, j, g->align);
        if (g->opt->single) sb_printf(b, "  %%tx%d = fpext float %%tv%d to double\n", j, j);
        sb_printf(b, "  %%ap%d = getelementptr inbounds [%d x double], [%d x double]* %%acc%d, i64 0, i64 %%lane\n"
                     "  %%aa%d = load double, double* %%ap%d, align 8\n",
                  j, L, L, j, j, j);
        snprintf(r, sizeof r, "%%an%d", j);
        snprintf(a, sizeof a, "%%aa%d", j);
        snprintf(v, sizeof v, g->opt->single ? "%%tx%d" : "%%tv%d", j);
        emit_combine(b, k->outputs[j].slot, "double", "i1", r, a, v);
        sb_printf(b, "  store double %%an%d, double* %%ap%d, align 8\n", j, j);
    }
    sb_printf(b, "  %%kk.next = add nsw i64 %%kk, 1\n  %%kk.more = icmp slt i64 %%kk.next, %%len\n"
                 "  br i1 %%kk.more, label %%rt, label %%red.done\n"
                 "red.done:\n  %%ck.more = icmp slt i64 %%ck1, %s\n  br i1 %%ck.more, label %%ck, label %%row.end\nrow.end:\n",
              dim == 1 ? "%re" : "%n0");
    if (dim == 3)
        sb_printf(b, "  %%x1.next = add nsw i64 %%x1, 1\n  %%x1.more = icmp slt i64 %%x1.next, %%n1\n"
                     "  br i1 %%x1.more, label %%row, label %%fold\n");
    else
        sb_printf(b, "  br label %%fold\n");
    /* the part's result: lane 0, combined with lanes 1, 2, ... in order */
    sb_printf(b, "fold:\n");
    for (int j = j0; j < j1; j++) {
        for (int l = 0; l < L; l++)
            sb_printf(b, "  %%fp%d.%d = getelementptr inbounds [%d x double], [%d x double]* %%acc%d, i64 0, i64 %d\n"
                         "  %%fl%d.%d = load double, double* %%fp%d.%d, align 8\n",
                      j, l, L, L, j, l, j, l, j, l);
        for (int l = 1; l < L; l++) {
            char r[32], a[32], v[32];
            snprintf(r, sizeof r, "%%ff%d.%d", j, l);
            snprintf(a, sizeof a, l == 1 ? "%%fl%d.0" : "%%ff%d.%d", j, l - 1);
            snprintf(v, sizeof v, "%%fl%d.%d", j, l);
            emit_combine(b, k->outputs[j].slot, "double", "i1", r, a, v);
        }
        sb_printf(b, "  %%pq%d = getelementptr inbounds double, double* %%pp%d, i64 %%q\n"
                     "  store double %%ff%d.%d, double* %%pq%d, align 8\n",
                  j, j, j, L - 1, j);
    }
    sb_printf(b, "  %%q.next = add nsw i64 %%q, 1\n  %%q.more = icmp slt i64 %%q.next, %%end\n"
                 "  br i1 %%q.more, label %%part, label %%exit\nexit:\n  ret void\n}\n\n");
    free(use);
    return 0;
}
