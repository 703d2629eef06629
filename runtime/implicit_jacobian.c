/* implicit_jacobian.c — F and the Jacobian of an implicit program on PETSc's vectors
 * (implicit_internal.h; the method is in implicit.c's header): the state copied between the
 * vectors and the simulation's slots, the rhs and Jacobian kernels run there, the ghost rule measured
 * (alpha) and folded onto the interior, the Jacobian assembled by global index, kept when it
 * cannot change or updated on its diagonal only, and implicit_check_jacobian. */
#include "implicit_internal.h"

static double *buffer(implicit_solver *q, int slot, int field)
{
    return (double *)q->m.st->buf[slot * q->nf + field];
}

static int64_t at(const grid_layout *g, int64_t i, int64_t j, int64_t k)
{
    return i + j * g->stride[1] + k * g->stride[2];
}

/* PETSc vector <-> slot buffers (interior cells of the fields with an equation). */
void vec_to_slot(implicit_solver *q, const PetscScalar *x, int slot)
{
    const grid_layout *g = solver_layout(q);
    for (int c = 0; c < q->dof; c++) {
        double *b = buffer(q, slot, q->field_of[c]);
        int64_t idx = c;
        for (int64_t k = 0; k < g->n[2]; k++)
            for (int64_t j = 0; j < g->n[1]; j++) {
                double *row = b + at(g, 0, j, k);
                for (int64_t i = 0; i < g->n[0]; i++, idx += q->dof) row[i] = x[idx];
            }
    }
}

void slot_to_vec(implicit_solver *q, int slot, PetscScalar *x)
{
    const grid_layout *g = solver_layout(q);
    for (int c = 0; c < q->dof; c++) {
        const double *b = buffer(q, slot, q->field_of[c]);
        int64_t idx = c;
        for (int64_t k = 0; k < g->n[2]; k++)
            for (int64_t j = 0; j < g->n[1]; j++) {
                const double *row = b + at(g, 0, j, k);
                for (int64_t i = 0; i < g->n[0]; i++, idx += q->dof) x[idx] = row[i];
            }
    }
}

/* Kernel `kernel` of the program (the rhs or a part of it, the Jacobian) at state U and time t: U
 * into slot 0, then the kernel; with_alpha: also the boundary conditions' coefficients, where they
 * may have changed since they were measured (measure_alpha). */
static int measure_alpha(implicit_solver *q, double t);
static PetscErrorCode run_kernel(implicit_solver *q, pj_kernel_id kernel, double t, Vec U, int with_alpha)
{
    const PetscScalar *u;
    PetscCall(VecGetArrayRead(U, &u));
    vec_to_slot(q, u, 0);
    PetscCall(VecRestoreArrayRead(U, &u));
    /* a failed run or fill leaves its message in q->error */
    if (q->m.ops->run(q->m.x, kernel, t, 0, q->error, sizeof q->error) < 0 ||
        (with_alpha && (!q->alpha_valid || !q->alpha_const) && measure_alpha(q, t) < 0))
        SETERRQ(PETSC_COMM_SELF, PETSC_ERR_USER, "ghost fill failed");
    return 0;
}

/* F(U) at time t into f: U into slot 0, the rhs kernel `part` (PJ_KERNEL_RHS_IMPLICIT: F, under
 * imex its implicit part; PJ_KERNEL_RHS_EXPLICIT: imex's explicit part) writes slot 1. */
PetscErrorCode eval_stage(implicit_solver *q, pj_kernel_id part, double t, Vec U, Vec F)
{
    PetscScalar *f;
    PetscCall(run_kernel(q, part, t, U, 0));
    PetscCall(VecGetArray(F, &f));
    slot_to_vec(q, 1, f);
    PetscCall(VecRestoreArray(F, &f));
    return 0;
}

