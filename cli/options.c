/* options.c — the option tables' parser and help printer (options.h), and the setters the
 * commands share. */
#include "options.h"
#include <string.h>
#include "pdejit.h"
#include "program.h"
#include "scheme.h"

enum {
    HELP_WIDTH = 100,  /* no help line is longer */
    HELP_COLUMN = 29,  /* where an option's help text starts: "  " + 26 + " " */
};

/* Prints `text` from column `col` (the cursor is there), wrapped at HELP_WIDTH, continuation
 * lines indented to `indent`; a '\n' in text starts a new line. Ends the last line. */
static void print_wrapped(FILE *out, const char *text, int col, int indent)
{
    const char *p = text;
    while (*p) {
        if (*p == '\n') {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
            p++;
            continue;
        }
        if (*p == ' ') { p++; continue; }
        size_t word = strcspn(p, " \n");
        if (col > indent && col + 1 + (int)word > HELP_WIDTH) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        }
        if (col > indent) { fputc(' ', out); col++; }
        fprintf(out, "%.*s", (int)word, p);
        col += (int)word;
        p += word;
    }
    fputc('\n', out);
}

/* "  LEFT      " up to HELP_COLUMN (a LEFT too wide for it: then a line of its own); the column. */
static int print_left(FILE *out, const char *left)
{
    int col = fprintf(out, "  %-*s ", HELP_COLUMN - 3, left);
    if (col > HELP_COLUMN) { /* too wide for the column: the help starts on the next line */
        fprintf(out, "\n%*s", HELP_COLUMN, "");
        col = HELP_COLUMN;
    }
    return col;
}

const char *cli_option_help(const cli_opt *o, char *buf, size_t len)
{
    const char *hole = o->values ? strstr(o->help, "{}") : NULL;
    if (!hole) return o->help;
    snprintf(buf, len, "%.*s%s%s", (int)(hole - o->help), o->help, o->values(), hole + 2);
    return buf;
}

static void print_option(FILE *out, const cli_opt *o)
{
    char left[128];
    snprintf(left, sizeof left, "%s%s%s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "", o->name,
             o->arg ? " " : "", o->arg ? o->arg : "");
    int col = print_left(out, left);
    char text[1024];
    print_wrapped(out, cli_option_help(o, text, sizeof text), col, HELP_COLUMN);
}

void cli_help(const cli_cmd *cmd, FILE *out)
{
    fprintf(out, "usage: pdejit %s %s\n", cmd->name, cmd->usage);
    if (cmd->about) fputs(cmd->about, out);
    if (cmd->subs) fputs("subcommands:\n", out);
    for (const cli_sub *s = cmd->subs; s && s->name; s++) {
        char left[128];
        snprintf(left, sizeof left, "%s%s%s", s->name, s->operands[0] ? " " : "", s->operands);
        print_wrapped(out, s->help, print_left(out, left), HELP_COLUMN);
    }
    if (cmd->opts && cmd->opts->name) fputs("options:\n", out);
    for (const cli_opt *o = cmd->opts; o && o->name; o++) print_option(out, o);
    if (cmd->epilogue) fputs(cmd->epilogue, out);
}

static const cli_opt *find_option(const cli_cmd *cmd, const char *word)
{
    for (const cli_opt *o = cmd->opts; o && o->name; o++)
        if (!strcmp(word, o->name) || (o->alias && !strcmp(word, o->alias))) return o;
    return NULL;
}

int cli_parse(const cli_cmd *cmd, int argc, char **argv, void *args, const char **files, int max_files)
{
    int n_files = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const cli_opt *o = find_option(cmd, a);
        if (o) {
            const char *value = NULL;
            if (o->arg) {
                if (i + 1 >= argc) {
                    fprintf(stderr, "pdejit %s: %s needs a value\n", cmd->name, a);
                    cli_help(cmd, stderr);
                    return -1;
                }
                value = argv[++i];
            }
            if (o->set(o, value, (char *)args + o->member) < 0) return -1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "pdejit %s: unknown option '%s'\n", cmd->name, a);
            cli_help(cmd, stderr);
            return -1;
        } else if (n_files < max_files) {
            files[n_files++] = a;
        } else {
            fprintf(stderr, "pdejit %s: more than one FILE ('%s', '%s')\n", cmd->name, files[0], a);
            return -1;
        }
    }
    return n_files;
}

int cli_run_sub(const cli_cmd *cmd, int argc, char **argv)
{
    for (const cli_sub *s = cmd->subs; argc > 0 && s && s->name; s++)
        if (!strcmp(argv[0], s->name)) return s->main(argc, argv);
    if (argc > 0) fprintf(stderr, "pdejit %s: unknown subcommand '%s'\n", cmd->name, argv[0]);
    cli_help(cmd, stderr);
    return 2;
}

int cli_set_flag(const cli_opt *o, const char *value, void *member)
{
    (void)o, (void)value;
    *(int *)member = 1;
    return 0;
}

int cli_set_none(const cli_opt *o, const char *value, void *member)
{
    (void)o, (void)value, (void)member;
    return 0;
}

int cli_set_text(const cli_opt *o, const char *value, void *member)
{
    (void)o;
    *(const char **)member = value;
    return 0;
}

int cli_set_precision(const cli_opt *o, const char *value, void *member)
{
    if (strcmp(value, "single") && strcmp(value, "double")) {
        fprintf(stderr, "pdejit: %s is double or single, not '%s'\n", o->name, value);
        return -1;
    }
    *(int *)member = !strcmp(value, "single");
    return 0;
}

int cli_set_scheme(const cli_opt *o, const char *value, void *member)
{
    (void)o;
    /* "steady" parses too, but it is a statement of the file, not a scheme */
    if (scheme_from_name(value) < 0 || !strcmp(value, scheme_name(PJ_STEADY))) {
        fprintf(stderr, "pdejit: unknown scheme '%s'; schemes are %s\n", value, pj_scheme_names());
        return -1;
    }
    *(const char **)member = value;
    return 0;
}
