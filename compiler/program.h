/* program.h — a checked, lowered problem: everything the runtime needs, nothing it must parse.
 *
 * compile_problem() (compiler/frontend.c) runs the whole front end (parse -> sema -> lower ->
 * kir_finish/verify):
 *
 *     text --parse_program--> AST --sema--> resolved problem --lower--> pj_program
 *
 * A pj_program owns its kernels and strings (freed by program_free). Slots are the buffer
 * sets of a time step (see the scheme tables in scheme.c): slot 0 always holds the state
 * U at the start and end of a step.
 *
 * The kernels are a typed set, each named by what it computes (pj_kernel_id), never by a place
 * in a list: the right-hand side F (rhs), the part of F an implicit scheme solves for and the
 * rest (imex), F's Jacobian with its entries (program_jacobian: derived once, on demand, owned
 * by the program), the fused stages of an explicit scheme, the monitors' reduction, the initial
 * values, the boundary coefficients per side and the params. */
#ifndef PJ_PROGRAM_H
#define PJ_PROGRAM_H
#include <stdint.h>
#include "diag.h"
#include "kir.h"

/* Explicit schemes first; from PJ_BEULER to PJ_STEADY the schemes are implicit (runtime/implicit.c
 * solves them through PETSc) and PJ_STEADY is the `steady` statement: F(U) = 0 in one Newton solve.
 * The embedded explicit pairs rk23 and rk45 come last (the numbers of the others are in checkpoints'
 * program hashes: runtime/checkpoint.c). */
typedef enum pj_scheme {
    PJ_EULER, PJ_RK2, PJ_RK3, PJ_RK4, PJ_BEULER, PJ_CN, PJ_BDF2, PJ_IMEX, PJ_STEADY,
    PJ_RK23, /* Bogacki-Shampine 3(2) */
    PJ_RK45, /* Dormand-Prince 5(4) */
    PJ_N_SCHEMES
} pj_scheme;
#define PJ_SCHEME_IMPLICIT(s) ((s) >= PJ_BEULER && (s) <= PJ_STEADY)
/* An explicit scheme with an embedded error estimate: one that `adapt` may ask for. */
#define PJ_SCHEME_EMBEDDED(s) ((s) == PJ_RK23 || (s) == PJ_RK45)
typedef enum pj_bc_kind { PJ_BC_NEUMANN0, PJ_BC_LINEAR, PJ_BC_PERIODIC } pj_bc_kind;
enum { PJ_FMT_CSV = 1, PJ_FMT_VTK = 2, PJ_FMT_PNG = 4 };
/* `output ..., colormap = NAME`: the PNG frames' colour map (runtime/picture.h); the names in
 * PJ_CMAP_NAMES's order */
typedef enum pj_colormap { PJ_CMAP_VIRIDIS, PJ_CMAP_MAGMA, PJ_CMAP_GRAY, PJ_CMAP_COOLWARM, PJ_N_CMAPS } pj_colormap;
#define PJ_CMAP_NAMES {"viridis", "magma", "gray", "coolwarm"}
/* What a monitor reports: the sum of e times the cell volume, the largest e, the smallest, the
 * mean (the sum over the number of cells). */
typedef enum pj_monitor_kind { PJ_MON_INTEGRAL, PJ_MON_MAXVAL, PJ_MON_MINVAL, PJ_MON_MEAN } pj_monitor_kind;

/* A kernel of a program, by what it computes: PJ_KERNEL_STAGE(i) is stage i of an explicit scheme
 * (0 .. n_stages - 1, in the order a step runs them); the named kernels are negative. What back
 * ends compile (cpu_backend_prepare_kernels, cuda_sim_options.kernels) and what a sim runs
 * (sim_eval, a sim_stage_runner) are asked for by these ids. */
