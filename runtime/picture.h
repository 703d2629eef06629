/* picture.h — what the PNG frames (writers_png) are drawn with: colour maps and a 5x7 pixel font.
 *
 * Colour maps (pj_colormap, compiler/program.h), each a table of evenly spaced stops interpolated
 * linearly in sRGB:
 *     viridis   10 stops of matplotlib's _viridis_data (lib/matplotlib/_cm_listed.py, CC0,
 *               Smith, van der Walt and Firing): dark purple #440154 .. yellow #fde725
 *     magma     9 stops of matplotlib's _magma_data (same file): black #000003 .. cream #fbfcbf
 *     gray      black #000000 .. white #ffffff
 *     coolwarm  9 stops of Moreland's diverging map ("Diverging Color Maps for Scientific
 *               Visualization", 2009, table of 33): blue #3b4cc0 .. grey #dddddd .. red #b40426 */
#ifndef PJ_PICTURE_H
#define PJ_PICTURE_H

/* The colour of s in [0, 1] (clamped; NaN is 0) in map cmap (PJ_CMAP_*). */
void picture_colour(int cmap, double s, unsigned char rgb[3]);

/* Text in a 5x7 font (digits, letters, `. , - + = _ : > ^ ( ) /` and space; `^` an arrow up; anything else as a space), each
 * glyph scale x scale pixels a dot, 6*scale pixels apart. */
int picture_text_width(const char *s, int scale);
/* Draws s into an RGB image of w x h pixels (rows top down), its top left corner at (x, y);
 * what falls outside the image is left out. */
void picture_text(unsigned char *pix, int w, int h, int x, int y, const char *s, int scale, const unsigned char rgb[3]);

#endif
