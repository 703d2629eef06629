/* test_png.c — the PNG frames of `pdejit run` (runtime/writers.c, docs/language.md "Pictures"):
 * their size (at least 512 pixels on the long side), the colour bar's ends, a series on one fixed
 * `range`, `colormap`, the text chunks, and the errors at the output statement's text. */
#include "testutil.h"
#include <png.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "picture.h"
#include "program.h"

static char *write_file(const char *name, const char *text)
{
    char *path = malloc(strlen(tu_dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", tu_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

typedef struct picture { unsigned w, h; unsigned char *pix; char *bytes; size_t n_bytes; } picture;

static picture read_png(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tu_dir, name);
    picture p = {0};
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    assert_true(png_image_begin_read_from_file(&img, path));
    img.format = PNG_FORMAT_RGB;
    p.w = img.width;
    p.h = img.height;
    p.pix = malloc(PNG_IMAGE_SIZE(img));
    assert_true(png_image_finish_read(&img, NULL, p.pix, 0, NULL));
    p.bytes = tu_read_file(path, &p.n_bytes);
    assert_non_null(p.bytes);
    return p;
}

static const unsigned char *px(const picture *p, unsigned x, unsigned y)
{
    assert_true(x < p->w && y < p->h);
    return p->pix + ((size_t)y * p->w + x) * 3;
}

/* The text of tEXt chunk KEY (uncompressed: KEY, a zero byte, the text up to the CRC). */
static int has_text(const picture *p, const char *key, const char *text)
{
    size_t kl = strlen(key), tl = strlen(text);
    for (size_t i = 8; i + 4 + kl + 1 + tl <= p->n_bytes; i++)
        if (!memcmp(p->bytes + i, "tEXt", 4) && !memcmp(p->bytes + i + 4, key, kl) && p->bytes[i + 4 + kl] == 0 &&
            !memcmp(p->bytes + i + 5 + kl, text, tl)) {
            unsigned len = (unsigned char)p->bytes[i - 1] | (unsigned)(unsigned char)p->bytes[i - 2] << 8;
            return len == kl + 1 + tl;
        }
    return 0;
}

static void free_picture(picture *p)
{
    free(p->pix);
    free(p->bytes);
}

static void rgb_is(const unsigned char *got, const unsigned char want[3])
{
    assert_int_equal(got[0], want[0]);
    assert_int_equal(got[1], want[1]);
    assert_int_equal(got[2], want[2]);
}

/* 48 x 32 cells: 11 pixels a cell (528 x 352) under the 30-pixel header, the bar 8 pixels to
 * the right (x from 544), its top row the map's top, its bottom row the map's bottom. */
static void size_and_colour_bar(void **state)
{
    (void)state;
    char *p = write_file("a.pde", "mesh grid(nx = 48, ny = 32)\nfield u = x\neq dt(u) = 0\ntime dt = 0.5, until = 0.5\n"
                                  "output every = 0.5, format = png\n");
    char *out;
    assert_int_equal(tu_pdejit(&out, "run a.pde --out a"), 0);
    free(out);
    picture a = read_png("a/u_000000.png");
    assert_true(a.w >= 512 && a.w >= a.h);
    assert_true(a.w > 8 + 528 + 8 + 24);
    assert_int_equal(a.h, 30 + 352 + 30); /* the axes' caption: 30 pixels */
    static const unsigned char top[3] = {0xfd, 0xe7, 0x25}, bottom[3] = {0x44, 0x01, 0x54}, white[3] = {255, 255, 255};
    for (unsigned x = 544; x < 544 + 24; x++) {
        rgb_is(px(&a, x, 30), top);
        rgb_is(px(&a, x, 30 + 351), bottom);
    }
    rgb_is(px(&a, 543, 100), white); /* the gap between the field and the bar */
    rgb_is(px(&a, 8, 30 + 351), bottom); /* x = 1/96, the frame's minimum: the map's bottom */
    rgb_is(px(&a, 8 + 527, 30), top);
    /* a cell is an 11 x 11 block: cell (1, 0) starts at x = 8 + 11 */
    assert_memory_equal(px(&a, 8 + 11, 30 + 341), px(&a, 8 + 21, 30 + 351), 3);
    assert_memory_not_equal(px(&a, 8 + 10, 30 + 351), px(&a, 8 + 11, 30 + 351), 3);
    /* the header and the labels are drawn in black */
    int black = 0;
    for (unsigned y = 0; y < 30; y++)
        for (unsigned x = 0; x < 120; x++) black += px(&a, x, y)[0] == 0 && px(&a, x, y)[1] == 0;
    assert_true(black > 40);
    assert_true(has_text(&a, "field", "u") && has_text(&a, "t", "0") && has_text(&a, "colormap", "viridis"));
    assert_true(has_text(&a, "range", "0.010416666666666666,0.9895833333333333")); /* 1/96, 95/96 */
    free_picture(&a);
    /* 1D: a band 1/6 as high as long; 600 cells: one pixel a cell */
    char *q = write_file("b.pde", "mesh grid(nx = 600)\nfield u = x\neq dt(u) = 0\ntime dt = 0.5, until = 0.5\n"
                                  "output every = 0.5, format = png, colormap = magma\n");
    assert_int_equal(tu_pdejit(&out, "run b.pde --out b"), 0);
    free(out);
    picture b = read_png("b/u_000001.png");
    assert_int_equal(b.h, 30 + 100 + 30);
    unsigned char mtop[3], mbottom[3];
    picture_colour(PJ_CMAP_MAGMA, 1, mtop);
    picture_colour(PJ_CMAP_MAGMA, 0, mbottom);
    rgb_is(px(&b, 8 + 600 + 8, 30), mtop);
    rgb_is(px(&b, 8 + 600 + 8, 30 + 99), mbottom);
    rgb_is(px(&b, 8, 30 + 50), mbottom);
    assert_true(has_text(&b, "colormap", "magma") && has_text(&b, "t", "0.5"));
    free_picture(&b);
    free(p);
    free(q);
}

/* u is 1 on the left and t on the right: on its own min..max the left cells are the top of the
 * map at t = 0 and the bottom at t = 2; with `range = 0, 4` they are 1/4 of the way up in both. */
static void a_series_shares_its_range(void **state)
{
    (void)state;
    const char *src = "mesh grid(nx = 8, ny = 8)\nfield u = x < 0.5 ? 1 : 0\neq dt(u) = x < 0.5 ? 0 : 1\n"
                      "time dt = 0.5, until = 2\noutput at = 0, 2, format = png%s\n";
    char text[512], *out;
    snprintf(text, sizeof text, src, ", range = 0, 4");
    char *p = write_file("r.pde", text);
    assert_int_equal(tu_pdejit(&out, "run r.pde --out r"), 0);
    free(out);
    snprintf(text, sizeof text, src, "");
    char *q = write_file("s.pde", text);
    assert_int_equal(tu_pdejit(&out, "run s.pde --out s"), 0);
    free(out);
    unsigned char quarter[3], top[3], bottom[3];
    picture_colour(PJ_CMAP_VIRIDIS, 0.25, quarter);
    picture_colour(PJ_CMAP_VIRIDIS, 1, top);
    picture_colour(PJ_CMAP_VIRIDIS, 0, bottom);
    picture r0 = read_png("r/u_000000.png"), r1 = read_png("r/u_000001.png");
    picture s0 = read_png("s/u_000000.png"), s1 = read_png("s/u_000001.png");
    rgb_is(px(&r0, 8, 100), quarter);
    rgb_is(px(&r1, 8, 100), quarter);
    rgb_is(px(&s0, 8, 100), top);
    rgb_is(px(&s1, 8, 100), bottom);
    assert_true(has_text(&r0, "range", "0,4") && has_text(&r1, "range", "0,4"));
    assert_true(has_text(&s0, "range", "0,1") && has_text(&s1, "range", "1,2"));
    /* the right cells: 0 and 2 of 0..4, the map's bottom and middle */
    unsigned char half[3];
    picture_colour(PJ_CMAP_VIRIDIS, 0.5, half);
    rgb_is(px(&r0, 8 + 511, 100), bottom);
    rgb_is(px(&r1, 8 + 511, 100), half);
    free_picture(&r0);
    free_picture(&r1);
    free_picture(&s0);
    free_picture(&s1);
    free(p);
    free(q);
}

static void bad_range_and_colormap(void **state)
{
    (void)state;
    static const struct { const char *out, *msg; } cases[] = {
        {"range = 2, 1", "e.pde:2:27: error: output range: LO must be below HI (both finite), not 2, 1\n"
                         "    output every = 1, range = 2, 1\n                              ^\n1 error\n"},
        {"range = 1, 1", "e.pde:2:27: error: output range: LO must be below HI (both finite), not 1, 1\n"
                         "    output every = 1, range = 1, 1\n                              ^\n1 error\n"},
        {"range = 0, 1/0", "e.pde:2:27: error: output range: LO must be below HI (both finite), not 0, inf\n"
                           "    output every = 1, range = 0, 1/0\n                              ^\n1 error\n"},
        {"range = 1", "e.pde:2:27: error: output range takes two values: range = LO, HI\n"
                      "    output every = 1, range = 1\n                              ^\n1 error\n"},
        {"range = 0, 1, 2", "e.pde:2:33: error: output range takes two values: range = LO, HI\n"
                            "    output every = 1, range = 0, 1, 2\n                                    ^\n1 error\n"},
        {"colormap = virdis", "e.pde:2:30: error: unknown colormap 'virdis' (did you mean 'viridis'?); colormaps are "
                              "viridis, magma, gray, coolwarm\n"
                              "    output every = 1, colormap = virdis\n                                 ^\n1 error\n"},
        {"colormap = jet", "e.pde:2:30: error: unknown colormap 'jet'; colormaps are viridis, magma, gray, coolwarm\n"
                           "    output every = 1, colormap = jet\n                                 ^\n1 error\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[256], *out;
        snprintf(text, sizeof text, "mesh grid(nx = 4)\noutput every = 1, %s\nfield u = x\neq dt(u) = 1\n"
                                    "time dt = 0.1, until = 1\n", cases[i].out);
        char *p = write_file("e.pde", text);
        assert_int_equal(tu_pdejit(&out, "check e.pde"), 2);
        assert_string_equal(out, cases[i].msg);
        free(out);
        free(p);
    }
}

/* The colour of cell value v on lo..hi, each channel within 1 of the picture's (the field's
 * values computed here and by the run may differ in their last bits). */
static void colour_near(const unsigned char *got, double v, double lo, double hi)
{
    unsigned char want[3];
    picture_colour(PJ_CMAP_VIRIDIS, (v - lo) / (hi - lo), want);
    for (int c = 0; c < 3; c++) assert_true(abs((int)got[c] - (int)want[c]) <= 1);
}

/* u = x + 10 y + 100 z on 24 x 16 x 12 cells over 2 x 1 x 1: the plane of `slice = x, 0.5`
 * (cells i = 6, x = 6.5/12) is y across (16 cells, 32 pixels a cell), z up (12 cells); the
 * default, the middle z plane (k = 6), x across (22 pixels a cell) and y up; `slice = y` the
 * middle y plane (j = 8), x across and z up. Each cell's pixels are its value through the map. */
static double u3(double x, double y, double z) { return x + 10 * y + 100 * z; }

static void slices_of_3d(void **state)
{
    (void)state;
    const char *src = "mesh grid(nx = 24, ny = 16, nz = 12, Lx = 2)\nfield u = x + 10*y + 100*z\neq dt(u) = 0\n"
                      "time dt = 0.5, until = 0.5\noutput every = 0.5, format = png%s\n";
    const char *opt[] = {", slice = x, 0.5", "", ", slice = y"};
    const char *dirs[] = {"sx", "sz", "sy"};
    for (int c = 0; c < 3; c++) {
        char text[512], cmd[64], *out;
        snprintf(text, sizeof text, src, opt[c]);
        char *p = write_file("c.pde", text);
        snprintf(cmd, sizeof cmd, "run c.pde --out %s", dirs[c]);
        assert_int_equal(tu_pdejit(&out, cmd), 0);
        free(out);
        free(p);
        snprintf(cmd, sizeof cmd, "%s/u_000001.png", dirs[c]);
        picture a = read_png(cmd);
        const double dx = 2.0 / 24, dy = 1.0 / 16, dz = 1.0 / 12;
        int nx = c == 0 ? 16 : 24, ny = c == 2 ? 12 : c == 1 ? 16 : 12, s = (512 + nx - 1) / nx;
        assert_int_equal(a.h, 30 + ny * s + 30);
        assert_true(a.w > 8 + (unsigned)(nx * s) + 8 + 24);
        double lo = c == 0 ? u3(6.5 * dx, 0.5 * dy, 0.5 * dz) : c == 1 ? u3(0.5 * dx, 0.5 * dy, 6.5 * dz)
                                                                      : u3(0.5 * dx, 8.5 * dy, 0.5 * dz);
        double hi = c == 0 ? u3(6.5 * dx, 15.5 * dy, 11.5 * dz) : c == 1 ? u3(23.5 * dx, 15.5 * dy, 6.5 * dz)
                                                                        : u3(23.5 * dx, 8.5 * dy, 11.5 * dz);
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) {
                double v = c == 0 ? u3(6.5 * dx, (i + 0.5) * dy, (j + 0.5) * dz)
                         : c == 1 ? u3((i + 0.5) * dx, (j + 0.5) * dy, 6.5 * dz)
                                  : u3((i + 0.5) * dx, 8.5 * dy, (j + 0.5) * dz);
                colour_near(px(&a, (unsigned)(8 + i * s + s / 2), (unsigned)(30 + (ny - 1 - j) * s + s / 2)), v, lo, hi);
            }
        free_picture(&a);
    }
}

/* slice = z, AT on a stretched z: the plane of the cell between whose real faces AT lies (z =
 * 0.5 on 10 cells growing by 1.5: faces (1.5^k - 1)/(1.5^10 - 1), cell 8, where equal widths
 * would give cell 5); u = log(dz) is one colour over the plane, the one of cell 8's width. */
static void slice_of_a_stretched_axis(void **state)
{
    (void)state;
    char *p = write_file("st.pde", "mesh grid(nx = 4, ny = 4, nz = 10, z = stretch(1.5))\nfield u = log(dz)\neq dt(u) = 0\n"
                                   "time dt = 0.5, until = 0.5\noutput every = 0.5, format = png, range = -6, 0, slice = z, 0.5\n");
    char *out;
    assert_int_equal(tu_pdejit(&out, "run st.pde --out st"), 0);
    free(out);
    free(p);
    double face[11];
    for (int k = 0; k <= 10; k++) face[k] = (pow(1.5, k) - 1) / (pow(1.5, 10) - 1);
    int want = 0;
    while (face[want + 1] <= 0.5) want++;
    assert_int_equal(want, 8);
    picture a = read_png("st/u_000000.png");
    for (unsigned j = 0; j < 4; j++)
        for (unsigned i = 0; i < 4; i++)
            colour_near(px(&a, 8 + 128 * i + 64, 30 + 128 * j + 64), log(face[want + 1] - face[want]), -6, 0);
    free_picture(&a);
}

/* Under the field, the axes' caption: black dots in the 30-pixel strip below the cells, none
 * in the same strip of a picture of the field alone would have; the strip is white right of it. */
static void axes_caption(void **state)
{
    (void)state;
    char *p = write_file("x.pde", "mesh grid(nx = 64, ny = 32)\nfield u = x\neq dt(u) = 0\ntime dt = 0.5, until = 0.5\n"
                                  "output every = 0.5, format = png\n");
    char *out;
    assert_int_equal(tu_pdejit(&out, "run x.pde --out x"), 0);
    free(out);
    picture a = read_png("x/u_000000.png");
    assert_int_equal(a.h, 30 + 256 + 30);
    int black = 0, other = 0;
    for (unsigned y = 30 + 256; y < a.h; y++)
        for (unsigned x = 0; x < a.w; x++) {
            const unsigned char *q = px(&a, x, y);
            if (!q[0] && !q[1] && !q[2]) black++;
            else if (q[0] != 255 || q[1] != 255 || q[2] != 255) other++;
        }
    assert_true(black > 100); /* "x -> 64 cells   y ^ 32 cells": 2 x 2 pixels a dot */
    assert_int_equal(other, 0);
    /* the caption's text ends within its width: 29 characters, 6 dots apart, from x = 8 */
    for (unsigned y = 30 + 256; y < a.h; y++) rgb_is(px(&a, 8 + 29 * 12, y), (const unsigned char[3]){255, 255, 255});
    free_picture(&a);
    free(p);
}

/* A mesh with stretched or listed widths is drawn in index space, each cell a square of the
 * same size whatever its width, and says so: "   (index space)" ends the caption and the text
 * chunk space = index is there; a uniform mesh's picture has neither. */
static void index_space_on_stretched_meshes(void **state)
{
    (void)state;
    /* u steps evenly from cell to cell along x: log of the widths growing by 1.2 (stretched), x */
    static const char *const meshes[2] = {"nx = 16, x = stretch(1.2), dy = [0.1, 0.3, 0.2, 0.4, 0.1, 0.2, 0.3, 0.1]",
                                          "nx = 16, ny = 8"};
    static const char *const fields[2] = {"log(dx) + 2*y", "4*x + 2*y"};
    for (int m = 0; m < 2; m++) {
        char text[512];
        snprintf(text, sizeof text, "mesh grid(%s)\nfield u = %s\neq dt(u) = 0\ntime dt = 0.5, until = 0.5\n"
                                    "output every = 0.5, format = png\n", meshes[m], fields[m]);
        char *p = write_file("i.pde", text), *out;
        assert_int_equal(tu_pdejit(&out, "run i.pde --out i%d", m), 0);
        free(out);
        char name[64];
        snprintf(name, sizeof name, "i%d/u_000000.png", m);
        picture a = read_png(name);
        assert_int_equal(a.h, 30 + 256 + 30); /* 16 x 8 cells of 32 pixels */
        assert_int_equal(has_text(&a, "space", "index"), m == 0);
        /* cell (i, j) a uniform 32 x 32 block, its neighbours along x and y of other colours */
        for (unsigned j = 0; j < 8; j++)
            for (unsigned i = 0; i < 16; i++) {
                const unsigned char *c = px(&a, 8 + 32 * i, 30 + 32 * (7 - j));
                for (unsigned y = 0; y < 32; y++)
                    for (unsigned x = 0; x < 32; x++) rgb_is(px(&a, 8 + 32 * i + x, 30 + 32 * (7 - j) + y), c);
                if (i > 0) assert_memory_not_equal(c, px(&a, 8 + 32 * (i - 1), 30 + 32 * (7 - j)), 3);
                if (j > 0) assert_memory_not_equal(c, px(&a, 8 + 32 * i, 30 + 32 * (8 - j)), 3);
            }
        /* the caption: "x -> 16 cells   y ^ 8 cells" (27 characters, 12 pixels each) and, stretched,
           "   (index space)" (16 more): black past the 27th only then, nothing past the 43rd */
        int black_past_27 = 0;
        for (unsigned y = 30 + 256; y < a.h; y++)
            for (unsigned x = 8 + 27 * 12; x < a.w; x++) {
                const unsigned char *q = px(&a, x, y);
                if (!q[0] && !q[1] && !q[2]) {
                    black_past_27 = 1;
                    assert_true(x < 8 + 43 * 12);
                }
            }
        assert_int_equal(black_past_27, m == 0);
        free_picture(&a);
        free(p);
    }
}

static void bad_slice(void **state)
{
    (void)state;
    static const struct { const char *mesh, *out, *msg; } cases[] = {
        {"nx = 4, ny = 4, nz = 4", "slice = w", "e.pde:2:27: error: output slice: the axis is x, y or z, not 'w'\n"
                                               "    output every = 1, slice = w\n                              ^\n1 error\n"},
        {"nx = 4, ny = 4, nz = 4", "slice = z, 2",
         "e.pde:2:30: error: output slice: z = 2 is outside the mesh, which spans 0 to 1 along z\n"
         "    output every = 1, slice = z, 2\n                                 ^\n1 error\n"},
        {"nx = 4, ny = 4, nz = 4, x0 = -1", "slice = x, 0.5, 1",
         "e.pde:2:35: error: output slice takes an axis and at most one position: slice = x, AT\n"
         "    output every = 1, slice = x, 0.5, 1\n                                      ^\n1 error\n"},
        {"nx = 4, ny = 4, nz = 4, x0 = -1", "slice = x, -0.5", NULL},
        {"nx = 4, ny = 4, nz = 4, x0 = -1", "slice = x, -1.5",
         "e.pde:2:30: error: output slice: x = -1.5 is outside the mesh, which spans -1 to 0 along x\n"
         "    output every = 1, slice = x, -1.5\n                                 ^\n1 error\n"},
        {"nx = 4, ny = 4, nz = 4", "slice = 1",
         "e.pde:2:27: error: output slice: the axis is x, y or z (slice = z, or slice = z, 0.5 for the plane "
         "through z = 0.5)\n    output every = 1, slice = 1\n                              ^\n1 error\n"},
        {"nx = 4, ny = 4", "slice = z",
         "e.pde:2:19: error: output slice needs a 3D mesh; this one is 2D, and its pictures show every cell\n"
         "    output every = 1, slice = z\n                      ^\n1 error\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[256], *out;
        snprintf(text, sizeof text, "mesh grid(%s)\noutput every = 1, %s\nfield u = x\neq dt(u) = 1\n"
                                    "time dt = 0.1, until = 1\n", cases[i].mesh, cases[i].out);
        char *p = write_file("e.pde", text);
        int rc = tu_pdejit(&out, "check e.pde");
        if (cases[i].msg) {
            assert_int_equal(rc, 2);
            assert_string_equal(out, cases[i].msg);
        } else assert_int_equal(rc, 0);
        free(out);
        free(p);
    }
}

/* pdejit bench writes a plot only when --plot names it: a run without it leaves no PNG; with it,
 * an 800 x 520 image with a title (black, centred in the top 30 rows), a legend right of the plot
 * naming each measured back end beside its line's colour (cpu blue #1f77b4; one row for one back
 * end, the second row white), and axis labels under and left of the frame. */
static int count_in(const picture *p, unsigned x0, unsigned y0, unsigned x1, unsigned y1, const unsigned char rgb[3])
{
    int n = 0;
    for (unsigned y = y0; y < y1; y++)
        for (unsigned x = x0; x < x1; x++) n += !memcmp(px(p, x, y), rgb, 3);
    return n;
}

static void bench_plot_only_when_asked(void **state)
{
    (void)state;
    char *p = write_file("q.pde", "mesh grid(nx = 8, ny = 8)\nfield u = x\neq dt(u) = 0.01*lap(u)\ntime dt = 0.01\n");
    char *out;
    assert_int_equal(tu_pdejit(&out, "bench q.pde --backends interp,cpu --sizes 8 --steps 2 >/dev/null; "
                                     "echo $(ls -1 | grep -c 'png$')"), 0);
    assert_string_equal(out, "0\n");
    free(out);
    assert_int_equal(tu_pdejit(&out, "bench q.pde --backends interp,cpu --sizes 8,16 --steps 2 --plot two.png"), 0);
    free(out);
    assert_int_equal(tu_pdejit(&out, "bench q.pde --backends cpu --sizes 8,16 --steps 2 --plot one.png"), 0);
    free(out);
    static const unsigned char black[3] = {0, 0, 0}, white[3] = {255, 255, 255}, blue[3] = {31, 119, 180};
    picture two = read_png("two.png"), one = read_png("one.png");
    assert_int_equal(two.w, 800);
    assert_int_equal(two.h, 520);
    assert_true(count_in(&two, 200, 0, 600, 30, black) > 100);        /* the title */
    assert_true(count_in(&two, 0, 26, 200, 44, black) > 50);          /* the y axis's label */
    assert_true(count_in(&two, 200, 520 - 26, 600, 520, black) > 50); /* the x axis's label */
    /* the legend: interp's row then cpu's, each a line and a name */
    assert_true(count_in(&two, 650, 66, 800, 80, black) > 30);
    assert_true(count_in(&two, 650, 90, 800, 104, blue) > 20 && count_in(&two, 650, 90, 800, 104, black) > 20);
    assert_true(count_in(&one, 650, 66, 800, 80, blue) > 20);
    assert_int_equal(count_in(&one, 660, 90, 800, 104, white), 140 * 14); /* right of the frame */
    free_picture(&two);
    free_picture(&one);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(size_and_colour_bar),
        cmocka_unit_test(a_series_shares_its_range),
        cmocka_unit_test(bad_range_and_colormap),
        cmocka_unit_test(slices_of_3d),
        cmocka_unit_test(axes_caption),
        cmocka_unit_test(index_space_on_stretched_meshes),
        cmocka_unit_test(slice_of_a_stretched_axis),
        cmocka_unit_test(bad_slice),
        cmocka_unit_test(bench_plot_only_when_asked),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
