/* manpage.c — `pdejit help --man` and `pdejit help --bash-completion`: the manual page pdejit(1)
 * and a bash completion script, printed from the command tables (options.h) that the parser reads
 * and `--help` prints, so neither can miss an option. CMake runs both at build time (build/pdejit.1,
 * build/pdejit.bash) and `make install` installs them; nothing generated is committed. */
#include <string.h>
#include "options.h"
#include "knobs.h"
#include "pdejit.h"

/* ---- the manual page ------------------------------------------------------------------------- */

/* `text` as roff text: a backslash is \e, every '-' is \- (options stay hyphens when rendered), a
 * line that would start with '.' or '\'' starts with \&; a '\n' in text ends the line. When `join`
 * the '\n's become spaces (a usage line that the help breaks). */
static void roff(FILE *out, const char *text, int join)
{
    int line_start = 1;
    for (const char *p = text; *p; p++) {
        if (line_start && (*p == '.' || *p == '\'')) fputs("\\&", out);
        line_start = 0;
        if (*p == '\\') fputs("\\e", out);
        else if (*p == '-') fputs("\\-", out);
        else if (*p == '\n' && join) fputc(' ', out);
        else if (*p == '\n') {
            fputc('\n', out);
            line_start = 1;
        } else fputc(*p, out);
    }
    if (!line_start && !join) fputc('\n', out);
}

static void man_option(FILE *out, const cli_opt *o)
{
    fputs(".TP\n", out);
    if (o->alias) {
        fputs("\\fB", out);
        roff(out, o->alias, 1);
        fputs("\\fR, ", out);
    }
    fputs("\\fB", out);
    roff(out, o->name, 1);
    fputs("\\fR", out);
    if (o->arg) {
        fputs(" \\fI", out);
        roff(out, o->arg, 1);
        fputs("\\fR", out);
    }
    fputc('\n', out);
    char text[1024];
    roff(out, cli_option_help(o, text, sizeof text), 0);
}

static void man_command(FILE *out, const cli_cmd *c)
{
    fprintf(out, ".SS \"pdejit %s\"\n", c->name);
    fprintf(out, ".B pdejit %s\n", c->name);
    roff(out, c->usage, 1);
    fputs("\n.PP\n", out);
    if (c->about) roff(out, c->about, 0);
    if (c->subs) fputs(".PP\nSubcommands:\n", out);
    for (const cli_sub *s = c->subs; s && s->name; s++) {
        fprintf(out, ".TP\n\\fB%s\\fR", s->name);
        if (s->operands[0]) {
            fputs(" \\fI", out);
            roff(out, s->operands, 1);
            fputs("\\fR", out);
        }
        fputc('\n', out);
        roff(out, s->help, 0);
    }
    if (c->opts && c->opts->name) fputs(".PP\nOptions:\n", out);
    for (const cli_opt *o = c->opts; o && o->name; o++) man_option(out, o);
    if (c->epilogue) {
        fputs(".PP\n", out);
        roff(out, c->epilogue, 0);
    }
}

void cli_print_man(FILE *out)
{
    fprintf(out, ".\\\" pdejit(1), printed by `pdejit help --man` from the tables that `pdejit --help` prints.\n"
                 ".TH PDEJIT 1 \"\" \"pdejit %s\" \"User Commands\"\n.nh\n", pj_version());
    fputs(".SH NAME\n"
          "pdejit \\- compile finite\\-volume PDE problems written as text into fast kernels, and run them\n"
          ".SH SYNOPSIS\n"
          ".B pdejit\n.I COMMAND\n.RI [ ARGS ]\n.br\n"
          ".B pdejit help\n.RI [ COMMAND ]\n.br\n"
          ".B pdejit \\-\\-version\n"
          ".SH DESCRIPTION\n"
          "pdejit parses and checks a problem file (its mesh, fields, params, equations, boundary conditions\n"
          "and time stepping), lowers it to one kernel IR, and runs it on a reference interpreter\n"
          "(\\fBinterp\\fR), on the CPU through LLVM (\\fBcpu\\fR, kept in an on\\-disk kernel cache) or on\n"
          "an NVIDIA GPU through NVRTC (\\fBcuda\\fR).\n"
          "Every error in a problem file is printed as FILE:LINE:COL: error: MESSAGE, followed by the\n"
          "source line and a caret under the column.\n"
          "The problem language is documented in docs/language.md of the source tree.\n"
          ".PP\nThe commands:\n", out);
    for (int i = 0; cli_commands[i]; i++) {
        const cli_cmd *c = cli_commands[i];
        fprintf(out, ".TP\n.B %s", c->name);
        if (c->operands[0]) fprintf(out, " \\fI%s\\fR", c->operands);
        fputc('\n', out);
        roff(out, c->summary, 0);
    }
    fputs(".TP\n\\fBhelp\\fR [\\fICOMMAND\\fR]\n"
          "the commands, or every option of one (the same as \\fBpdejit\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR);\n"
          "\\fBhelp \\-\\-man\\fR prints this page, \\fBhelp \\-\\-bash\\-completion\\fR a bash completion script\n"
          ".SH OPTIONS\n"
          ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nthe commands and what they do\n"
          ".TP\n\\fB\\-\\-version\\fR\nprint pdejit's version\n"
          ".SH COMMANDS\n", out);
    for (int i = 0; cli_commands[i]; i++) man_command(out, cli_commands[i]);
    fputs(".SH \"EXIT STATUS\"\n"
          "0 success; 1 a run that failed (a NaN or Inf, named with its step, time, field and cell; a\n"
          "device error); 2 bad usage, a bad problem file or a refused run; 130 and 143 a run stopped by\n"
          "SIGINT or SIGTERM.\n"
          ".SH ENVIRONMENT\n", out);
    for (int k = 0; k < KNOB_COUNT; k++) {
        fprintf(out, ".TP\n.B %s\n", knob_name((pj_knob)k));
        roff(out, knob_doc((pj_knob)k), 0);
    }
    fputs(".SH \"SEE ALSO\"\n"
          "docs/tutorial.md, docs/language.md and docs/python.md of the source tree; \\fBpdejit help\\fR\n"
          "\\fICOMMAND\\fR.\n", out);
}

