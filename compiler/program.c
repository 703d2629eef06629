/* program.c — a compiled program's kernel set by name (program.h): which kernel an id names,
 * the kernels a step and a run need, and the Jacobian derived once on demand. */
#include <stdio.h>
#include <stdlib.h>
#include "derive.h"
#include "diag.h"
#include "program.h"

/* imex with its split lowered: the implicit part is rhs_implicit, the rest rhs_explicit */
static int split(const pj_program *p) { return p->scheme == PJ_IMEX && p->rhs_implicit && p->rhs_explicit; }

const kir_kernel *program_kernel(const pj_program *p, pj_kernel_id id)
{
    if (id >= 0) return id < p->n_stages && p->stages ? p->stages[id].kernel : NULL;
    switch (id) {
    case PJ_KERNEL_RHS: return p->rhs;
    case PJ_KERNEL_RHS_IMPLICIT: return split(p) ? p->rhs_implicit : p->rhs;
    case PJ_KERNEL_RHS_EXPLICIT: return split(p) ? p->rhs_explicit : NULL;
    case PJ_KERNEL_JACOBIAN: {
        const pj_jacobian *j = program_jacobian(p, NULL, 0);
        return j ? j->kernel : NULL;
    }
    case PJ_KERNEL_REDUCE: return p->reduce;
    case PJ_KERNEL_INIT: return p->init;
    default: return NULL;
    }
}

int program_step_kernels(const pj_program *p, pj_kernel_id *ids)
{
    int n = 0;
    if (!PJ_SCHEME_IMPLICIT(p->scheme)) {
        for (int s = 0; s < p->n_stages; s++) ids[n++] = PJ_KERNEL_STAGE(s);
        return n;
    }
    ids[n++] = PJ_KERNEL_RHS_IMPLICIT;
    ids[n++] = PJ_KERNEL_JACOBIAN;
    if (split(p)) ids[n++] = PJ_KERNEL_RHS_EXPLICIT;
    return n;
}

int program_run_kernels(const pj_program *p, pj_kernel_id *ids)
{
    int n = program_step_kernels(p, ids);
    if (p->reduce) ids[n++] = PJ_KERNEL_REDUCE;
    return n;
}

static void jacobian_free(pj_jacobian *j)
{
    if (!j) return;
    kir_free(j->kernel);
    free(j->entries);
    free(j);
}

/* Derived once: concurrent first calls may each derive one, the first published is kept and
 * the others freed (the same kernel: derive.c is deterministic). */
const pj_jacobian *program_jacobian(const pj_program *p, char *err, size_t err_len)
{
    pj_jacobian *j = __atomic_load_n(&p->jacobian, __ATOMIC_ACQUIRE);
    if (j) return j;
    const kir_kernel *F = program_kernel(p, PJ_KERNEL_RHS_IMPLICIT);
    if (!F) {
        diag_set(err, err_len, "the program has no right-hand side to differentiate");
        return NULL;
    }
    if (!(j = calloc(1, sizeof *j))) {
        diag_set(err, err_len, "out of memory");
        return NULL;
    }
    char why[256] = "";
    if (!(j->kernel = derive_jacobian(F, &j->entries, &j->n, why, sizeof why))) {
        diag_set(err, err_len, "the Jacobian of the right-hand side cannot be derived: %s", why);
        free(j);
        return NULL;
    }
    snprintf(j->kernel->name, sizeof j->kernel->name, "jacobian");
    j->reads = derive_reads(j->kernel, j->entries, F, p->field_has_eq);
    j->offdiag_reads = derive_reads_off_diagonal(j->kernel, j->entries, p->field_has_eq);
    j->symmetric = derive_symmetric(j->kernel, j->entries, j->n, p->field_has_eq, p->periodic);
    pj_jacobian *expected = NULL;
    /* p is const to its readers; the cache is the one member written after compiling */
    pj_jacobian **slot = (pj_jacobian **)&p->jacobian;
    if (__atomic_compare_exchange_n(slot, &expected, j, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return j;
    jacobian_free(j);
    return expected;
}

void program_free_jacobian(pj_program *p)
{
    jacobian_free(p->jacobian);
    p->jacobian = NULL;
}
