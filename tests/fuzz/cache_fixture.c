/* cache_fixture.c — see cache_fixture.h. */
#include "cache_fixture.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void fixed_key(cache_key *k)
{
    *k = (cache_key){0};
    cache_key_add(k, "ir", "0123456789abcdef0123456789abcdef");
    cache_key_add(k, "kind", "stage");
    cache_key_add(k, "backend", "fuzz");
    cache_key_add(k, "codegen", "1");
}

/* The one NAME.bin in a sub-folder of root: 0 with entry_dir and entry_path set, or -1. */
static int find_entry(cache_fixture *f)
{
    DIR *top = opendir(f->root);
    if (!top) return -1;
    int found = 0;
    struct dirent *d;
    while (!found && (d = readdir(top))) {
        if (d->d_name[0] == '.') continue;
        char sub[PATH_MAX];
        if (snprintf(sub, sizeof sub, "%s/%s", f->root, d->d_name) >= (int)sizeof sub) continue;
        DIR *in = opendir(sub);
        if (!in) continue;
        struct dirent *e;
        while (!found && (e = readdir(in))) {
            size_t n = strlen(e->d_name);
            if (n > 4 && !strcmp(e->d_name + n - 4, ".bin") &&
                snprintf(f->entry_path, sizeof f->entry_path, "%s/%s", sub, e->d_name) < (int)sizeof f->entry_path) {
                snprintf(f->entry_dir, sizeof f->entry_dir, "%s", sub);
                found = 1;
            }
        }
        closedir(in);
    }
    closedir(top);
    return found ? 0 : -1;
}

int fixture_open(cache_fixture *f, const void *payload, size_t len, char *err, size_t err_len)
{
    *f = (cache_fixture){0};
    fixed_key(&f->key);
    /* a memory file system when there is one: creating files on a disk's file system is ten
       times slower, and the target creates one per input */
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(f->root, sizeof f->root, "%s/pdejit-fuzz-cache.XXXXXX", tmp);
    if (!mkdtemp(f->root)) {
        snprintf(err, err_len, "mkdtemp %s: %s", f->root, strerror(errno));
        f->root[0] = 0;
        return -1;
    }
    cache *c = cache_open(f->root, 0);
    int stored = c && cache_put(c, &f->key, payload, len, NULL, NULL) == 0;
    if (!stored) snprintf(err, err_len, "cache_put in %s failed: %s", f->root, c && cache_warning(c) ? cache_warning(c) : "");
    cache_close(c);
    if (stored && find_entry(f) < 0) {
        snprintf(err, err_len, "no .bin file in a sub-folder of %s after cache_put", f->root);
        stored = 0;
    }
    if (!stored) fixture_close(f);
    return stored ? 0 : -1;
}

void fixture_close(cache_fixture *f)
{
    if (!f->root[0]) return;
    cache *c = cache_open(f->root, 0);
    if (c) cache_clear(c);
    cache_close(c);
    if (f->entry_path[0]) unlink(f->entry_path);
    if (f->entry_dir[0]) rmdir(f->entry_dir);
    rmdir(f->root);
    f->root[0] = 0;
}

int fixture_write_entry(const cache_fixture *f, const void *bytes, size_t len)
{
    if (mkdir(f->entry_dir, 0700) < 0 && errno != EEXIST) return -1;
    int fd = open(f->entry_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    const char *p = bytes;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            close(fd);
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return close(fd);
}

void *fixture_read_entry(const cache_fixture *f, size_t *len)
{
    FILE *in = fopen(f->entry_path, "rb");
    if (!in) return NULL;
    char *buf = NULL;
    size_t cap = 0, used = 0;
    for (;;) {
        if (used == cap) {
            char *grown = realloc(buf, cap = cap ? 2 * cap : 4096);
            if (!grown) break;
            buf = grown;
        }
        size_t n = fread(buf + used, 1, cap - used, in);
        used += n;
        if (n == 0) {
            fclose(in);
            *len = used;
            return buf;
        }
    }
    fclose(in);
    free(buf);
    return NULL;
}