typedef int pj_kernel_id;
#define PJ_KERNEL_STAGE(i) (i)
enum {
    PJ_KERNEL_RHS = -1,          /* p->rhs: F(U) of every field with an eq, reading slot 0, into slot 1 */
    PJ_KERNEL_RHS_IMPLICIT = -2, /* the part of F an implicit scheme solves for: imex's implicit(...)
                                    terms (p->rhs_implicit), else F itself */
    PJ_KERNEL_RHS_EXPLICIT = -3, /* imex: the rest of F (p->rhs_explicit); none otherwise */
    PJ_KERNEL_JACOBIAN = -4,     /* program_jacobian(p)->kernel: of PJ_KERNEL_RHS_IMPLICIT */
    PJ_KERNEL_REDUCE = -5,       /* p->reduce: the monitors */
    PJ_KERNEL_INIT = -6,         /* p->init */
    PJ_KERNEL_NAMED = 6          /* how many named kernels there are (ids -1 .. -PJ_KERNEL_NAMED) */
};

/* The Jacobian of the part of F an implicit scheme solves for (F itself for every scheme but
 * imex), from compiler/derive.c: output j of `kernel` (KIR_JACOBIAN, reading slot 0) is
 * entries[j], stored into buffer 2 * n_fields + j of its launch (after the two slots it reads). */
typedef struct pj_jacobian {
    kir_kernel *kernel;
    struct derive_entry *entries; /* n, in derive.h's canonical order (by output, then load) */
    int n;
    unsigned reads;       /* what the kernel's outputs read: DERIVE_READS_* (derive.h); no
                             DERIVE_READS_UNKNOWN: F is affine in the unknowns (a linear problem) */
    unsigned offdiag_reads; /* the same for the coefficients off the diagonal */
    int symmetric;        /* symmetric at every state by its structure (derive_symmetric) */
} pj_jacobian;

typedef struct pj_stage {
    kir_kernel *kernel;   /* KIR_STAGE */
    int read_slot;        /* the slot loaded at offsets: its ghosts are filled before the stage */
    double t_frac;        /* the stage's time is t + t_frac * dt */
} pj_stage;

typedef enum pj_geometry { PJ_GEOM_CARTESIAN, PJ_GEOM_CYLINDRICAL, PJ_GEOM_SPHERICAL } pj_geometry;
typedef enum pj_spacing { PJ_SPACING_UNIFORM, PJ_SPACING_STRETCH, PJ_SPACING_LIST } pj_spacing;

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
    /* the mesh's geometry and spacing (compiler/mesh.c; docs/language.md "Meshes"): a uniform
       Cartesian axis is `length / n` wide everywhere and its kernels are today's; any other axis
       carries its metric (face positions, areas, volumes) in the kernels themselves */
    pj_geometry geometry;
    pj_spacing spacing[3];
    double stretch[3];    /* PJ_SPACING_STRETCH: each cell this many times wider than the one before */
    double *faces[3];     /* a non-uniform axis: its n + 1 face positions (malloc), else NULL */
    kir_metric *metric;   /* the metric tables of the axes that are not plain (mesh.c), or NULL */
    int axis_inner;       /* cylindrical or spherical with r0 = 0: the inner side is the axis or
                             centre (zero area, no condition) */

    int n_fields;
    char **field_names;
    int n_arrays;         /* `field eta[N]` arrays: their names and sizes (members are the fields */
    char **array_names;   /* eta1 ... etaN); 0 and NULL without arrays */
    int *array_sizes;
    int *field_has_eq;    /* an unknown: a dt(...) equation, or an algebraic one (field_algebraic) */
    int *field_algebraic; /* its equation is `eq 0 = EXPR` (EXPR is its output of rhs): no mass term,
                             solved by beuler, bdf2 and steady; an explicit scheme evaluates it
                             (EXPR linear in it) in passes that are stages of their own, writing
                             it into the slot they read (compiler/algebraic.c) */
    int n_algebraic;
    int *field_halo;      /* per field, from the composed stage kernels */
    int halo;             /* max of field_halo, at least 1: ghost layers allocated per side */
    double ms_front;      /* compile_problem's time: parsing, names and checks, lowering to kernel IR */
    double ms_kir;        /* and the kernel IR passes (kir_finish, the scheme's stages, halos) */

    int n_params;
    char **param_names;
    double *param_values; /* defaults as written (after evaluating params_kernel) */
    kir_kernel *params_kernel; /* KIR_PARAMS: re-evaluated in order after --set */
    int n_consts;
    char **const_names;   /* in the order written (what --set may set besides params) */

    /* the kernel set (see the top; program_kernel names them) */
    kir_kernel *init;     /* KIR_INIT */
    kir_kernel *rhs;      /* KIR_RHS: F(U) of every field with an eq, reading slot 0 */
    kir_kernel *rhs_implicit, *rhs_explicit; /* imex: F split into its implicit(...) terms and the rest */

    pj_jacobian *jacobian; /* program_jacobian's: NULL until derived (an implicit scheme's when
                              compiled, else on first use); read it through program_jacobian */

    pj_scheme scheme;
    int n_slots;          /* implicit schemes: 2, then the slots that hold the Jacobian's entries */
    int n_stages;         /* explicit schemes only; 0 for implicit ones */
    pj_stage *stages;     /* n_stages, composed from rhs by the scheme (compiler/scheme.c) */
    int swap_after_step;  /* Euler: slot 1 holds the new state; swap slots 0 and 1 */
    double adapt;         /* > 0: local error control with this relative tolerance */
    /* adapt with an embedded pair (rk23, rk45; scheme_lower): the last stage writes, at each cell,
       the sum over the fields with an eq of (e / (atol + rtol max(|y|, |y^|)))^2 into buffer
       adapt_error_buf (e = y - y^, the difference of the pair's two solutions); its mean over
       the cells and fields is the square of the weighted RMS norm the controller takes
       (runtime/state.c); adapt_order is the exponent's order (3 rk23, 5 rk45). 0 otherwise. */
    int adapt_order, adapt_error_buf, adapt_eq_fields;
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
    int output_colormap;  /* pj_colormap of the PNG frames; viridis when not given */
    int has_output_range; /* `range = LO, HI`: every PNG frame on output_range[0]..[1] (LO < HI);
                             else each frame on its own min..max */
    double output_range[2];
    int output_slice;     /* `slice = AXIS[, AT]` (3D only): 1 + the axis (x 0, y 1, z 2) the PNG frames
                             cut across, at cell output_slice_index along it; 0: the default, the
                             middle plane across z (k = n[2]/2) */
    int64_t output_slice_index;

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

