/* arena.h — bump allocation for one compile: one call frees a problem's AST and IR
 * (QBE's alloc/freeall). Every allocation is zeroed.
 *
 * Out of memory never aborts and never returns NULL to code that would use it: the arena
 * longjmps to `on_failure`, which whoever runs a compile sets (compile_problem, and the parser
 * around the scanner); all the compile's memory is in the arena or owned by its result, so the
 * handler frees it and reports "out of memory". Without a handler an allocation that fails
 * returns NULL and sets `failed`. */
#ifndef PJ_ARENA_H
#define PJ_ARENA_H
#include <setjmp.h>
#include <stddef.h>

typedef struct arena_block arena_block;
typedef struct arena {
    arena_block *head;
    size_t total;         /* bytes handed out, for limits and statistics */
    jmp_buf *on_failure;  /* where an allocation that fails jumps (longjmp value 1), or NULL */
    int failed;           /* an allocation failed */
} arena;

void *arena_alloc(arena *a, size_t size);            /* zeroed, 16-byte aligned */
void *arena_grow(arena *a, void *old, size_t old_size, size_t new_size); /* copy into a new block */
char *arena_strdup(arena *a, const char *s);
char *arena_strndup(arena *a, const char *s, size_t n);
char *arena_printf(arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void arena_free(arena *a);
/* Memory of the compile that ran out outside the arena (a malloc, a kernel): as if an arena
 * allocation had failed. Returns only when no handler is set. */
void arena_fail(arena *a);                           /* frees everything; the arena is reusable */

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
