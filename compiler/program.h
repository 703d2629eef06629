/* program.h — a checked, lowered problem: everything the runtime needs, nothing it must parse.
 *
 * compile_problem() (compiler/frontend.c) runs the whole front end (parse -> sema -> lower ->
 * kir_finish/verify):
 *
 *     text --parse_program--> AST --sema--> resolved problem --lower--> pj_program
 *
 * A pj_program owns its kernels and strings (freed by program_free). Slots are the buffer
 * sets of a time step (see the scheme tables in scheme.c): slot 0 always holds the state
 * U at the start and end of a step. */
#ifndef PJ_PROGRAM_H
#define PJ_PROGRAM_H
#include <stdint.h>
#include "diag.h"
#include "kir.h"

/* Explicit schemes first; from PJ_BEULER on the schemes are implicit (runtime/implicit.c solves
 * them through PETSc) and PJ_STEADY is the `steady` statement: F(U) = 0 in one Newton solve. */
typedef enum pj_scheme { PJ_EULER, PJ_RK2, PJ_RK3, PJ_RK4, PJ_BEULER, PJ_CN, PJ_BDF2, PJ_IMEX, PJ_STEADY } pj_scheme;
#define PJ_SCHEME_IMPLICIT(s) ((s) >= PJ_BEULER)
typedef enum pj_bc_kind { PJ_BC_NEUMANN0, PJ_BC_LINEAR, PJ_BC_PERIODIC } pj_bc_kind;
enum { PJ_FMT_CSV = 1, PJ_FMT_VTK = 2, PJ_FMT_PNG = 4 };
/* What a monitor reports: the sum of e times the cell volume, the largest e, the smallest, the
 * mean (the sum over the number of cells). */
typedef enum pj_monitor_kind { PJ_MON_INTEGRAL, PJ_MON_MAXVAL, PJ_MON_MINVAL, PJ_MON_MEAN } pj_monitor_kind;

typedef struct pj_stage {
    kir_kernel *kernel;   /* KIR_STAGE */
    int read_slot;        /* the slot loaded at offsets: its ghosts are filled before the stage */
    double t_frac;        /* the stage's time is t + t_frac * dt */
} pj_stage;

typedef struct pj_bc {
    pj_bc_kind kind;
    int constant;         /* LINEAR with a, b, c free of t and coordinates: evaluate once */
    int lap;              /* LINEAR with a second condition lap(u) = value (output slot 3 of the bc
                             kernel): the second ghost layer keeps it (fourth-order operators) */
    pj_loc loc;           /* where it was written (line 0: the default) */
} pj_bc;

typedef struct pj_program {
    char *filename;
    int dim;
    int64_t n[3];         /* cells per axis; 1 beyond the dimension */
    double length[3], origin[3];

    int n_fields;
    char **field_names;
    int *field_has_eq;
    int *field_halo;      /* per field, from the composed stage kernels */
    int halo;             /* max of field_halo, at least 1: ghost layers allocated per side */

    int n_params;
    char **param_names;
    double *param_values; /* defaults as written (after evaluating params_kernel) */
    kir_kernel *params_kernel; /* KIR_PARAMS: re-evaluated in order after --set */
    int n_consts;
    char **const_names;   /* in the order written (what --set may set besides params) */

    kir_kernel *init;     /* KIR_INIT */
    kir_kernel *rhs;      /* KIR_RHS: F(U) of every field with an eq, reading slot 0 */
    kir_kernel *rhs_implicit, *rhs_explicit; /* imex: F split into its implicit(...) terms and the rest */

    pj_scheme scheme;
    int n_slots;
    int n_stages;
    pj_stage *stages;     /* n_stages, composed from rhs by the scheme (compiler/scheme.c) */
    int swap_after_step;  /* Euler: slot 1 holds the new state; swap slots 0 and 1 */
    /* Implicit schemes: stage 0 is the rhs kernel (F(U) into slot 1), stage 1 its Jacobian
       (derive.h): jac[j] says what output j of stage 1 is (buffer 2 * n_fields + j). */
    struct derive_entry *jac;
    int n_jac;
    unsigned jac_reads;   /* what the Jacobian kernel's outputs read: DERIVE_READS_* (derive.h); no
                             DERIVE_READS_UNKNOWN: F is affine in the unknowns (a linear problem) */
    unsigned jac_offdiag_reads; /* the same for the Jacobian's coefficients off its diagonal */
    int jac_symmetric;    /* the Jacobian is symmetric at every state by its structure (derive_symmetric) */
    double adapt;         /* > 0: local error control with this relative tolerance */
    /* the solver statement (0 / NULL: pdejit's defaults) */
    double solver_rtol, solver_atol;
    int solver_max_it;
    char *solver_linear, *solver_pc;

    /* bc[f][side], side 0 left 1 right 2 bottom 3 top 4 back 5 front */
    pj_bc (*bc)[6];
    kir_kernel *bc_kernel[6]; /* KIR_BC per side (NULL when no LINEAR bc on it): a, b, c per field */
    int periodic[3];

    double dt, until;     /* until < 0: not given */
    int64_t steps;        /* < 0: not given */
    int has_output;       /* the file has an output statement */
    double output_every;  /* <= 0: no periodic output */
    int output_formats;   /* PJ_FMT_* bits; CSV when not given */
    int *output_fields;   /* n_output_fields field numbers */
    int n_output_fields;
    double *output_at;    /* `output at = T1, T2, ...`: n_output_at increasing times (then
                             output_every is 0), else NULL */
    int n_output_at;

    /* monitors: named reductions over the cells (`monitor every = , NAME = integral(e) ...`) */
    int has_monitor;      /* the file has a monitor statement: monitor.csv is written */
    int n_monitors;
    char **monitor_names;
    pj_monitor_kind *monitor_kinds;
    kir_kernel *reduce;   /* KIR_REDUCE: output i is monitor i's sum, max or min; NULL without monitors */
    double monitor_every; /* <= 0: at t = 0 and at the end only */
    /* `stop when COND`: a KIR_PARAMS-shaped kernel over n_params + n_monitors values (the
       params, then the monitors) and t, output 0 the condition; NULL without one */
    kir_kernel *stop;
    char *stop_text;      /* COND as written, for the message */
} pj_program;

typedef struct pj_compile_options {
    pj_scheme scheme;     /* used when scheme_set */
    int scheme_set;
    int redefine_line;    /* > 0: statements from this line on redefine earlier ones (redefine.h) */
    /* consts set from outside (--set on a const): const_names[i] takes const_values[i] instead of
       its expression, wherever it is used (the mesh too); a name that is no const is an error */
    int n_const_sets;
    const char *const *const_names;
    const double *const_values;
    /* term.c's face terms only: the calls face_x0__(e) ... face_z1__(e) in cell context evaluate e in
       face context on the cell's low (0) or high (1) face along x, y or z; no problem file has them */
    int term_faces;
} pj_compile_options;

/* Compiles `source` (the contents of `filename`). Errors go to d; returns NULL on error (out of
 * memory included: the error "out of memory", d->out_of_memory set). */
pj_program *compile_problem(const char *filename, const char *source, size_t len, diag *d,
                            const pj_compile_options *opt);
void program_free(pj_program *p);
const char *scheme_name(pj_scheme s);

#endif
