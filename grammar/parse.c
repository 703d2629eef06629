/* parse.c — parse_program(): runs the scanner and parser of one file (see ast.h).
 *
 * Neither flex nor the arena may exit or return NULL into the grammar's actions, so both jump
 * here instead: the scanner's YY_FATAL_ERROR (lexer.l) and an arena allocation that fails
 * longjmp to run_parser's handler, which reports the error. The scanner allocates from the
 * arena too (lexer.l), so a jump out of it leaks nothing. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include "parse_ctx.h"
#include "parser.tab.h"
#define YYSTYPE PJYYSTYPE
#define YYLTYPE PJYYLTYPE
#include "lexer.yy.h"

void parse_hint(parse_ctx *c, const char *fmt, ...)
{
    if (c->diag->errors > c->diag->max_errors) return; /* its error was not shown */
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    diag_append(c->diag, "    hint: %s\n", text);
}

static void report_out_of_memory(diag *d)
{
    diag_error(d, (pj_loc){0, 0}, "out of memory while parsing");
    d->out_of_memory = 1;
}

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
        if (ctx->arena->failed) report_out_of_memory(ctx->diag);
        return -1;
    }
    pjyy_scan_bytes(ctx->source, (int)ctx->len, scanner); /* a copy, in the arena (lexer.l) */
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
    if (len > PJ_MAX_SOURCE_BYTES) {
        diag_error(d, (pj_loc){0, 0}, "the problem text is larger than %zu MiB (%zu bytes), the most a problem may have",
                   PJ_MAX_SOURCE_BYTES >> 20, PJ_MAX_SOURCE_BYTES);
        return NULL;
    }
    yyscan_t scanner;
    if (pjyylex_init_extra(&ctx, &scanner)) {
        report_out_of_memory(d);
        return NULL;
    }
    int status = run_parser(&ctx, scanner);
    pjyylex_destroy(scanner);
    if (status < 0) return NULL;
    ast_program *p = arena_alloc(a, sizeof *p);
    if (!p) return NULL;
    p->stmts = ctx.stmts.items;
    p->n_stmts = ctx.stmts.len;
    p->n_nodes = ctx.n_nodes;
    return p;
}
