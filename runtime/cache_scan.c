/* cache_scan.c — the kernel cache's folder as a whole (cache_internal.h): walking its prefix
 * sub-folders, listing the entries (scan), removing an entry, eviction of the least recently
 * used entries under the cap, and the commands' cache_stats, cache_list and cache_clear. */
#include "cache_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- scanning the folder ---- */

static int cmp_file(const void *a, const void *b)
{
    const scan_file *x = a, *y = b;
    int r = strcmp(x->id, y->id);
    return r ? r : strcmp(x->ext, y->ext);
}

static int cmp_entry_old_first(const void *a, const void *b)
{
    const scan_entry *x = a, *y = b;
    if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
    return strcmp(x->id, y->id);
}

static int cmp_entry_new_first(const void *a, const void *b) { return cmp_entry_old_first(b, a); }

/* Parses "ID.ext" in folder sub; 0 when it is one of ours. */
static int parse_name(const char *sub, const char *name, scan_file *f)
{
    size_t n = strlen(name);
    if (n < ID_LEN + 2 || n > ID_LEN + 9 || name[ID_LEN] != '.' || !is_hex_lower(name, ID_LEN) ||
        memcmp(name, sub, 2))
        return -1;
    const char *ext = name + ID_LEN + 1;
    if (strcmp(ext, "bin") && strcmp(ext, "key") && strcmp(ext, "bad") && strcmp(ext, "run") &&
        strcmp(ext, "crash") && !cache_valid_ext(ext))
        return -1;
    memcpy(f->id, name, ID_LEN);
    f->id[ID_LEN] = 0;
    snprintf(f->ext, sizeof f->ext, "%s", ext);
    return 0;
}

void cache_scan_free(scan *s)
{
    free(s->files);
    free(s->entries);
    memset(s, 0, sizeof *s);
}

/* Removes an entry: the .bin first, so that it stops being visible before its companions go.
 * Only files of ours, in a sub-folder of ours reached without a link. */
static void remove_entry(cache *c, const scan *s, const scan_entry *e)
{
    char prefix[3] = {e->id[0], e->id[1], 0}, name[ID_LEN + 16];
    const char *why;
    int sub = cache_open_sub(c, prefix, 0, &why);
    if (sub < 0) return;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < e->count; i++) {
            const scan_file *f = &s->files[e->first + i];
            struct stat st;
            if ((pass == 0) != !strcmp(f->ext, "bin")) continue;
            snprintf(name, sizeof name, "%s.%s", f->id, f->ext);
            if (fstatat(sub, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == c->euid)
                unlinkat(sub, name, 0);
        }
    close(sub);
}

/* Calls visit for every file in the cache folder's prefix sub-folders (opened by name: the
 * folder itself is never listed) (fd: its sub-folder, st:
 * the file as found, never through a link). Sub-folders that are links, not ours or writable by
 * others are not entered, and count as refused. After each sub-folder, tries to remove it when
 * rmdir_after (it stays unless empty). Returns -1 when the folder cannot be read or visit returns
 * < 0 (which ends the walk), else 0. */
typedef struct walk_counts { int unopened, refused; } walk_counts;
typedef int (*file_visitor)(void *ctx, int fd, const char *prefix, const char *name,
                            const struct stat *st);
