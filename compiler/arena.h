/* arena.h — bump allocation for one compile: one call frees a problem's AST and IR
 * (QBE's alloc/freeall). Every allocation is zeroed. Out of memory aborts with a message:
 * there is nothing sensible a compiler can do without memory. */
#ifndef PJ_ARENA_H
#define PJ_ARENA_H
#include <stddef.h>

typedef struct arena_block arena_block;
typedef struct arena {
    arena_block *head;
    size_t total; /* bytes handed out, for limits and statistics */
} arena;

void *arena_alloc(arena *a, size_t size);            /* zeroed, 16-byte aligned */
void *arena_grow(arena *a, void *old, size_t old_size, size_t new_size); /* copy into a new block */
char *arena_strdup(arena *a, const char *s);
char *arena_strndup(arena *a, const char *s, size_t n);
char *arena_printf(arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void arena_free(arena *a);                           /* frees everything; the arena is reusable */

/* A growable array in an arena: PJ_VEC(int) v; vec_push(a, &v, x); */
#define PJ_VEC(T) struct { T *items; int len, cap; }
#define vec_push(ar, v, x)                                                                      \
    do {                                                                                        \
        if ((v)->len == (v)->cap) {                                                             \
            int nc_ = (v)->cap ? 2 * (v)->cap : 8;                                              \
            (v)->items = arena_grow((ar), (v)->items, sizeof *(v)->items * (size_t)(v)->cap,    \
                                    sizeof *(v)->items * (size_t)nc_);                          \
            (v)->cap = nc_;                                                                     \
        }                                                                                       \
        (v)->items[(v)->len++] = (x);                                                           \
    } while (0)

#endif
