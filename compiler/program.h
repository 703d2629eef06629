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

typedef enum pj_scheme { PJ_EULER, PJ_RK2, PJ_RK3, PJ_RK4 } pj_scheme;
typedef enum pj_bc_kind { PJ_BC_NEUMANN0, PJ_BC_LINEAR, PJ_BC_PERIODIC } pj_bc_kind;
enum { PJ_FMT_CSV = 1, PJ_FMT_VTK = 2, PJ_FMT_PNG = 4 };

typedef struct pj_stage {
    kir_kernel *kernel;   /* KIR_STAGE */
    int read_slot;        /* the slot loaded at offsets: its ghosts are filled before the stage */
    double t_frac;        /* the stage's time is t + t_frac * dt */
} pj_stage;

typedef struct pj_bc {
    pj_bc_kind kind;
    int constant;         /* LINEAR with a, b, c free of t and coordinates: evaluate once */
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

    pj_scheme scheme;
    int n_slots;
    int n_stages;
    pj_stage *stages;     /* n_stages, composed from rhs by the scheme (compiler/scheme.c) */
    int swap_after_step;  /* Euler: slot 1 holds the new state; swap slots 0 and 1 */

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
} pj_compile_options;

/* Compiles `source` (the contents of `filename`). Errors go to d; returns NULL on error (out of
 * memory included: the error "out of memory", d->out_of_memory set). */
pj_program *compile_problem(const char *filename, const char *source, size_t len, diag *d,
                            const pj_compile_options *opt);
void program_free(pj_program *p);
const char *scheme_name(pj_scheme s);

#endif