static int walk_files(cache *c, file_visitor visit, void *ctx, int rmdir_after, walk_counts *wc)
{
    int topfd = c->dirfd >= 0 ? openat(c->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (topfd < 0) return -1; /* a folder that cannot be read */
    close(topfd);
    int rc = 0;
    /* the 256 prefix sub-folders by name, not a listing of the folder: what else the folder holds
       (foreign files, however many) costs nothing */
    for (int i = 0; rc == 0 && i < 256; i++) {
        static const char hex[] = "0123456789abcdef";
        char name[3] = {hex[i >> 4], hex[i & 15], 0};
        const char *why;
        int fd = cache_open_sub(c, name, 0, &why);
        DIR *sub = fd >= 0 ? fdopendir(fd) : NULL;
        if (!sub) {
            if (fd >= 0) close(fd);
            if (why) wc->refused++;
            else if (errno != ENOENT) wc->unopened++;
            continue;
        }
        struct dirent *e;
        while (rc == 0 && (e = readdir(sub))) {
            struct stat st;
            scan_file f;
            /* a name that is not an entry's file nor a temporary one (".", "..", a foreign file)
               is passed over unexamined: the walk costs what the cache's own files do */
            if (strncmp(e->d_name, ".tmp.", 5) && parse_name(name, e->d_name, &f) < 0) continue;
            __atomic_add_fetch(&c->examined, 1, __ATOMIC_RELAXED);
            if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
            rc = visit(ctx, fd, name, e->d_name, &st) < 0 ? -1 : 0;
        }
        closedir(sub);
        if (rmdir_after) unlinkat(c->dirfd, name, AT_REMOVEDIR); /* fails harmlessly when not empty */
    }
    return rc;
}

typedef struct scan_walk { cache *c; scan *s; int tidy; int64_t stale; } scan_walk;

/* scan_dir's visitor: a file of ours named like an entry's is listed; one that is not ours, a
 * link or not a regular file counts as refused; a temporary file is skipped, and removed when
 * tidying and stale. */
static int scan_visit(void *ctx, int fd, const char *prefix, const char *name, const struct stat *st)
{
    scan_walk *w = ctx;
    scan *s = w->s;
    int temporary = !strncmp(name, ".tmp.", 5);
    scan_file f;
    if (!temporary && parse_name(prefix, name, &f) < 0) return 0;
    if (cache_distrust(w->c, st, 0)) {
        s->refused++;
        return 0;
    }
    if (temporary) {
        if (w->tidy && ts_ns(st->st_mtim) < w->stale) unlinkat(fd, name, 0);
        return 0;
    }
    f.size = (uint64_t)st->st_size;
    f.mtime = ts_ns(st->st_mtim);
    if (s->nfiles == s->capfiles) {
        int nc = s->capfiles ? 2 * s->capfiles : 64;
        scan_file *nf = realloc(s->files, sizeof *nf * (size_t)nc);
        if (!nf) return -1;
        s->files = nf;
        s->capfiles = nc;
    }
    s->files[s->nfiles++] = f;
    return 0;
}

/* Lists the entries of the folder. tidy: remove temporary files and companions without a .bin
 * left for over STALE_NS (by a process that died mid-put). Returns 0 or -1 (folder unreadable). */
int cache_scan_dir(cache *c, scan *s, int tidy)
{
    memset(s, 0, sizeof *s);
    int64_t stale = now_ns() - STALE_NS;
    scan_walk w = {c, s, tidy, stale};
    walk_counts wc = {0, 0};
    if (walk_files(c, scan_visit, &w, 0, &wc) < 0) {
        cache_scan_free(s);
        return -1;
    }
    s->refused += wc.refused;
    if (s->nfiles == 0) return 0;
    qsort(s->files, (size_t)s->nfiles, sizeof *s->files, cmp_file);
    s->entries = malloc(sizeof *s->entries * (size_t)s->nfiles);
    if (!s->entries) { cache_scan_free(s); return -1; }
    for (int i = 0; i < s->nfiles;) {
        scan_entry e = {.id = s->files[i].id, .first = i};
        int64_t newest = 0;
        for (; i < s->nfiles && !strcmp(s->files[i].id, e.id); i++) {
            e.count++;
            e.size += s->files[i].size;
            if (s->files[i].mtime > newest) newest = s->files[i].mtime;
            if (!strcmp(s->files[i].ext, "bin")) { e.has_bin = 1; e.mtime = s->files[i].mtime; }
            if (!strcmp(s->files[i].ext, "bad")) s->set_aside++;
            if (!strcmp(s->files[i].ext, "crash")) s->crashed++;
        }
        if (e.has_bin) {
            s->entries[s->n++] = e;
            s->total += e.size;
        } else if (tidy && newest < stale) {
            remove_entry(c, s, &e);
        }
    }
    return 0;
}

/* Removes the least recently used entries until the folder is under its cap. The folder is
 * scanned only when what this handle knows of it (the total of its last scan, and the bytes put
 * since) is over the cap, or not known yet: a put under the cap costs nothing, whatever else the
 * folder holds. Other processes' puts are seen at the next scan (theirs evict too). */
void cache_evict(cache *c, uint64_t added)
{
    pthread_mutex_lock(&c->lock);
    int due = !c->known || c->known_total + added > c->cap;
    c->known_total += added;
    pthread_mutex_unlock(&c->lock);
    if (!due) return;
    scan s;
    __atomic_add_fetch(&c->scans, 1, __ATOMIC_RELAXED);
    if (cache_scan_dir(c, &s, 1) < 0) return;
    if (s.total > c->cap && s.n > 0) {
        qsort(s.entries, (size_t)s.n, sizeof *s.entries, cmp_entry_old_first);
        for (int i = 0; i < s.n && s.total > c->cap; i++) {
            remove_entry(c, &s, &s.entries[i]);
            s.total -= s.entries[i].size;
            cache_count(c, &c->evictions);
        }
    }
    pthread_mutex_lock(&c->lock);
    c->known = 1;
    c->known_total = s.total;
    pthread_mutex_unlock(&c->lock);
    cache_scan_free(&s);
}

void cache_scan_work(cache *c, uint64_t *scans, uint64_t *examined)
{
    *scans = __atomic_load_n(&c->scans, __ATOMIC_RELAXED);
    *examined = __atomic_load_n(&c->examined, __ATOMIC_RELAXED);
}

/* ---- stats, list, clear ---- */

static void format_time(int64_t ns, char *buf, size_t n)
{
    time_t t = (time_t)(ns / 1000000000LL);
    struct tm tm;
    if (!localtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, n, "?");
}

int cache_stats(cache *c, FILE *out)
{
    if (!c || !out) return -1;
    pthread_mutex_lock(&c->lock);
    int disabled = c->disabled, read_only = c->read_only;
    uint64_t hits = c->hits, misses = c->misses, puts = c->puts, ev = c->evictions;
    uint64_t refused = c->refused, rejected = c->rejected, crashed = c->crashed;
    pthread_mutex_unlock(&c->lock);
    fprintf(out, "folder: %s\n", c->dir[0] ? c->dir : "(none)");
    if (disabled) fprintf(out, "state: memory only (%s)\n", cache_warning(c));
    else if (read_only) fprintf(out, "state: read-only (%s)\n", cache_warning(c));
    else fprintf(out, "state: on disk\n");
    scan s;
    int rc = 0;
    if (!disabled && cache_scan_dir(c, &s, 0) == 0) {
        int damaged = 0;
        for (int i = 0; i < s.n; i++) {
            entry_info info;
            int r = cache_entry_read(c, s.entries[i].id, NULL, 0, NULL, NULL, 1, 0, &info);
            free(info.key);
            if (r == ENT_REFUSED) s.refused++;
            else if (r != ENT_OK) damaged++;
        }
        fprintf(out, "entries: %d (%d damaged)\n", s.n, damaged);
        fprintf(out, "refused: %d (links, files or folders not yours or writable by others, "
                     "not regular files)\n", s.refused);
        fprintf(out, "failed to load: %d (set aside as ID.bad and compiled afresh)\n", s.set_aside);
        fprintf(out, "crashed: %d (killed the process that ran them: set aside as ID.crash and "
                     "compiled afresh)\n", s.crashed);
        fprintf(out, "size: %" PRIu64 " bytes (%.1f MiB) of a cap of %" PRIu64 " bytes (%.1f MiB)\n",
                s.total, (double)s.total / 1048576.0, c->cap, (double)c->cap / 1048576.0);
        cache_scan_free(&s);
    } else {
        if (!disabled) rc = -1;
        fprintf(out, "entries: 0\n");
    }
    fprintf(out, "this session: %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64 " puts, %" PRIu64
                 " evicted, %" PRIu64 " refused, %" PRIu64 " failed to load, %" PRIu64 " crashed\n",
            hits, misses, puts, ev, refused, rejected, crashed);
    return rc;
}

int cache_list(cache *c, FILE *out)
{
    if (!c || !out) return -1;
    if (cache_is_disabled(c)) return 0;
    scan s;
    if (cache_scan_dir(c, &s, 0) < 0) return -1;
    if (s.n > 1) qsort(s.entries, (size_t)s.n, sizeof *s.entries, cmp_entry_new_first);
    for (int i = 0; i < s.n; i++) {
        const scan_entry *e = &s.entries[i];
        char when[64];
        entry_info info;
        format_time(e->mtime, when, sizeof when);
        fprintf(out, "%s  %10" PRIu64 "  %s  ", e->id, e->size, when);
        int r = cache_entry_read(c, e->id, NULL, 0, NULL, NULL, 0, 0, &info);
        if (r == ENT_OK) {
            for (char *k = info.key; *k; k++)
                if (*k != '\n' || k[1]) fputc(*k == '\n' ? ' ' : *k, out);
            fputc('\n', out);
            free(info.key);
        } else if (r == ENT_REFUSED) {
            fprintf(out, "(refused: %s)\n", info.why);
        } else {
            fprintf(out, "(damaged)\n");
        }
    }
    int n = s.n;
    cache_scan_free(&s);
    return n;
}

typedef struct clear_walk { cache *c; int removed, failed; int64_t stale; } clear_walk;

/* cache_clear's visitor: every file of ours named like an entry's goes (a link of ours is
 * removed, never what it points to); a temporary file only when it is a leftover (a fresh one
 * belongs to a put in progress). Files of other users stay, and make the clear fail. */
static int clear_visit(void *ctx, int fd, const char *prefix, const char *name, const struct stat *st)
{
    clear_walk *w = ctx;
    int temporary = !strncmp(name, ".tmp.", 5);
    scan_file f;
    if (!temporary && parse_name(prefix, name, &f) < 0) return 0;
    if (st->st_uid != w->c->euid) {
        w->failed = 1;
        return 0;
    }
    if (temporary) {
        if (ts_ns(st->st_mtim) < w->stale) unlinkat(fd, name, 0);
        return 0;
    }
    if (unlinkat(fd, name, 0) < 0) {
        if (errno != ENOENT) w->failed = 1;
    } else if (!strcmp(f.ext, "bin")) {
        w->removed++;
    }
    return 0;
}

int cache_clear(cache *c)
{
    if (!c || cache_is_disabled(c)) return -1;
    clear_walk w = {c, 0, 0, now_ns() - STALE_NS};
    walk_counts wc = {0, 0};
    if (walk_files(c, clear_visit, &w, 1, &wc) < 0) return -1;
    if (wc.refused) {
        char what[PATH_MAX + 32];
        snprintf(what, sizeof what, "%d sub-folder%s of %s", wc.refused, wc.refused == 1 ? "" : "s",
                 c->dir);
        cache_refuse(c, what, "links, not yours, or writable by others; left as they are");
    }
    return w.failed || wc.unopened || wc.refused ? -1 : w.removed;
}
