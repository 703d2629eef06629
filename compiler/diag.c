/* diag.c — renders errors with the source line and a caret (see diag.h). */
#include "diag.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void diag_init(diag *d, const char *filename, const char *source, size_t len)
{
    memset(d, 0, sizeof *d);
    d->filename = filename ? filename : "<input>";
    d->source = source;
    d->source_len = len;
    d->max_errors = 20;
}

void diag_free(diag *d)
{
    free(d->log);
    d->log = NULL;
    d->log_len = d->log_cap = 0;
}

static void append_v(diag *d, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return;
    if (d->log_len + (size_t)n + 1 > d->log_cap) {
        size_t cap = d->log_cap ? d->log_cap : 256;
        while (cap < d->log_len + (size_t)n + 1) cap *= 2;
        char *p = realloc(d->log, cap);
        if (!p) return;
        d->log = p;
        d->log_cap = cap;
    }
    vsnprintf(d->log + d->log_len, (size_t)n + 1, fmt, ap);
    d->log_len += (size_t)n;
}

void diag_append(diag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    append_v(d, fmt, ap);
    va_end(ap);
}

/* Appends the source line `line` and a caret under display column `col`. Non-printable
 * bytes are shown as '?', so garbage input cannot garble the terminal. */
static void show_line(diag *d, pj_loc loc)
{
    if (!d->source || loc.line <= 0) return;
    const char *p = d->source, *end = d->source + d->source_len;
    for (int l = 1; l < loc.line && p < end; p++)
        if (*p == '\n') l++;
    if (p >= end && loc.line > 1) return;
    const char *e = p;
    while (e < end && *e != '\n' && *e != '\r') e++;
    size_t len = (size_t)(e - p);
    int clip = 0;
    /* A 1 MB line is shown around the caret only. */
    const char *from = p;
    int start_col = 1;
    if (len > 200) {
        int c = 1;
        const char *q = p;
        while (q < e && c < loc.col - 60) {
            c = (*q == '\t') ? ((c - 1) / 8 + 1) * 8 + 1 : c + 1;
            q++;
        }
        from = q;
        start_col = c;
        if ((size_t)(e - from) > 160) { e = from + 160; }
        clip = 1;
    }
    char *buf = malloc((size_t)(e - from) + 8);
    if (!buf) return;
    size_t n = 0;
    for (const char *q = from; q < e; q++) {
        unsigned char ch = (unsigned char)*q;
        buf[n++] = (ch == '\t' || (ch >= 32 && ch < 127)) ? (char)ch : '?';
    }
    buf[n] = 0;
    diag_append(d, "    %s%s\n    ", clip && from > p ? "" : "", buf);
    free(buf);
    /* caret: reproduce tabs so the caret lines up whatever the tab width */
    int c = start_col;
    const char *q = from;
    while (c < loc.col && q < e) {
        if (*q == '\t') {
            diag_append(d, "\t");
            c = ((c - 1) / 8 + 1) * 8 + 1;
        } else {
            diag_append(d, " ");
            c++;
        }
        q++;
    }
    while (c++ < loc.col) diag_append(d, " ");
    diag_append(d, "^\n");
}

void diag_set_part(diag *d, int first_line, const char *name)
{
    d->part_line = first_line;
    d->part_name = name;
}

static void report(diag *d, const char *kind, pj_loc loc, const char *fmt, va_list ap)
{
    if (loc.line > 0 && d->part_name && loc.line >= d->part_line)
        diag_append(d, "%s:%d:%d: %s: ", d->part_name, loc.line - d->part_line + 1, loc.col, kind);
    else if (loc.line > 0)
        diag_append(d, "%s:%d:%d: %s: ", d->filename, loc.line, loc.col, kind);
    else
        diag_append(d, "%s: %s: ", d->filename, kind);
    append_v(d, fmt, ap);
    diag_append(d, "\n");
    show_line(d, loc);
}

/* 1 when this error (place and message) was reported before; else remembers it. */
static int seen_before(diag *d, pj_loc loc, const char *fmt, va_list ap)
{
    if (loc.line <= 0) return 0;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    unsigned long long h = 1469598103934665603ull ^ ((unsigned long long)loc.line << 32 ^ (unsigned)loc.col);
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) h = (h ^ *p) * 1099511628211ull;
    int n = d->n_seen < 64 ? d->n_seen : 64;
    for (int i = 0; i < n; i++)
        if (d->seen[i] == h) return 1;
    int slot = d->n_seen % 64;
    d->seen[slot] = h;
    d->n_seen = d->n_seen >= 64 ? 64 + (slot + 1) % 64 : d->n_seen + 1; /* once full: 64 + the next slot */
    return 0;
}

void diag_error(diag *d, pj_loc loc, const char *fmt, ...)
{
    va_list ap0;
    va_start(ap0, fmt);
    int again = seen_before(d, loc, fmt, ap0);
    va_end(ap0);
    if (again) return;
    d->errors++;
    if (d->errors > d->max_errors) {
        if (d->errors == d->max_errors + 1)
            diag_append(d, "%s: error: too many errors; stopping\n", d->filename);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    report(d, "error", loc, fmt, ap);
    va_end(ap);
}

void diag_warning(diag *d, pj_loc loc, const char *fmt, ...)
{
    d->warnings++;
    va_list ap;
    va_start(ap, fmt);
    report(d, "warning", loc, fmt, ap);
    va_end(ap);
}

void diag_note(diag *d, pj_loc loc, const char *fmt, ...)
{
    if (d->errors > d->max_errors) return;
    va_list ap;
    va_start(ap, fmt);
    report(d, "note", loc, fmt, ap);
    va_end(ap);
}

static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return 1000;
    int row[65];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cur = row[j];
            int best = prev + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

const char *diag_closest(const char *name, const char *const *candidates, int n)
{
    const char *best = NULL;
    int best_d = 1000;
    size_t len = strlen(name);
    int limit = len <= 1 ? 0 : len <= 4 ? 1 : len <= 8 ? 2 : 3;
    for (int i = 0; i < n; i++) {
        if (!candidates[i] || !strcmp(candidates[i], name)) continue;
        int dist = edit_distance(name, candidates[i]);
        if (dist < best_d) {
            best_d = dist;
            best = candidates[i];
        }
    }
    return best_d <= limit ? best : NULL;
}

const char *diag_number(char *out, size_t len, double v)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(out, len, "%.*g", digits, v);
        if (strtod(out, NULL) == v) break;
    }
    return out;
}

void diag_set(char *err, size_t err_len, const char *fmt, ...)
{
    if (!err || !err_len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}
