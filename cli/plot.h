/* plot.h — log-log line plots as PNG for `pdejit bench`. */
#ifndef PJ_PLOT_H
#define PJ_PLOT_H
#include <stddef.h>

#define PLOT_MAX_SERIES 4
typedef struct plot_series { const char *name; const double *x, *y; int n; } plot_series;
/* RGB of series i: grey, blue, green, red. */
extern const unsigned char plot_colours[PLOT_MAX_SERIES][3];
/* The image: PLOT_W x PLOT_H pixels; the title in the top 30 rows, the plot's frame from row
 * PLOT_TOP, the legend in the PLOT_LEGEND_W columns at the right. */
#define PLOT_W 800
#define PLOT_H 520
#define PLOT_TOP 56
#define PLOT_LEGEND_W 150
/* Writes series (x > 0, y > 0; other points left out) as a log-log plot to path: title centred at
 * the top, ylabel above the y axis, xlabel under the x axis. 0, or -1 with a message in err. */
int plot_png(const char *path, const char *title, const char *xlabel, const char *ylabel, const plot_series *series,
             int n_series, char *err, size_t err_len);

#endif
