/* writers_afile.h — the writers' atomic files (writers.c), shared with the VTK writers
 * (writers_vtk.c): a temporary file beside the target, renamed into place by commit; a device, a
 * pipe or a link is written through. Internal to the writers. */
#ifndef PJ_WRITERS_AFILE_H
#define PJ_WRITERS_AFILE_H
#include <stddef.h>
#include <stdio.h>

typedef struct afile {
    FILE *f;
    char *tmp;
    const char *path;
} afile;

/* Opens a->f for path; 0, or -1 with `path: strerror` in err. */
int writers_af_open(afile *a, const char *path, char *err, size_t err_len);
/* Closes and removes the temporary file. */
void writers_af_abort(afile *a);
/* Closes and renames into place; on any earlier write error reports it and removes the file. */
int writers_af_commit(afile *a, char *err, size_t err_len);

#endif
