/* sema.h — the front end's shared state: the symbol table of one problem and the lowering
 * context. sema.c resolves names and checks expressions; lower.c turns expressions into
 * kernel IR in cell, face, boundary, initial-value and parameter contexts; frontend.c drives
 * both (compile_problem). Dependencies run one way: frontend -> lower -> sema. */
#ifndef PJ_SEMA_H
#define PJ_SEMA_H
#include "ast.h"
#include "program.h"

typedef enum sym_kind { SYM_FIELD, SYM_PARAM, SYM_CONST, SYM_FUNC, SYM_FLUX, SYM_MONITOR } sym_kind;

typedef struct symbol {
    const char *name;
    sym_kind kind;
    pj_loc loc;
    int index;            /* field / param / monitor number */
    const ast_stmt *stmt; /* FUNC / FLUX: the definition */
    ast_expr *value;      /* FIELD init, PARAM / CONST value, MONITOR reduction (NULL: none given) */
    pj_loc value_loc;
    int state;            /* CONST: 0 not evaluated, 1 evaluating, 2 done; FUNC: DFS colour */
    double const_value;
} symbol;

/* Where an expression is evaluated; decides which names and operators are allowed. */
typedef enum lower_where { IN_STAGE, IN_INIT, IN_PARAM, IN_CONST, IN_BC, IN_MESH, IN_STOP } lower_where;

/* Call-by-name bindings of one inlined func/flux: its argument names to the caller's ASTs. */
typedef struct frame {
    const ast_stmt *def;
    ast_expr **args;
    const struct frame *caller;
    pj_loc call_loc;
} frame;

typedef struct lctx {
    kir_kernel *k;
    lower_where where;
    int face, axis;       /* face context along axis, or cell context */
    int off[3];           /* cell context: the cell; face: the cell on the negative side */
    int slot;             /* IN_STAGE: the slot loads read */
    int param_limit;      /* IN_PARAM: params below this number may be used */
    int bc_field, bc_side;/* IN_BC */
    int bc_hit;           /* IN_BC: the field was met where only a constant may stand */
    const frame *env;
} lctx;

typedef struct compiler {
    arena *arena;
    diag *d;
    const ast_program *ast;
    const char *source;   /* the text compiled (not NUL-terminated) */
    size_t source_len;
    symbol *syms;
    int n_syms, cap_syms;
    int *sym_index;       /* open addressing by name hash: symbol number + 1, 0 empty */
    int sym_index_cap;    /* a power of two, at least twice n_syms */
    int n_kind[6];        /* symbols of each sym_kind */
    int dim;
    int periodic[3];      /* periodic axes (set before the equations are lowered): no boundary faces */
    pj_loc mesh_loc;
    const pj_program *mesh; /* the mesh read (read_mesh): its geometry and spacing, for the lowering */
    long work;            /* lowering steps, bounded */
    pj_loc reported[64];  /* error positions already reported by lowering (inlined twice) */
    int n_reported;
    int term_faces;       /* pj_compile_options.term_faces: face_[xyz][01]__(e) exist */
    int n_arrays;         /* the field arrays arrays_expand expanded (`field eta[N]`), in the order */
    const char **array_names; /* declared; their sizes (arena memory) */
    int *array_sizes;
} compiler;

symbol *sema_lookup(compiler *C, const char *name);
const char *sema_lookup_field_name(compiler *C, int field);
int sema_is_builtin_function(const char *name);
/* Checks names, arities and dimensions of an expression; `def` gives the enclosing func's
 * argument names (NULL outside a func). Returns the number of errors. */
int sema_check_expr(compiler *C, const ast_expr *e, const ast_stmt *def);
/* 1 when `name` is one of term.c's face calls face_[xyz][01]__ and C->term_faces is set; *axis and
 * *high tell which face of the cell (pj_compile_options.term_faces). */
int sema_term_face(const compiler *C, const char *name, int *axis, int *high);
/* The axis (0 x, 1 y, 2 z) of a face-gradient component gradx, grady, gradz, or -1. */
int sema_grad_axis(const char *name);
/* The symbols of C->ast (reported: duplicates, built-in names redefined). */
void sema_collect_symbols(compiler *C);
/* sema_check_expr on every expression of the problem (C->dim set), then recursion among funcs. */
void sema_check_program(compiler *C);
const char *sema_kind_text(sym_kind k);            /* "field", "param", ... */
int sema_count_kind(compiler *C, sym_kind kind);
const char *sema_dim_text(int dim);                /* "1D", "2D", "3D" */
const char *sema_side_name(int side);              /* 0 left 1 right 2 bottom 3 top 4 back 5 front */
int sema_side_index(const char *name);             /* or -1 */
const char *sema_closest_side(const char *name);   /* a side a misspelling may have meant, or NULL */
/* The reduction a monitor's value calls (0 integral, 1 maxval, 2 minval, 3 mean: pj_monitor_kind),
 * or -1 when `name` is none. */
int sema_reduction(const char *name);

/* lower.c */
int lower_expr(compiler *C, lctx *x, const ast_expr *e);   /* node id, or -1 (reported) */
/* An equation's right-hand side, whose terms (of its top-level sum) may be implicit(...):
 * LOWER_ALL takes implicit(e) as e, LOWER_IMPLICIT keeps only the implicit terms, LOWER_EXPLICIT
 * only the others (IMEX splits F = F_implicit + F_explicit so). *n_implicit (may be NULL) counts
 * the implicit terms. implicit(...) anywhere else is an error. Node id, or -1 (reported). */
enum { LOWER_ALL, LOWER_IMPLICIT, LOWER_EXPLICIT };
int lower_eq_rhs(compiler *C, lctx *x, const ast_expr *e, int mode, int *n_implicit);
/* Decomposes `lhs - rhs` of a boundary condition as a*u + b*dn(u) - c. Returns 0 and node
 * ids (a, b may be -1 for zero), or -1 (reported). */
int lower_bc(compiler *C, lctx *x, const ast_expr *lhs, const ast_expr *rhs, int *a, int *b, int *c);
/* The one field a boundary condition talks about, or -1 (reported). */
int lower_bc_field(compiler *C, const ast_expr *lhs, const ast_expr *rhs, pj_loc loc);
/* Evaluates a constant expression (numbers, consts, pi, e, math). Returns 0 with *out set,
 * or -1 (reported). */
int lower_const_value(compiler *C, ast_expr *e, double *out);
void lower_error(compiler *C, pj_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
