/* cache_explain.c — why a lookup of the kernel cache hits or misses (cache_explain, for
 * `pdejit cache explain`): the entry's state, or the nearest stored entry and the components
 * that differ. */
#include "cache_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- explain ---- */

typedef struct outbuf { char *p; size_t n, used; } outbuf;

static void out_add(outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_add(outbuf *o, const char *fmt, ...)
{
    if (o->used >= o->n) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(o->p + o->used, o->n - o->used, fmt, ap);
    va_end(ap);
    if (w > 0) o->used += (size_t)w;
    if (o->used >= o->n) o->used = o->n;
}

/* A value, shortened to 12 characters and "…" when longer than 16. */
static void out_value(outbuf *o, const char *v, size_t len)
{
    if (!v) out_add(o, "absent");
    else if (len > 16) out_add(o, "%.12s…", v);
    else out_add(o, "%.*s", (int)len, v);
}

/* The value of component `name` in key text, or NULL; its length in *len. */
static const char *text_value(const char *text, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        if ((size_t)(end - line) > nl && !strncmp(line, name, nl) && line[nl] == '=') {
            *len = (size_t)(end - line) - nl - 1;
            return line + nl + 1;
        }
        line = *end ? end + 1 : end;
    }
    return NULL;
}

/* How many of key's components the key text holds with the same value. */
static int shared_components(const cache_key *key, const char *text)
{
    int shared = 0;
    for (int i = 0; i < key->n; i++) {
        size_t len;
        const char *v = text_value(text, key->names[i], &len);
        if (v && len == strlen(key->values[i]) && !memcmp(v, key->values[i], len)) shared++;
    }
    return shared;
}

static int count_lines(const char *text)
{
    int n = 0;
    for (; *text; text++) n += *text == '\n';
    return n;
}

/* ", "-separated, each component in which the nearest entry's key text `best` differs from key:
 * "name (asked vs stored)", a value shortened by out_value, "absent" for a missing one. Returns
 * how many differ; *build: whether `build` (the code generator's build, cpu_backend.c) is one. */
static int out_differences(outbuf *o, const cache_key *key, const char *best, int *build)
{
    const char *sep = " ";
    int n = 0;
    *build = 0;
    for (int i = 0; i < key->n; i++) {
        size_t len, alen = strlen(key->values[i]);
        const char *v = text_value(best, key->names[i], &len);
        if (v && len == alen && !memcmp(v, key->values[i], len)) continue;
        n++;
        *build |= !strcmp(key->names[i], "build");
        out_add(o, "%s%s (", sep, key->names[i]);
        out_value(o, key->values[i], alen);
        out_add(o, " vs ");
        out_value(o, v, v ? len : 0);
        out_add(o, ")");
        sep = ", ";
    }
    /* components the stored entry has and the asked key lacks */
    for (const char *line = best; *line;) {
        const char *end = strchr(line, '\n'), *eq = strchr(line, '=');
        if (!end) end = line + strlen(line);
        if (eq && eq < end) {
            int found = 0;
            for (int i = 0; i < key->n && !found; i++)
                found = strlen(key->names[i]) == (size_t)(eq - line) &&
                        !strncmp(key->names[i], line, (size_t)(eq - line));
            if (!found) {
                n++;
                *build |= eq - line == 5 && !strncmp(line, "build", 5);
                out_add(o, "%s%.*s (absent vs ", sep, (int)(eq - line), line);
                out_value(o, eq + 1, (size_t)(end - eq - 1));
                out_add(o, ")");
                sep = ", ";
            }
        }
        line = *end ? end + 1 : end;
    }
    return n;
}

int cache_explain(cache *c, const cache_key *key, char *out, size_t out_len)
{
    if (!c || !out || out_len == 0) return -1;
    outbuf o = {out, out_len, 0};
    out[0] = 0;
    size_t tlen;
    char *text = cache_key_text(key, &tlen);
    if (!text) {
        out_add(&o, "invalid key: 1 to %d components with distinct non-empty names, no '=' in a "
                    "name, no newline anywhere", CACHE_KEY_MAX);
        return -1;
    }
    if (cache_is_disabled(c)) {
        out_add(&o, "miss: %s", cache_warning(c));
        free(text);
        return 0;
    }
    char id[ID_LEN + 1];
    cache_text_id(text, tlen, id);
    entry_info info;
    int rc = cache_entry_read(c, id, text, tlen, NULL, NULL, 1, 0, &info);
    free(text);
    switch (rc) {
    case ENT_OK: {
        char who[TRIAL_TEXT_MAX];
        free(info.key);
        if (cache_trial_state(c, id, info.sum, 0, NULL, who) == TRIAL_CRASHED) {
            out_add(&o, "miss: entry %s crashed the process that last ran it (%s); the next run "
                        "sets it aside and compiles afresh", id, who[0] ? who : "unknown");
            return 0;
        }
        out_add(&o, "hit: entry %s", id);
        return 1;
    }
    case ENT_DAMAGED:
        out_add(&o, "miss: entry %s is damaged (short, garbled or failing its checksum); the "
                    "next put replaces it", id);
        return 0;
    case ENT_FORMAT:
        out_add(&o, "miss: entry %s was written in cache format %" PRIu32 ", this is format %d; "
                    "the next put replaces it", id, info.format, CACHE_FORMAT_VERSION);
        return 0;
    case ENT_OTHER_KEY:
        out_add(&o, "miss: entry %s holds another key (a hash collision); the next put replaces "
                    "it", id);
        return 0;
    case ENT_REFUSED:
        out_add(&o, "miss: entry %s is refused: it or its folder is %s (the cache uses only "
                    "regular files and folders of its own that nobody else can write)", id, info.why);
        return 0;
    default:
        break;
    }
    /* No entry under this id: find the nearest one. */
    scan s;
    if (cache_scan_dir(c, &s, 0) < 0) {
        out_add(&o, "miss: the cache folder %s cannot be read", c->dir);
        return 0;
    }
    char *best = NULL;
    int best_shared = -1;
    int64_t best_time = 0;
    char best_id[ID_LEN + 1] = "";
    for (int i = 0; i < s.n; i++) {
        if (cache_entry_read(c, s.entries[i].id, NULL, 0, NULL, NULL, 0, 0, &info) != ENT_OK) continue;
        int sh = shared_components(key, info.key);
        if (sh > best_shared || (sh == best_shared && s.entries[i].mtime > best_time)) {
            free(best);
            best = info.key;
            best_shared = sh;
            best_time = s.entries[i].mtime;
            memcpy(best_id, s.entries[i].id, sizeof best_id);
        } else {
            free(info.key);
        }
    }
    cache_scan_free(&s);
    if (!best) {
        out_add(&o, "miss: the cache holds no entries");
        return 0;
    }
    int stored_n = count_lines(best);
    out_add(&o, "miss: nearest entry %.12s (%d of %d components shared) differs in", best_id,
            best_shared, key->n > stored_n ? key->n : stored_n);
    int build;
    if (out_differences(&o, key, best, &build) == 1 && build)
        out_add(&o, ": it was compiled by another build of pdejit, and is never loaded by this one");
    free(best);
    return 0;
}
