/* parse_ctx.h — state shared by the reentrant scanner and the pure parser of one file. */
#ifndef PJ_PARSE_CTX_H
#define PJ_PARSE_CTX_H
#include <setjmp.h>
#include "ast.h"

typedef PJ_VEC(ast_expr *) expr_vec;
typedef PJ_VEC(ast_kwarg) kwarg_vec;
typedef PJ_VEC(ast_word) word_vec;
typedef PJ_VEC(ast_stmt *) stmt_vec;

typedef struct parse_ctx {
    arena *arena;
    diag *diag;
    const char *source;
    size_t len;
    /* scanner */
    int line, col;         /* position of the next character */
    int paren_depth;
    int continues;         /* the last token ends a line that continues (operator, comma) */
    int emitted;           /* a token other than NEWLINE was emitted since the last NEWLINE */
    int at_eof;
    int fatal;             /* input cannot be parsed further (nesting limit, a flex fatal error) */
    jmp_buf *on_fatal;     /* where the scanner's YY_FATAL_ERROR jumps (set by parse_program) */
    int lex_errors;
    size_t pos;            /* the byte offset of the next character */
    /* for the syntax errors' hints (parser.y, syntax_hint): the last two tokens returned, tok[1]
       the latest (the one a syntax error is about); the kind of the statement's first token;
       '?' still waiting for their ':' in the statement; an '=' seen in it; and the line whose
       leading operator the last hint already explained (its error is not repeated) */
    struct { int kind, line; size_t pos; char text[24]; } tok[2];
    int stmt_first, open_cond, seen_assign, explained_line;
    int stmt_tokens, stmt_algebraic; /* tokens of the statement so far; it reads `eq 0 = ...` (then `for`
                                        after an operand is a keyword: eq 0 = EXPR for FIELD) */
    /* parser */
    stmt_vec stmts;
    long n_nodes;          /* expression nodes built */
    int depth_reported;    /* one "too deeply nested" per statement */
} parse_ctx;

#define PJ_MAX_PARENS 200

/* Appends "    hint: TEXT" to the diagnostics, after the error just reported (when it was shown). */
void parse_hint(parse_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
