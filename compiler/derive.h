/* derive.h — symbolic derivatives of a kernel: the stencil coefficients of its Jacobian.
 *
 * derive_jacobian() differentiates every output of a stage-like kernel (outputs are values at the
 * cell, computed from loads of fields at cell offsets) with respect to every distinct load
 * (slot, field, offset) it depends on, in forward mode: one sweep over the nodes per load, each
 * node's derivative built from its operands' by the rule of its op in the op table (kir_ops.h,
 * the derivative column). The result is a KIR_JACOBIAN kernel whose nodes are built with the
 * hash-consing builders (so the primal values and the derivatives share their common
 * subexpressions and the canonical hash is kir_finish's, as for any kernel), plus one descriptor
 * per derivative output saying which output and which load it is: what a caller needs to insert
 * stencil coefficients (d F(field at cell i) / d U(slot, field, i + off)), e.g. into PETSc's
 * MatSetValuesStencil. Structurally zero derivatives (no path from the load to the output, or
 * only through piecewise-constant ops) have no output and no descriptor.
 *
 * Owns: the derivative pass and the meaning of the derivative column of kir_ops.h. The kernel IR
 * itself (builders, folding, hash) is kir.c's.
 *
 * Layout of the result (see KIR_JACOBIAN in kir.h): it reads the same slots as the source kernel
 * (n_slots, n_fields and n_params unchanged) and derivative j is stored like a stage output into
 * buffer n_slots * n_fields + j of the launch, at the cell; so the interpreter (interp_stage) and
 * the LLVM back end evaluate it like a stage kernel, with n_outputs buffers more.
 *
 * Order: derivative outputs come by source output, then by load in canonical order (slot, field,
 * then offset z, y, x ascending): nothing in it depends on names or on the order of the source's
 * nodes, so renaming or reformatting a problem gives the same Jacobian kernel and hash.
 *
 * Memory: the pass's own allocations fail softly (NULL with a message); the IR builders it calls
 * abort on out of memory, like every other IR pass. */
#ifndef PJ_DERIVE_H
#define PJ_DERIVE_H
#include <stddef.h>
#include "kir.h"

/* One derivative output of a Jacobian kernel: d(source output `output`)/d(load). */
typedef struct derive_entry {
    int output;            /* index into the source kernel's outputs */
    int out_slot, out_field; /* that output's (slot, field): the row of the Jacobian */
    int slot, field;       /* the load: buffer (slot, field) ... */
    int off[3];            /* ... at cell + off: the column, a stencil point */
} derive_entry;

/* How an op is differentiated, from the derivative column of kir_ops.h. */
typedef enum derive_rule {
    DERIVE_NONE,     /* no rule written: the op cannot be differentiated (a table error) */
    DERIVE_ZERO,     /* D0: derivative zero (leaves other than loads, piecewise constants) */
    DERIVE_VAR,      /* DV: the independent variable (a load) */
    DERIVE_SELECT,   /* DS: select(c, da, db) */
    DERIVE_CHAIN,    /* D1 / D2: the chain rule with the partials the table gives */
    DERIVE_FMA,      /* DF: fma(a, b, c): b * da + a * db + dc */
} derive_rule;

derive_rule derive_op_rule(kir_op op);

/* Differentiates kernel k (KIR_STAGE or KIR_RHS, kir_verify-clean) with respect to every distinct load.
 * Returns a new finished and verified KIR_JACOBIAN kernel named "<k->name>.jac" (free with
 * kir_free); *entries receives a malloc'd array (free with free; NULL when empty) of its
 * n_outputs descriptors, (*entries)[j] describing output j, and *n_entries their number. Returns
 * NULL with a message in err (when not NULL) for a kernel of another kind, one that does not
 * verify, an op without a derivative rule, or out of memory. k is not modified. */
kir_kernel *derive_jacobian(const kir_kernel *k, derive_entry **entries, int *n_entries, char *err,
                            size_t err_len);

/* What the outputs of kernel jac (the Jacobian derive_jacobian made of f, with its descriptors
 * `entries`) that are derivatives by an unknown read, as DERIVE_READS_* bits: only nodes such an
 * output depends on count (derive_jacobian copies every primal node into the Jacobian kernel, and
 * differentiates by coefficient fields too; the solver uses neither). `unknown` (n_fields flags,
 * nonzero for the fields solved for; NULL: all) tells unknowns from coefficient fields. No DERIVE_READS_UNKNOWN: F
 * is affine in the unknowns (a linear problem). Nothing but constants, params, spacings and
 * coordinates read: the Jacobian is the same at every time and state, for the same param values.
 * f (may be NULL) is checked too: an unknown that reaches an output of f through a
 * piecewise-constant op (floor, a comparison, a select's condition) makes F not affine although
 * its derivative is constant where it exists (DERIVE_READS_UNKNOWN). Out of memory: UNKNOWN|TIME. */
enum {
    DERIVE_READS_UNKNOWN = 1, /* a load of an unknown field (or f piecewise in one): F is nonlinear */
    DERIVE_READS_FIELD = 2,   /* a load of another field (a coefficient field) */
    DERIVE_READS_TIME = 4,    /* t or dt */
    DERIVE_READS_PARAM = 8,   /* a param */
    DERIVE_READS_RAND = 16,   /* rand() */
};
unsigned derive_reads(const kir_kernel *jac, const derive_entry *entries, const kir_kernel *f, const int *unknown);
/* The same for the derivatives off the diagonal only (by the value at another cell, or by another
 * unknown): none reading the state or the time means that only the diagonal of the Jacobian
 * changes from one Newton iteration to the next (Allen-Cahn, a reaction with constant diffusion). */
unsigned derive_reads_off_diagonal(const kir_kernel *jac, const derive_entry *entries, const int *unknown);

/* 1 when the Jacobian jac (descriptors entries) is symmetric at every state, boundary rows
 * included, by its structure alone: every coefficient off the diagonal (another cell, or another
 * unknown at the cell) is the same node as its transposed partner (column field and row field
 * exchanged, the offset negated) and, at another cell, is a constant (constants, params, spacings:
 * no state, place or time) of a field on itself; diagonal coefficients may read anything. A ghost
 * cell then folds only onto the diagonal (one layer along non-periodic axes, no corners) or onto
 * its periodic partner, whose coefficient is the same. Conservative: 0 may be symmetric after all.
 * `unknown` as for derive_reads; periodic[a] nonzero for periodic axes. */
int derive_symmetric(const kir_kernel *jac, const derive_entry *entries, int n_entries, const int *unknown,
                     const int periodic[3]);

#endif