/* How ghost cells depend on interior cells. A ghost cell out of the grid along one axis a is
 * sum_k alpha_k * u(interior cell k from its side, along a) + beta (the mirror, linear and
 * periodic rules use one k; a second condition lap(u) = c makes the second layer use two).
 * Measured exactly by fills of slot 1: interior 0 (beta), then for each k an indicator of the
 * cells k from either side of every axis: alpha_k = g - beta (a ghost of axis a sees only the
 * indicators along a; the grid has at least 2H cells per axis for that, else one cell per
 * ghost is assumed, the mirror's). A corner ghost (out along two axes) keeps the one-cell rule:
 * alpha from the all-ones fill, at the mirrored cell. */
/* Slot 1 of the unknown fields: 0 everywhere, then (axis >= 0) 1 at the cells k from either side
 * along `axis`, or (axis = -2) 1 at every interior cell; ghosts filled at time t. */
static int fill_slot1(implicit_solver *q, double t, int axis, int k_ind)
{
    const grid_layout *g = solver_layout(q);
    for (int c = 0; c < q->dof; c++) {
        double *b = buffer(q, 1, q->field_of[c]) - g->origin_off;
        for (size_t e = 0; e < g->elems; e++) b[e] = 0;
        if (axis == -1) continue;
        for (int64_t kk = 0; kk < g->n[2]; kk++)
            for (int64_t j = 0; j < g->n[1]; j++)
                for (int64_t i = 0; i < g->n[0]; i++) {
                    int64_t pos[3] = {q->first[0] + i, q->first[1] + j, q->first[2] + kk};
                    if (axis == -2 || pos[axis] == k_ind || pos[axis] == q->n[axis] - 1 - k_ind)
                        b[g->origin_off + at(g, i, j, kk)] = 1;
                }
    }
    return q->m.ops->step.fill(q->m.x, 1, t, q->error, sizeof q->error);
}

/* The ghost cells (allocated, out of the grid along `axis` only, or along two or more axes for
 * axis = -2) of every unknown field: dst[e] = slot 1's value - base[e] (base NULL: 0). */
static void take_ghosts(implicit_solver *q, int axis, double *const *dst, double *const *base)
{
    const grid_layout *g = solver_layout(q);
    for (int c = 0; c < q->dof; c++) {
        const double *b = buffer(q, 1, q->field_of[c]);
        for (int64_t kk = g->lo[2]; kk < g->lo[2] + g->ext[2]; kk++)
            for (int64_t j = g->lo[1]; j < g->lo[1] + g->ext[1]; j++)
                for (int64_t i = g->lo[0]; i < g->lo[0] + g->ext[0]; i++) {
                    int64_t pos[3] = {q->first[0] + i, q->first[1] + j, q->first[2] + kk};
                    int out = 0, last = -1;
                    for (int a = 0; a < q->p->dim; a++)
                        if (pos[a] < 0 || pos[a] >= q->n[a]) {
                            out++;
                            last = a;
                        }
                    if (!out || (axis >= 0 && (out != 1 || last != axis)) || (axis == -2 && out < 2)) continue;
                    int64_t e = at(g, i, j, kk);
                    dst[c][g->origin_off + e] = b[e] - (base ? base[c][g->origin_off + e] : 0);
                }
    }
}

static int measure_alpha(implicit_solver *q, double t)
{
    const grid_layout *g = solver_layout(q);
    int H = g->H, S = H + 2;
    double *beta[q->dof > 0 ? q->dof : 1], *slot[q->dof > 0 ? q->dof : 1];
    for (int c = 0; c < q->dof; c++) beta[c] = q->alpha + (size_t)c * g->elems * (size_t)S;
    if (fill_slot1(q, t, -1, 0) < 0) return -1; /* beta: the constant part of every ghost */
    take_ghosts(q, -2, beta, NULL);
    for (int a = 0; a < q->p->dim; a++) take_ghosts(q, a, beta, NULL);
    if (fill_slot1(q, t, -2, 0) < 0) return -1; /* corners: the one-cell rule's alpha */
    for (int c = 0; c < q->dof; c++) slot[c] = beta[c] + g->elems;
    take_ghosts(q, -2, slot, beta);
    for (int a = 0; a < q->p->dim; a++) take_ghosts(q, a, slot, beta);
    for (int a = 0; a < q->p->dim; a++)
        for (int k = 0; k < H; k++) {
            if (fill_slot1(q, t, a, k) < 0) return -1;
            for (int c = 0; c < q->dof; c++) slot[c] = beta[c] + g->elems * (size_t)(k + 2);
            take_ghosts(q, a, slot, beta);
        }
    q->alpha_valid = 1;
    return 0;
}

