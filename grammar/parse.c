/* parse.c — parse_program(): runs the scanner and parser of one file (see ast.h).
 *
 * Neither flex nor the arena may exit or return NULL into the grammar's actions, so both jump
 * here instead: the scanner's YY_FATAL_ERROR (lexer.l) and an arena allocation that fails
 * longjmp to run_parser's handler, which frees the scanner and reports the error. */
#include <limits.h>
#include <setjmp.h>
#include "parse_ctx.h"
#include "parser.tab.h"
#define YYSTYPE PJYYSTYPE
#define YYLTYPE PJYYLTYPE
#include "lexer.yy.h"

/* Scans and parses ctx->source with `scanner`. Returns 0, or -1 when the scanner hit a fatal
 * error or memory ran out (reported). No local of this function changes after setjmp. */
static int run_parser(parse_ctx *ctx, yyscan_t scanner)
{
    jmp_buf *outer = ctx->arena->on_failure;
    jmp_buf failed;
    ctx->on_fatal = &failed;
    ctx->arena->on_failure = &failed;
    if (setjmp(failed)) {
        ctx->arena->on_failure = outer;
        ctx->on_fatal = NULL;
        if (ctx->arena->failed) {
            diag_error(ctx->diag, (pj_loc){0, 0}, "out of memory while parsing");
            ctx->diag->out_of_memory = 1;
        }
        return -1;
    }
    pjyy_scan_bytes(ctx->source, (int)ctx->len, scanner); /* the scanner owns the buffer */
    pjyyparse(ctx, scanner);
    ctx->arena->on_failure = outer;
    ctx->on_fatal = NULL;
    return 0;
}

ast_program *parse_program(arena *a, diag *d, const char *source, size_t len)
{
    parse_ctx ctx = {0};
    ctx.arena = a;
    ctx.diag = d;
    ctx.source = source;
    ctx.len = len;
    ctx.line = 1;
    ctx.col = 1;
    if (len > (size_t)INT_MAX - 2) {
        diag_error(d, (pj_loc){0, 0}, "the problem text is too large (%zu bytes)", len);
        return NULL;
    }
    yyscan_t scanner;
    if (pjyylex_init_extra(&ctx, &scanner)) {
        diag_error(d, (pj_loc){0, 0}, "out of memory while parsing");
        d->out_of_memory = 1;
        return NULL;
    }
    int status = run_parser(&ctx, scanner);
    pjyylex_destroy(scanner); /* frees the buffer too */
    if (status < 0) return NULL;
    ast_program *p = arena_alloc(a, sizeof *p);
    if (!p) return NULL;
    p->stmts = ctx.stmts.items;
    p->n_stmts = ctx.stmts.len;
    return p;
}
