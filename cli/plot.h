/* plot.h — log-log line plots as PNG for `pdejit bench`. */
#ifndef PJ_PLOT_H
#define PJ_PLOT_H
#include <stddef.h>

#define PLOT_MAX_SERIES 4
typedef struct plot_series { const char *name; const double *x, *y; int n; } plot_series;
/* RGB of series i: grey, blue, green, red. */
extern const unsigned char plot_colours[PLOT_MAX_SERIES][3];
int plot_png(const char *path, const plot_series *series, int n_series, char *err, size_t err_len);

#endif