/* Where a column at cell index v along axis ax lands, as an interior index. */
static int64_t fold(const implicit_solver *q, int ax, int64_t v)
{
    int64_t n = q->n[ax];
    if (q->p->periodic[ax]) return ((v % n) + n) % n;
    if (v < 0) return -v - 1;
    if (v >= n) return 2 * n - 1 - v;
    return v;
}

PetscErrorCode eval_rhs(implicit_solver *q, double t, Vec U, Vec F)
{
    return eval_stage(q, PJ_KERNEL_RHS_IMPLICIT, t, U, F);
}

/* The column of processes that holds mesh index v along axis a. */
static int column_of(const implicit_solver *q, int a, int64_t v)
{
    int lo = 0, hi = q->procs[a] - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (q->start[a][mid] <= v) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* The DMDA's global index of unknown c at mesh cell (i, j, k): in the block that holds it, the
 * cells x fastest and the unknowns interlaced (one process: the natural order). */
static PetscInt global_index(const implicit_solver *q, int64_t i, int64_t j, int64_t k, int c)
{
    const grid_block *b = &q->own;
    PetscInt base = q->own_offset;
    if (i < b->first[0] || i >= b->first[0] + b->n[0] || j < b->first[1] || j >= b->first[1] + b->n[1] ||
        k < b->first[2] || k >= b->first[2] + b->n[2]) {
        int r = column_of(q, 0, i) + q->procs[0] * (column_of(q, 1, j) + q->procs[1] * column_of(q, 2, k));
        b = &q->blocks[r];
        base = q->offset[r];
    }
    return base + (PetscInt)((((k - b->first[2]) * b->n[1] + (j - b->first[1])) * b->n[0] + (i - b->first[0])) * q->dof + c);
}

/* Every row of this process into A, by global index (ADD_VALUES), from the Jacobian kernel's
 * outputs jb; a ghost column is folded onto the interior cells it is computed from (alpha). With
 * jb NULL, the pattern: every column an entry may take (a ghost's every interior cell), value 0,
 * zeros kept (the assembly skips zero coefficients). */
static PetscErrorCode insert_rows(implicit_solver *q, Mat A, const double **jb)
{
    const grid_layout *g = solver_layout(q);
    const pj_program *p = q->p;
    for (int64_t k = 0; k < g->n[2]; k++)
        for (int64_t j = 0; j < g->n[1]; j++)
            for (int64_t i = 0; i < g->n[0]; i++) {
                int64_t cell = at(g, i, j, k);
                int e = 0;
                while (e < q->jac->n) { /* entries come grouped by output: one row each */
                    const derive_entry *d0 = &q->jac->entries[e];
                    int row_c = q->unknown[d0->out_field];
                    int nc = 0;
                    for (; e < q->jac->n && q->jac->entries[e].output == d0->output; e++) {
                        const derive_entry *d = &q->jac->entries[e];
                        double v = jb ? jb[e][cell] : 1.0;
                        int col_c = q->unknown[d->field];
                        if (v == 0 || col_c < 0 || row_c < 0) continue;
                        int64_t pos[3] = {i + d->off[0], j + d->off[1], k + d->off[2]}; /* in the block */
                        int64_t gp[3] = {q->first[0] + pos[0], q->first[1] + pos[1], q->first[2] + pos[2]};
                        int out = 0, axis = -1;
                        for (int ax = 0; ax < p->dim; ax++)
                            if (gp[ax] < 0 || gp[ax] >= q->n[ax]) {
                                out++;
                                axis = ax;
                            }
                        const double *al = q->alpha + (size_t)col_c * g->elems * (size_t)(g->H + 2);
                        size_t ghost_at = (size_t)(g->origin_off + at(g, pos[0], pos[1], pos[2]));
                        if (out == 1 && !p->periodic[axis] && q->n[axis] >= 2 * g->H) {
                            /* a sum over the interior cells k from the ghost's side */
                            int64_t n = q->n[axis];
                            for (int kk = 0; kk < g->H; kk++) {
                                double a = jb ? al[(size_t)(kk + 2) * g->elems + ghost_at] : 1.0;
                                if (a == 0) continue;
                                int64_t cp[3] = {gp[0], gp[1], gp[2]};
                                cp[axis] = gp[axis] < 0 ? kk : n - 1 - kk;
                                q->cols[nc] = global_index(q, cp[0], cp[1], cp[2], col_c);
                                q->vals[nc++] = jb ? v * a : 0.0;
                            }
                            continue;
                        }
                        if (out && jb) v *= al[g->elems + ghost_at];
                        if (v == 0) continue;
                        q->cols[nc] = global_index(q, fold(q, 0, gp[0]), p->dim > 1 ? fold(q, 1, gp[1]) : 0,
                                                   p->dim > 2 ? fold(q, 2, gp[2]) : 0, col_c);
                        q->vals[nc++] = jb ? v : 0.0;
                    }
                    if (!nc) continue;
                    PetscInt row = global_index(q, q->first[0] + i, q->first[1] + j, q->first[2] + k, row_c);
                    PetscCall(MatSetValues(A, 1, &row, nc, q->cols, q->vals, ADD_VALUES));
                }
            }
    return 0;
}

/* The matrix of the Jacobian. The DMDA's holds every unknown's every neighbour within its stencil
 * width (PFHub 2b's five fields at halo 2: 125 entries a row, of which 14 on average can be
 * nonzero). Where that is EXACT_PATTERN_RATIO times the Jacobian's own entries a row or more, the
 * matrix gets the pattern the kernel's entries give and no more, preallocated exactly
 * (MATPREALLOCATOR) and filled with zeros, so the pattern stays the same at every assembly, the
 * shift's diagonal included: matrix products, ILU and assembly then cost what the problem's stencil
 * asks (2b at 128^2: 4.7x less CPU, the same iterations; docs/performance.md, "PFHub 2b
 * implicit"). Below it the DMDA's: ILU(1) on the wider pattern is a stronger preconditioner (FiPy's
 * coupled Cahn-Hilliard, 3x, fails with ILU(1) on its own pattern). */
#define EXACT_PATTERN_RATIO 4
PetscErrorCode jacobian_matrix(implicit_solver *q, Mat *J)
{
    Mat pre;
    PetscInt m, n, M, N, lo, hi, sw;
    DMDAStencilType st;
    PetscCall(DMDAGetInfo(q->da, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &sw, NULL, NULL, NULL, &st));
    int dim = q->p->dim, w = 2 * (int)sw + 1;
    double dmda_row = q->dof * (st == DMDA_STENCIL_BOX ? pow(w, dim) : 2.0 * (double)sw * dim + 1);
    int rows = 0, own = 0; /* the Jacobian's entries a row, on average over the unknowns with one */
    for (int e = 0; e < q->jac->n; e++) {
        own += q->unknown[q->jac->entries[e].field] >= 0;
        rows += e == 0 || q->jac->entries[e].output != q->jac->entries[e - 1].output;
    }
    if (!rows || dmda_row < EXACT_PATTERN_RATIO * own / rows) return DMCreateMatrix(q->da, J);
    PetscCall(DMSetMatrixPreallocateSkip(q->da, PETSC_TRUE));
    PetscCall(DMCreateMatrix(q->da, J));
    PetscCall(MatGetLocalSize(*J, &m, &n));
    PetscCall(MatGetSize(*J, &M, &N));
    PetscCall(MatCreate(PetscObjectComm((PetscObject)*J), &pre));
    PetscCall(MatSetType(pre, MATPREALLOCATOR));
    PetscCall(MatSetSizes(pre, m, n, M, N));
    PetscCall(MatSetUp(pre));
    PetscCall(insert_rows(q, pre, NULL));
    PetscCall(MatGetOwnershipRange(*J, &lo, &hi));
    for (PetscInt r = lo; r < hi; r++) PetscCall(MatSetValue(pre, r, r, 0.0, ADD_VALUES)); /* the shift's */
    PetscCall(MatAssemblyBegin(pre, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(pre, MAT_FINAL_ASSEMBLY));
    PetscCall(MatPreallocatorPreallocate(pre, PETSC_TRUE, *J));
    PetscCall(MatDestroy(&pre));
    q->exact_pattern = 1;
    return 0;
}

static PetscErrorCode assemble(implicit_solver *q, double t, Vec U, Mat A)
{
    double t0 = driver_now();
    PetscCall(run_kernel(q, PJ_KERNEL_JACOBIAN, t, U, 1));
    PetscCall(MatZeroEntries(A));
    const double **jb = malloc(sizeof *jb * (size_t)(q->jac->n + 1));
    if (!jb) SETERRQ(PETSC_COMM_SELF, PETSC_ERR_MEM, "out of memory");
    for (int e = 0; e < q->jac->n; e++) jb[e] = (const double *)q->m.st->buf[2 * q->nf + e];
    PetscErrorCode rc = insert_rows(q, A, jb);
    free(jb);
    PetscCall(rc);
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    q->st.jacobians++;
    q->st.seconds_jacobian += driver_now() - t0;
    return 0;
}

/* q->gershgorin: the max over the rows of J of J_ii + sum over j != i of |J_ij|: shift I - J is
 * diagonally dominant with a positive diagonal, so symmetric positive (semi)definite when J is
 * symmetric, for every shift at least this (Gershgorin). The sums off the diagonal (q->Voff) are
 * taken row by row after an assembly (offsums), and kept when only the diagonal changed. */
static PetscErrorCode gershgorin_bound(implicit_solver *q, Mat J, int offsums)
{
    if (offsums) {
        PetscInt lo, hi;
        PetscScalar *off;
        PetscCall(MatGetOwnershipRange(J, &lo, &hi));
        PetscCall(VecGetArray(q->Voff, &off));
        for (PetscInt row = lo; row < hi; row++) {
            PetscInt nc;
            const PetscInt *cols;
            const PetscScalar *vals;
            double r = 0;
            PetscCall(MatGetRow(J, row, &nc, &cols, &vals));
            for (PetscInt c = 0; c < nc; c++) r += cols[c] == row ? 0 : fabs(vals[c]);
            PetscCall(MatRestoreRow(J, row, &nc, &cols, &vals));
            off[row - lo] = r;
        }
        PetscCall(VecRestoreArray(q->Voff, &off));
    }
    PetscReal b;
    PetscCall(MatGetDiagonal(J, q->D));
    PetscCall(VecAXPY(q->D, 1.0, q->Voff));
    PetscCall(VecMax(q->D, NULL, &b));
    q->gershgorin = b;
    return 0;
}

/* The sum of the Jacobian kernel's diagonal coefficients (by the unknown itself at the cell: they
 * never fold through a ghost) per row, from its last evaluation, into d. */
static PetscErrorCode diagonal_sum(implicit_solver *q, Vec d)
{
    const grid_layout *g = solver_layout(q);
    PetscScalar *v;
    PetscCall(VecSet(d, 0));
    PetscCall(VecGetArray(d, &v));
    for (int e = 0; e < q->jac->n; e++) {
        const derive_entry *de = &q->jac->entries[e];
        int c = q->unknown[de->out_field];
        if (de->off[0] || de->off[1] || de->off[2] || de->field != de->out_field || c < 0) continue;
        const double *jb = (const double *)q->m.st->buf[2 * q->nf + e];
        for (int64_t k = 0; k < g->n[2]; k++)
            for (int64_t j = 0; j < g->n[1]; j++)
                for (int64_t i = 0; i < g->n[0]; i++) /* this process's rows: its block, from own_offset */
                    v[global_index(q, q->first[0] + i, q->first[1] + j, q->first[2] + k, c) - q->own_offset] +=
                        jb[at(g, i, j, k)];
    }
    PetscCall(VecRestoreArray(d, &v));
    return 0;
}

/* A Jacobian whose coefficients off the diagonal read neither the state nor the time
 * (q->diag_update): Jc, assembled once, plus the change of the diagonal coefficients since, from
 * one run of the Jacobian kernel; no row is inserted. Equal to an assembly up to rounding (the
 * diagonal is Jc's plus a difference). */
static PetscErrorCode update_diagonal(implicit_solver *q, double t, Vec U, Mat B)
{
    double t0 = driver_now();
    PetscCall(run_kernel(q, PJ_KERNEL_JACOBIAN, t, U, 0));
    PetscCall(diagonal_sum(q, q->D));
    PetscCall(VecAXPY(q->D, -1.0, q->Djc));
    PetscCall(MatCopy(q->Jc, B, SAME_NONZERO_PATTERN));
    PetscCall(MatDiagonalSet(B, q->D, ADD_VALUES));
    if (q->cg) PetscCall(gershgorin_bound(q, B, 0));
    q->st.jacobians++;
    q->st.seconds_jacobian += driver_now() - t0;
    return 0;
}

/* The Jacobian into B: assembled, or, for a Jacobian that depends on nothing that changes during
 * the run (q->jac_reuse), copied from its first assembly (the same values: TS overwrites B with
 * shift I - J, so the assembled J is kept apart in Jc). A param changed between steps
 * (pj_sim_set_param) makes both the kept Jacobian and the ghost rule (alpha: a Robin coefficient
 * may be a param) stale. A copy is a sweep over the matrix; an assembly runs the Jacobian kernel
 * and inserts every row. */
void check_params(implicit_solver *q)
{
    const double *param = q->m.st->param;
    size_t np = sizeof *param * (size_t)q->p->n_params;
    if (np && memcmp(q->jc_params, param, np)) {
        memcpy(q->jc_params, param, np);
        q->alpha_valid = 0;
        q->jc_valid = 0;
        q->b_shifted = 0;
    }
}

PetscErrorCode jacobian_into(implicit_solver *q, double t, Vec U, Mat B)
{
    check_params(q);
    if (q->jac_reuse && q->jc_valid) {
        PetscCall(MatCopy(q->Jc, B, SAME_NONZERO_PATTERN));
        return 0;
    }
    if (q->diag_update && q->jc_valid) return update_diagonal(q, t, U, B);
    PetscCall(assemble(q, t, U, B));
    if (q->cg) PetscCall(gershgorin_bound(q, B, 1));
    if (!q->jac_reuse && !q->diag_update) return 0;
    if (q->Jc) PetscCall(MatCopy(B, q->Jc, SAME_NONZERO_PATTERN));
    else PetscCall(MatDuplicate(B, MAT_COPY_VALUES, &q->Jc));
    if (q->diag_update) PetscCall(diagonal_sum(q, q->Djc));
    q->jc_valid = 1;
    return 0;
}

/* 1 when kernel k's node `node` reads t, dt or rand() (through its operands); -1 out of memory. */
static int node_reads_time(const kir_kernel *k, int node)
{
    char *live = calloc((size_t)k->n_nodes + 1, 1);
    int found = 0;
    if (!live) return -1;
    live[node] = 1;
    for (int id = node; id >= 0 && !found; id--) { /* operands come before their users */
        if (!live[id]) continue;
        const kir_node *n = &k->nodes[id];
        found = n->op == KIR_TIME || n->op == KIR_DT || n->op == KIR_RAND;
        for (int a = 0; a < 3; a++)
            if (n->arg[a] >= 0) live[n->arg[a]] = 1;
    }
    free(live);
    return found;
}

/* 1 when the ghost rule's dependence on the interior (alpha, measure_alpha) stays the same for the
 * whole run: no linear boundary condition a u + b dn(u) = c whose a or b reads the time (c, the
 * constant part, and coordinates do not change alpha), so it is measured once. */
int ghost_rule_constant(const pj_program *p)
{
    for (int side = 0; side < 6; side++) {
        const kir_kernel *k = p->bc_kernel[side];
        for (int f = 0; f < p->n_fields; f++) {
            if (p->bc[f][side].kind != PJ_BC_LINEAR || p->bc[f][side].constant) continue;
            if (!k) return 0;
            for (int o = 0; o < k->n_outputs; o++)
                if (k->outputs[o].field == f && k->outputs[o].slot <= 1 && node_reads_time(k, k->outputs[o].node)) return 0;
        }
    }
    return 1;
}

/* What the Jacobian depends on (its reads, derive.h) decides how it is used: F affine in the
 * unknowns (no unknown in the Jacobian, none through a piecewise-constant op) is a linear problem;
 * a linear problem whose Jacobian reads no time, coefficient field or rand(), with a ghost rule
 * that does not change (ghost_rule_constant), has the same Jacobian at every step: assembled once
 * (jacobian_into). Returns -1 when out of memory. */
int jacobian_plan(implicit_solver *q)
{
    unsigned r = q->jac->reads;
    q->linear = !(r & DERIVE_READS_UNKNOWN);
    q->jac_reuse = q->linear && q->alpha_const && !(r & (DERIVE_READS_FIELD | DERIVE_READS_TIME | DERIVE_READS_RAND));
    q->diag_update = !q->jac_reuse && q->alpha_const &&
                     !(q->jac->offdiag_reads &
                       (DERIVE_READS_UNKNOWN | DERIVE_READS_FIELD | DERIVE_READS_TIME | DERIVE_READS_RAND));
    q->jc_params = malloc(sizeof *q->jc_params * (size_t)(q->p->n_params + 1));
    if (!q->jc_params) return -1;
    if (q->p->n_params) memcpy(q->jc_params, q->m.st->param, sizeof *q->jc_params * (size_t)q->p->n_params);
    return 0;
}

static PetscErrorCode fd_function(SNES snes, Vec U, Vec F, void *ctx)
{
    (void)snes;
    implicit_solver *q = ctx;
    return eval_rhs(q, q->t_fd, U, F);
}

int implicit_check_jacobian(implicit_solver *q, double t, double tol, jacobian_check *r, char *err, size_t len)
{
    SNES snes = NULL;
    Mat Jfd = NULL;
    Vec U = NULL;
    PetscScalar *x;
    memset(r, 0, sizeof *r);
    r->first_bad = -1;
    if (q->d && q->nblocks > 1) {
        diag_set(err, len, "the Jacobian check runs on one process");
        return -1;
    }
    CHECK(VecDuplicate(q->X, &U), "VecDuplicate");
    CHECK(VecGetArray(U, &x), "VecGetArray");
    slot_to_vec(q, 0, x);
    CHECK(VecRestoreArray(U, &x), "VecRestoreArray");
    q->b_shifted = 0; /* J is overwritten */
    CHECK(assemble(q, t, U, q->J), "assembling the Jacobian");
    CHECK(MatDuplicate(q->J, MAT_DO_NOT_COPY_VALUES, &Jfd), "MatDuplicate");
    CHECK(SNESCreate(PETSC_COMM_SELF, &snes), "SNESCreate");
    CHECK(SNESSetDM(snes, q->da), "SNESSetDM");
    CHECK(SNESSetFunction(snes, q->R, fd_function, q), "SNESSetFunction");
    q->t_fd = t;
    CHECK(SNESComputeJacobianDefault(snes, U, Jfd, Jfd, q), "SNESComputeJacobianDefault");
    PetscInt n;
    CHECK(MatGetSize(q->J, &n, NULL), "MatGetSize");
    /* differencing's own error, the rounding of F over the step (about sqrt(eps) |F|), is a floor */
    CHECK(eval_rhs(q, t, U, q->R), "F");
    const PetscScalar *f;
    CHECK(VecGetArrayRead(q->R, &f), "VecGetArrayRead");
    PetscScalar *dense = calloc((size_t)n, sizeof *dense);
    double *colmax = calloc((size_t)n, sizeof *colmax);
    if (!dense || !colmax) {
        free(dense);
        free(colmax);
        diag_set(err, len, "out of memory");
        goto fail;
    }
    /* each column's largest entry, of either matrix: differencing drops a column's entries below
       1e-14 of its largest (one perturbation of u moves them all), so an entry below 1e-12 of it
       is not seen by the differences and is not compared; NaN for a column that reaches a row
       whose F or entry is not finite (differencing drops all of such a column) */
    for (int which = 0; which < 2; which++)
        for (PetscInt row = 0; row < n; row++) {
            PetscInt nc;
            const PetscInt *cols;
            const PetscScalar *vals;
            Mat m = which ? Jfd : q->J;
            CHECK(MatGetRow(m, row, &nc, &cols, &vals), "MatGetRow");
            for (PetscInt c = 0; c < nc; c++) /* a column that reaches a non-finite value: NaN */
                colmax[cols[c]] = isfinite(vals[c]) && isfinite(f[row]) && !isnan(colmax[cols[c]])
                                      ? fmax(colmax[cols[c]], fabs(vals[c])) : NAN;
            CHECK(MatRestoreRow(m, row, &nc, &cols, &vals), "MatRestoreRow");
        }
    for (PetscInt row = 0; row < n; row++) {
        PetscInt nc;
        const PetscInt *cols;
        const PetscScalar *vals;
        double scale = 0, diff = 0;
        int finite = 1;
        /* the row of J into dense[], then J_fd's subtracted: both on the same pattern */
        CHECK(MatGetRow(q->J, row, &nc, &cols, &vals), "MatGetRow");
        for (PetscInt c = 0; c < nc; c++) dense[cols[c]] += vals[c];
        CHECK(MatRestoreRow(q->J, row, &nc, &cols, &vals), "MatRestoreRow");
        CHECK(MatGetRow(Jfd, row, &nc, &cols, &vals), "MatGetRow");
        for (PetscInt c = 0; c < nc; c++) {
            /* differencing loses a whole column where it reaches a non-finite value */
            finite &= isfinite(vals[c]) && isfinite(dense[cols[c]]) && !isnan(colmax[cols[c]]);
            double unseen = 1e-12 * colmax[cols[c]];
            if (fabs(vals[c]) <= unseen && fabs(dense[cols[c]]) <= unseen) dense[cols[c]] = vals[c];
            else scale = fmax(scale, fabs(vals[c]));
            dense[cols[c]] -= vals[c];
        }
        for (PetscInt c = 0; c < nc; c++) {
            diff = fmax(diff, fabs(dense[cols[c]]));
            dense[cols[c]] = 0;
        }
        CHECK(MatRestoreRow(Jfd, row, &nc, &cols, &vals), "MatRestoreRow");
        r->rows++;
        if (!finite) continue;
        r->compared++;
        r->entries += nc;
        double rel = scale > 0 ? diff / scale : diff;
        if (!(diff <= tol * scale + 1e-6 * fmax(1, fabs(f[row])))) {
            r->disagree++;
            if (r->first_bad < 0) r->first_bad = row;
        } else if (diff <= tol * scale && rel > r->worst) {
            r->worst = rel;
        }
    }
    free(dense);
    free(colmax);
    VecRestoreArrayRead(q->R, &f);
    MatDestroy(&Jfd);
    VecDestroy(&U);
    SNESDestroy(&snes);
    return 0;
fail:
    if (Jfd) MatDestroy(&Jfd);
    if (U) VecDestroy(&U);
    if (snes) SNESDestroy(&snes);
    return -1;
}
