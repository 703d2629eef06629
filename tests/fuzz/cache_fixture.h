/* cache_fixture.h — a temporary cache folder and one fixed key, through runtime/cache.h alone,
 * for the cache-entry fuzz target and the tool that writes its seeds.
 *
 * The entry file's name is not computed here: the fixture stores an entry under the fixed key
 * with cache_put and finds the .bin file it made, so the target keeps working however the cache
 * lays its folder out, as long as an entry is one .bin file in a sub-folder. */
#ifndef PJ_FUZZ_CACHE_FIXTURE_H
#define PJ_FUZZ_CACHE_FIXTURE_H
#include <limits.h>
#include <stddef.h>
#include "cache.h"

typedef struct cache_fixture {
    char root[PATH_MAX];      /* the temporary cache folder: mkdtemp in $TMPDIR, else /dev/shm,
                                 else /tmp; removed by fixture_close */
    char entry_dir[PATH_MAX]; /* the sub-folder the fixed key's entry lives in */
    char entry_path[PATH_MAX];/* the fixed key's .bin file */
    cache_key key;            /* the fixed key (static strings) */
} cache_fixture;

/* Creates the folder, stores `payload` under the fixed key and finds its file; the entry stays
 * in place. Returns 0, or -1 with a message in err. */
int fixture_open(cache_fixture *f, const void *payload, size_t len, char *err, size_t err_len);
/* Empties and removes the folder. */
void fixture_close(cache_fixture *f);
/* Writes bytes as the fixed key's entry file (its sub-folder made when missing). 0 or -1. */
int fixture_write_entry(const cache_fixture *f, const void *bytes, size_t len);
/* Reads the fixed key's entry file into a malloc'd buffer; NULL when it cannot. */
void *fixture_read_entry(const cache_fixture *f, size_t *len);

#endif