/* Kernel `id` of p, or NULL when p has none such (a stage number out of range, no monitors, no
 * imex split, a Jacobian that cannot be derived). */
const kir_kernel *program_kernel(const pj_program *p, pj_kernel_id id);
/* The Jacobian of PJ_KERNEL_RHS_IMPLICIT, derived with derive.c on first use and kept in p (freed
 * with it); safe to call from several threads at once. NULL when out of memory or when F cannot
 * be differentiated (err says why; err may be NULL). */
const pj_jacobian *program_jacobian(const pj_program *p, char *err, size_t err_len);
/* Frees p's Jacobian (program_free does). */
void program_free_jacobian(pj_program *p);
/* Room enough for program_run_kernels' ids of any program: at most 7 stages (rk45), twice with the passes
 * of algebraic equations (algebraic.c), and one pass more. */
#define PJ_KERNEL_IDS_MAX 24
/* The kernels a step of p runs, in order, into ids (room for n_stages + 3): an explicit scheme's
 * stages; an implicit scheme's F (its implicit part), the Jacobian and, under imex, the explicit
 * part. Returns their number. */
int program_step_kernels(const pj_program *p, pj_kernel_id *ids);
/* The same plus the monitors' reduction when p has one (room for n_stages + 4): what a run on a
 * back end compiles. */
int program_run_kernels(const pj_program *p, pj_kernel_id *ids);

/* compiler/mesh.c. 1 when axis a of p is a uniform Cartesian one (or beyond the dimension): its
 * cells are length / n wide and its face areas 1 (the z axis of an r-z mesh is one too). */
int program_axis_plain(const pj_program *p, int a);
int program_mesh_plain(const pj_program *p); /* every axis is */
/* The centre of cell i (0 <= i < n[a]) along axis a, in the mesh's coordinates. */
double program_cell_centre(const pj_program *p, int a, int64_t i);
/* What a sum over the cells of a monitor's kernel value is multiplied by to give integral(e):
 * the widths of the plain axes (h[a], the kernel weighs the others itself); and the divisor of
 * mean(e): the mesh's volume in the same units. */
double program_integral_scale(const pj_program *p, const double h[3]);
double program_mean_divisor(const pj_program *p);

#endif