/* ---- bash completion -------------------------------------------------------------------------- */

/* The words of a list of values: "euler, rk2, ..." or "interp|cpu|cuda" -> "euler rk2 ...". */
static void words(FILE *out, const char *list)
{
    for (const char *p = list; *p; p++) {
        if (*p == ',' || *p == '|') fputc(' ', out);
        else if (*p != ' ') fputc(*p, out);
    }
}

/* The case branch of the options that take a value: a list of values, folders, files, or nothing
 * (a number: no word to offer). */
static void complete_values(FILE *out, const cli_cmd *c)
{
    fputs("        case $prev in\n", out);
    for (const cli_opt *o = c->opts; o && o->name; o++) {
        if (!o->arg) continue;
        fprintf(out, "        %s) ", o->name);
        if (o->values || strchr(o->arg, '|')) {
            fputs("COMPREPLY=($(compgen -W '", out);
            words(out, o->values ? o->values() : o->arg);
            fputs("' -- \"$cur\"));;\n", out);
        } else if (!strcmp(o->arg, "DIR")) {
            fputs("COMPREPLY=($(compgen -d -- \"$cur\"));;\n", out);
        } else if (strstr(o->arg, "FILE") || strstr(o->arg, "CHECKPOINT")) {
            fputs("COMPREPLY=($(compgen -f -- \"$cur\"));;\n", out);
        } else {
            fputs("COMPREPLY=();;\n", out);
        }
    }
    fputs("        *) _pdejit_rest '", out);
    for (const cli_opt *o = c->opts; o && o->name; o++) fprintf(out, "%s%s%s%s", o == c->opts ? "" : " ", o->name,
                                                                o->alias ? " " : "", o->alias ? o->alias : "");
    fputs("'", out);
    if (c->subs) {
        fputs(" '", out);
        for (const cli_sub *s = c->subs; s->name; s++) fprintf(out, "%s%s", s == c->subs ? "" : " ", s->name);
        fputs("'", out);
    }
    fputs(";;\n        esac;;\n", out);
}

void cli_print_bash_completion(FILE *out)
{
    fputs("# bash completion for pdejit, printed by `pdejit help --bash-completion` from the tables\n"
          "# that `pdejit --help` prints: the commands, their options, and the values of those whose\n"
          "# values are a list (back ends, schemes, precisions).\n"
          "\n"
          "# Options (and, before one is given, the subcommands in $2) where the word starts with '-'\n"
          "# or a subcommand is due; problem files (*.pde) and folders otherwise.\n"
          "_pdejit_rest()\n"
          "{\n"
          "    if [[ $cur == -* ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$1\" -- \"$cur\"))\n"
          "    elif [[ -n $2 && -z $sub ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$2\" -- \"$cur\"))\n"
          "    else\n"
          "        COMPREPLY=($(compgen -f -X '!*.pde' -- \"$cur\") $(compgen -d -- \"$cur\"))\n"
          "    fi\n"
          "}\n"
          "\n"
          "_pdejit()\n"
          "{\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd= sub= i\n"
          "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
          "        case ${COMP_WORDS[i]} in\n"
          "        -*) ;;\n"
          "        *) if [[ -z $cmd ]]; then cmd=${COMP_WORDS[i]}; elif [[ -z $sub ]]; then sub=${COMP_WORDS[i]}; fi;;\n"
          "        esac\n"
          "    done\n"
          "    case $cmd in\n"
          "    '') COMPREPLY=($(compgen -W '", out);
    for (int i = 0; cli_commands[i]; i++) fprintf(out, "%s ", cli_commands[i]->name);
    fputs("help --help -h --version' -- \"$cur\"));;\n"
          "    help) [[ -z $sub ]] && COMPREPLY=($(compgen -W '", out);
    for (int i = 0; cli_commands[i]; i++) fprintf(out, "%s ", cli_commands[i]->name);
    fputs("--man --bash-completion' -- \"$cur\"));;\n", out);
    for (int i = 0; cli_commands[i]; i++) {
        fprintf(out, "    %s)\n", cli_commands[i]->name);
        complete_values(out, cli_commands[i]);
    }
    fputs("    esac\n"
          "}\n"
          "complete -o filenames -F _pdejit pdejit\n", out);
}
