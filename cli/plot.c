/* plot.c — a small log-log line plot as PNG (libpng), for `pdejit bench --plot`: throughput
 * against grid size, one coloured line per back end. A title at the top, the y axis's name and
 * unit above it, the x axis's under it, ticks at powers of ten labelled 1e3, 1e6..., and a legend
 * (each series' colour and name) right of the plot; text in the frames' 5x7 font (picture.h). */
#include "plot.h"
#include "picture.h"
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W PLOT_W
#define H PLOT_H
#define ML 80
#define MR PLOT_LEGEND_W
#define MT PLOT_TOP
#define MB 56
#define FONT 2

typedef struct canvas { unsigned char px[H][W][3]; } canvas;

static void dot(canvas *c, int x, int y, const unsigned char rgb[3])
{
    if (x >= 0 && x < W && y >= 0 && y < H) memcpy(c->px[y][x], rgb, 3);
}

static void line(canvas *c, int x0, int y0, int x1, int y1, const unsigned char rgb[3], int thick)
{
    int dx = abs(x1 - x0), dy = -abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, e = dx + dy;
    for (;;) {
        for (int a = -thick / 2; a <= thick / 2; a++)
            for (int b = -thick / 2; b <= thick / 2; b++) dot(c, x0 + a, y0 + b, rgb);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * e;
        if (e2 >= dy) { e += dy; x0 += sx; }
        if (e2 <= dx) { e += dx; y0 += sy; }
    }
}

/* Text in the frames' 5x7 font (runtime/picture.h), 2 pixels a dot. */
static void text(canvas *c, int x, int y, const char *s, const unsigned char rgb[3])
{
    picture_text(&c->px[0][0][0], W, H, x, y, s, FONT, rgb);
}

const unsigned char plot_colours[PLOT_MAX_SERIES][3] = {{120, 120, 120}, {31, 119, 180}, {44, 160, 44}, {214, 39, 40}};

int plot_png(const char *path, const char *title, const char *xlabel, const char *ylabel, const plot_series *series,
             int n_series, char *err, size_t err_len)
{
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (int s = 0; s < n_series; s++)
        for (int i = 0; i < series[s].n; i++) {
            if (!(series[s].x[i] > 0 && series[s].y[i] > 0)) continue;
            xmin = fmin(xmin, series[s].x[i]);
            xmax = fmax(xmax, series[s].x[i]);
            ymin = fmin(ymin, series[s].y[i]);
            ymax = fmax(ymax, series[s].y[i]);
        }
    if (!(xmin <= xmax)) {
        snprintf(err, err_len, "nothing to plot");
        return -1;
    }
    double lx0 = floor(log10(xmin)), lx1 = ceil(log10(xmax)), ly0 = floor(log10(ymin)), ly1 = ceil(log10(ymax));
    if (lx1 <= lx0) lx1 = lx0 + 1;
    if (ly1 <= ly0) ly1 = ly0 + 1;
    canvas *c = malloc(sizeof *c);
    if (!c) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    memset(c, 255, sizeof *c);
    static const unsigned char grid[3] = {225, 225, 225}, ink[3] = {0, 0, 0};
#define PX(lx) (ML + (int)(((lx) - lx0) / (lx1 - lx0) * (W - ML - MR)))
#define PY(ly) (H - MB - (int)(((ly) - ly0) / (ly1 - ly0) * (H - MT - MB)))
    char label[16];
    for (double d = lx0; d <= lx1; d++) {
        line(c, PX(d), MT, PX(d), H - MB, grid, 1);
        snprintf(label, sizeof label, "1e%d", (int)d);
        text(c, PX(d) - picture_text_width(label, FONT) / 2, H - MB + 8, label, ink);
    }
    for (double d = ly0; d <= ly1; d++) {
        line(c, ML, PY(d), W - MR, PY(d), grid, 1);
        snprintf(label, sizeof label, "1e%d", (int)d);
        text(c, ML - 8 - picture_text_width(label, FONT), PY(d) - 7, label, ink);
    }
    text(c, (W - picture_text_width(title, FONT)) / 2, 8, title, ink);
    text(c, 8, MT - 26, ylabel, ink);
    text(c, ML + (W - ML - MR - picture_text_width(xlabel, FONT)) / 2, H - MB + 32, xlabel, ink);
    for (int s = 0, row = 0; s < n_series; s++) { /* the legend: the series that have points */
        int any = 0;
        for (int i = 0; i < series[s].n; i++) any |= series[s].x[i] > 0 && series[s].y[i] > 0;
        if (!any) continue;
        int y = MT + 10 + 24 * row++;
        line(c, W - MR + 16, y + 7, W - MR + 40, y + 7, plot_colours[s % PLOT_MAX_SERIES], 3);
        text(c, W - MR + 48, y, series[s].name, ink);
    }
    line(c, ML, MT, ML, H - MB, ink, 1);
    line(c, ML, H - MB, W - MR, H - MB, ink, 1);
    for (int s = 0; s < n_series; s++) {
        int px = -1, py = -1;
        for (int i = 0; i < series[s].n; i++) {
            if (!(series[s].x[i] > 0 && series[s].y[i] > 0)) continue;
            int x = PX(log10(series[s].x[i])), y = PY(log10(series[s].y[i]));
            if (px >= 0) line(c, px, py, x, y, plot_colours[s % PLOT_MAX_SERIES], 3);
            for (int a = -4; a <= 4; a++)
                for (int b = -4; b <= 4; b++) dot(c, x + a, y + b, plot_colours[s % PLOT_MAX_SERIES]);
            px = x;
            py = y;
        }
    }
#undef PX
#undef PY
    FILE *f = fopen(path, "wb");
    png_structp png = f ? png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL) : NULL;
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!f || !png || !info || setjmp(png_jmpbuf(png))) {
        snprintf(err, err_len, "%s: cannot write the plot", path);
        if (png) png_destroy_write_struct(&png, info ? &info : NULL);
        if (f) fclose(f);
        free(c);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, W, H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < H; y++) png_write_row(png, (png_bytep)c->px[y]);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
    free(c);
    return 0;
}
