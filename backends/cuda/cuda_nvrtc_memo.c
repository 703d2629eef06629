/* cuda_nvrtc_memo.c — the NVRTC version of the kernel cache's keys without loading NVRTC (see
 * cuda_nvrtc_memo.h): the library cuda_nvrtc_open would load located by the same search as
 * dlopen's (LD_LIBRARY_PATH, ld.so.conf and its includes, the default folders), its identity
 * (real path, size, mtime) the key of a memo entry whose payload is the version string. */
#include "cuda_nvrtc_memo.h"
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cuda_driver.h"
#include "knobs.h"

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

typedef struct dirlist { char **d; int n, cap; } dirlist;

static void dl_add(dirlist *l, const char *dir, size_t len)
{
    if (!len || len >= PATH_MAX) return;
    for (int i = 0; i < l->n; i++)
        if (strlen(l->d[i]) == len && !strncmp(l->d[i], dir, len)) return;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **d = realloc(l->d, sizeof *d * (size_t)cap);
        if (!d) return;
        l->d = d;
        l->cap = cap;
    }
    char *s = strndup(dir, len);
    if (s) l->d[l->n++] = s;
}

static void dl_add_path_list(dirlist *l, const char *list)
{
    while (list && *list) {
        const char *e = strchr(list, ':');
        size_t n = e ? (size_t)(e - list) : strlen(list);
        dl_add(l, list, n);
        list = e ? e + 1 : NULL;
    }
}

/* /etc/ld.so.conf and its includes (depth-limited): the folders ld.so.cache is built from. */
static void dl_add_conf(dirlist *l, const char *path, int depth)
{
    if (depth > 4) return;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[PATH_MAX];
    while (fgets(line, sizeof line, f)) {
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        char *h = strchr(s, '#');
        if (h) *h = 0;
        size_t n = strlen(s);
        while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = 0;
        if (!n) continue;
        if (!strncmp(s, "include", 7) && (s[7] == ' ' || s[7] == '\t')) {
            char *pat = s + 8;
            while (*pat == ' ' || *pat == '\t') pat++;
            char full[PATH_MAX];
            if (pat[0] != '/') snprintf(full, sizeof full, "/etc/%s", pat);
            else snprintf(full, sizeof full, "%s", pat);
            glob_t g;
            if (glob(full, 0, NULL, &g) == 0) {
                for (size_t i = 0; i < g.gl_pathc; i++) dl_add_conf(l, g.gl_pathv[i], depth + 1);
                globfree(&g);
            }
        } else if (s[0] == '/') {
            dl_add(l, s, n);
        }
    }
    fclose(f);
}

/* Where dlopen(name) would find a bare soname: LD_LIBRARY_PATH, the ld.so.conf folders, the
 * default folders. A name with a slash is a path. */
static int resolve_lib(const char *name, const dirlist *dirs, char *out)
{
    if (!name || !*name) return -1;
    if (strchr(name, '/')) return file_exists(name) && realpath(name, out) ? 0 : -1;
    for (int i = 0; i < dirs->n; i++) {
        char p[PATH_MAX * 2];
        snprintf(p, sizeof p, "%s/%s", dirs->d[i], name);
        if (file_exists(p) && realpath(p, out)) return 0;
    }
    return -1;
}

/* The real path of the NVRTC library cuda_nvrtc_open would load (same candidate order). */
static int locate_nvrtc(char *out)
{
    dirlist dirs = {0};
    dl_add_path_list(&dirs, knob(KNOB_LD_LIBRARY_PATH));
    dl_add_conf(&dirs, "/etc/ld.so.conf", 0);
    dl_add_path_list(&dirs, "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64:/usr/lib64:/lib:/usr/lib");
    cuda_nvrtc_names nn; /* the same list, in the same order, as cuda_nvrtc_open */
    cuda_nvrtc_names_init(&nn);
    int rc = -1;
    for (int i = 0; i < CUDA_NVRTC_CANDIDATES && rc; i++) rc = resolve_lib(nn.name[i], &dirs, out);
    for (int i = 0; i < dirs.n; i++) free(dirs.d[i]);
    free(dirs.d);
    return rc;
}

static int file_identity(const char *path, char *out, size_t len)
{
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    snprintf(out, len, "%s:%lld:%lld.%09ld", path, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
             (long)st.st_mtim.tv_nsec);
    return 0;
}

static void memo_key(cache_key *k, const char *identity)
{
    memset(k, 0, sizeof *k);
    cache_key_add(k, "kind", "nvrtc-version");
    cache_key_add(k, "backend", "cuda");
    cache_key_add(k, "library", identity);
}

/* Whether the library at `path` (a real path) is loaded in this process. */
static int is_loaded_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *want = data, *n = info->dlpi_name;
    if (!n || !*n) return 0;
    const char *base = strrchr(n, '/');
    base = base ? base + 1 : n;
    if (strncmp(base, "libnvrtc", 8)) return 0;
    char real[PATH_MAX];
    return realpath(n, real) && !strcmp(real, want);
}

int cuda_nvrtc_memo_get(cache *c, char *version, size_t size)
{
    char located[PATH_MAX], id[PATH_MAX + 64];
    if (locate_nvrtc(located) < 0 || file_identity(located, id, sizeof id) < 0) return -1;
    cache_key k;
    memo_key(&k, id);
    void *v = NULL;
    size_t len = 0;
    int rc = -1;
    if (cache_get(c, &k, &v, &len) == 1 && len > 1 && len < size && ((char *)v)[len - 1] == 0) {
        memcpy(version, v, len);
        rc = 0;
    }
    free(v);
    return rc;
}

void cuda_nvrtc_memo_put(cache *c, const char *version)
{
    char located[PATH_MAX], id[PATH_MAX + 64];
    if (locate_nvrtc(located) < 0 || !dl_iterate_phdr(is_loaded_cb, located) ||
        file_identity(located, id, sizeof id) < 0)
        return;
    cache_key k;
    memo_key(&k, id);
    void *old = NULL;
    size_t len = 0;
    int have = cache_get(c, &k, &old, &len) == 1 && len == strlen(version) + 1 && !memcmp(old, version, len);
    free(old);
    if (!have) cache_put(c, &k, version, strlen(version) + 1, NULL, NULL);
}
