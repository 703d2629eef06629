/* ast.h — the syntax tree of a .pde problem, as the parser builds it.
 *
 * Owned by the arena of the compile; every node carries the location of its first
 * character so that later passes can point at the user's text. The tree says what was
 * written, nothing more: names are resolved by sema.c. */
#ifndef PJ_AST_H
#define PJ_AST_H
#include "arena.h"
#include "diag.h"

typedef enum ast_kind {
    AST_NUM,    /* number: value */
    AST_NAME,   /* name */
    AST_UNARY,  /* op: '-' '+' '!'  a */
    AST_BINARY, /* a chain of binary operators: args[0] ops[1] args[1] ops[2] args[2] ...,
                   evaluated left to right (n_args >= 2; ops[i] is an ast_binop) */
    AST_COND,   /* a ? b : c */
    AST_CALL,   /* name(args) */
    AST_INDEX,  /* name[args]: relative neighbour access */
} ast_kind;

typedef enum ast_binop {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW,
    OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE,
    OP_AND, OP_OR,
} ast_binop;

typedef struct ast_expr ast_expr;
struct ast_expr {
    ast_kind kind;
    pj_loc loc;
    int op;            /* AST_UNARY: the character */
    int depth;         /* nesting of this subtree (a chain is one level), bounded by the parser */
    double value;      /* AST_NUM */
    const char *name;  /* AST_NAME, AST_CALL, AST_INDEX */
    ast_expr *a, *b, *c;   /* AST_UNARY: a; AST_COND: a ? b : c; AST_INDEX: eta[a][args], the member
                              of an array whose neighbour args names (NULL in u[args]) */
    ast_expr **args;   /* AST_CALL, AST_INDEX: the arguments; AST_BINARY: the terms */
    int n_args;
    int *ops;          /* AST_BINARY: ops[i] combines the value of args[0..i-1] with args[i] */
    int cap_args;      /* AST_BINARY: room in args and ops (the parser extends a chain) */
    int site;          /* AST_CALL of rand() or randn(): its call site, numbered in the order of the
                          text by the front end (the counter of its numbers, compiler/noise.h) */
};

/* `name = value` in a statement's argument list. For `format = vtk png csv` the value is the
 * name `vtk` and `words` holds the names that follow it. */
typedef struct ast_word { const char *text; pj_loc loc; } ast_word;
typedef struct ast_kwarg {
    const char *name;     /* NULL only inside the parser: a value with no name of its own */
    pj_loc loc;
    ast_expr *value;      /* NULL in `field u` (no initial value) */
    ast_word *words;
    int n_words;
    ast_expr **more;      /* `at = 0, 1, 5`: the values after the first (1 and 5) */
    int n_more;
    ast_expr *array;      /* `field eta[N] = ...`: the AST_INDEX eta[N] (its size), else NULL
                             (compiler/arrays.c expands it into the members eta1 ... etaN) */
} ast_kwarg;

typedef enum ast_stmt_kind {
    ST_MESH, ST_PARAM, ST_CONST, ST_FIELD, ST_FUNC, ST_FLUX, ST_EQ,
    ST_ON, ST_PERIODIC, ST_TIME, ST_OUTPUT, ST_STEADY, ST_SOLVER,
    ST_MONITOR,            /* monitor every = T, NAME = integral(e), ...: kwargs */
    ST_STOP,               /* stop when COND: name = the word after stop, rhs = COND */
    ST_ENERGY,             /* energy NAME = DENSITY: name, rhs (expanded away by energy.c) */
} ast_stmt_kind;

typedef struct ast_stmt {
    ast_stmt_kind kind;
    pj_loc loc;            /* the keyword */
    const char *name;      /* ST_MESH: `grid`; ST_FUNC/ST_FLUX: its name; ST_EQ: the field (an
                              algebraic one: the field after `for`, or NULL) */
    pj_loc name_loc;
    const char *eq_op;     /* ST_EQ: the operator written before the field (must be `dt`) */
    pj_loc eq_op_loc;
    int algebraic;         /* ST_EQ: `eq 0 = EXPR [for FIELD]` (eq_op NULL; eq_op_loc the 0) */
    ast_kwarg *kwargs;     /* ST_MESH, ST_PARAM, ST_CONST, ST_FIELD, ST_TIME, ST_OUTPUT, ST_SOLVER */
    int n_kwargs;
    ast_word *words;       /* ST_FUNC/ST_FLUX: argument names; ST_ON: sides; ST_PERIODIC: axes */
    int n_words;
    ast_expr *lhs, *rhs;   /* ST_ON: lhs = rhs; ST_FUNC/ST_FLUX/ST_EQ: rhs */
    ast_expr *lhs2, *rhs2; /* ST_ON: a second condition, lap(u) = value (fourth-order operators), or NULL */
    ast_expr *member;      /* ST_EQ: `eq dt(eta[i]) = ...`: the AST_INDEX eta[i] (name is eta), else NULL */
} ast_stmt;

typedef struct ast_program {
    ast_stmt **stmts;
    int n_stmts;
    long n_nodes;          /* expression nodes written in the whole text */
} ast_program;

/* The longest problem text accepted: 64 MiB. Far beyond any real problem (a sum of a million
 * terms is a few MB), and small enough that the scanner's int lengths, lines and columns (a tab
 * counts up to 8) never overflow. */
#define PJ_MAX_SOURCE_BYTES ((size_t)64 << 20)

/* Parses `source` (len bytes, need not be NUL-terminated). Errors go to `d`; the result is
 * NULL only when nothing could be recovered. Never crashes on any input; a text longer than
 * PJ_MAX_SOURCE_BYTES is refused without being read. */
ast_program *parse_program(arena *a, diag *d, const char *source, size_t len);

/* Deepest nesting the parser accepts: bounds every recursive pass after it. A chain of binary
 * operators is one level however long (its passes loop over its terms); parentheses, unary
 * operators, right-nested powers and conditionals, and calls nest. */
#define AST_MAX_DEPTH 400

#endif
