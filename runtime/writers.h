/* writers.h — output files: CSV dumps and snapshots, VTK XML (.vti/.vtr + .pvd), PNG.
 *
 * Every writer works on a frame (a grid and some fields' interior values as doubles, x
 * fastest), writes into a temporary file in the target's folder and renames it into place,
 * so an interrupted run never leaves a truncated file. Errors are returned (-1, with the path
 * and errno's text in err), never printed.
 *
 * Snapshot series (`--out DIR`), snapshot number N = 0, 1, 2 ... (6 digits):
 *     DIR/snapshot_00000N.csv     all fields of the frame, the --dump format     (PJ_FMT_CSV)
 *     DIR/snapshot_00000N.vti     VTK ImageData, CellData, base64 binary Float64 (PJ_FMT_VTK);
 *                                 .vtr (RectilinearGrid, the faces as Coordinates) for a mesh
 *                                 with stretched or listed widths (compiler/mesh.c)
 *     DIR/snapshots.pvd           the ParaView series of the .vti files           (PJ_FMT_VTK)
 *     DIR/snapshot_00000N.pvti    over MPI instead of the .vti: a parallel ImageData whose pieces
 *     DIR/snapshot_00000N_pR.vti  are the blocks of the processes (R: the rank); .pvtr and
 *                                 _pR.vtr (parallel RectilinearGrid) instead of a .vtr
 *     DIR/FIELD_00000N.png        one colour-mapped image per field               (PJ_FMT_PNG)
 *     DIR/snapshots.csv           index: `snapshot,t` then one row per snapshot   (always)
 * The index and .pvd are rewritten (atomically) after every snapshot. */
#ifndef PJ_WRITERS_H
#define PJ_WRITERS_H
#include <stddef.h>
#include <stdint.h>
#include "state.h"

typedef struct writers_frame {
    int dim;
    int64_t n[3];                /* cells per axis; 1 beyond dim */
    double h[3], origin[3];      /* spacing and lower corner */
    double t;
    int n_fields;
    const char *const *names;    /* n_fields names */
    const double *const *data;   /* n_fields arrays of n[0]*n[1]*n[2] values, x fastest */
    int64_t first[3];            /* a block of a larger mesh (a piece of a parallel VTK snapshot):
                                    the mesh index of its cell 0; zero for a whole mesh */
    const pj_program *mesh;      /* the problem whose mesh this is: the centres of a non-uniform
                                    axis, the names r, z of a curvilinear one (NULL: h, origin) */
} writers_frame;

/* Copies field f's interior values (x fastest) into out; 0, or -1 with a message. */
typedef int (*writers_field_fn)(void *obj, int field, double *out, char *err, size_t err_len);
/* A frame of fields[0..n_fields) (all fields when fields is NULL) of any simulation: the grid
 * from p and L (n, h, origin), the values through get. */
int writers_frame_build(writers_frame *fr, const pj_program *p, const kir_launch *L, double t, const int *fields,
                        int n_fields, writers_field_fn get, void *obj, char *err, size_t err_len);
void writers_frame_free(writers_frame *fr);

/* CSV: header `x[,y[,z]],name...`, then one row per cell (x fastest, then y, then z): cell
 * centre coordinates and values, each printed with %.17g. */
int writers_csv(const char *path, const writers_frame *fr, char *err, size_t err_len);

/* VTK XML ImageData with every field as CellData (Float64, base64 binary, UInt64 headers),
 * the time as FieldData TimeValue. Point extent first..first+n along each axis of the dimension
 * (0..n for a whole mesh). */
int writers_vti(const char *path, const writers_frame *fr, char *err, size_t err_len);
/* Whether fr's mesh has listed or stretched faces along an axis (compiler/mesh.c): its VTK files
 * are then RectilinearGrid (.vtr, .pvtr) with the real face positions, else ImageData. */
int writers_frame_rectilinear(const writers_frame *fr);
/* The VTK file of fr (a whole mesh, or a block of it: fr->first): writers_vti, or for a
 * rectilinear frame a RectilinearGrid (.vtr) with the same extents and CellData and the
 * positions of the block's faces first..first+n as Coordinates x, y, z (0 beyond the dimension). */
int writers_vtk(const char *path, const writers_frame *fr, char *err, size_t err_len);

/* A parallel snapshot of a mesh in n_pieces blocks, piece i written as writers_vtk of its block
 * into piece_files[i] (relative to this file): PImageData (.pvti) with the mesh's origin and
 * spacing, or for a rectilinear frame PRectilinearGrid (.pvtr) with PCoordinates x, y, z (the
 * pieces hold them). fr gives the mesh's n, h, origin, faces and field names (its data is not
 * read); first and n each piece's block, written as its Extent. */
int writers_pvtk(const char *path, const writers_frame *fr, int n_pieces, const int64_t (*first)[3],
                 const int64_t (*n)[3], const char *const *piece_files, char *err, size_t err_len);
/* "snapshot_000012_p3.vti" (".vtr" when rectilinear): piece `rank` of snapshot `index`. */
void writers_piece_name(char *out, size_t len, int index, int rank, int rectilinear);

/* A ParaView .pvd collection: n entries of (time, file name relative to the .pvd). */
int writers_pvd(const char *path, int n, const double *times, const char *const *files, char *err,
                size_t err_len);

/* How the PNG frames are drawn: a colour map (pj_colormap, runtime/picture.h) and a fixed scale
 * lo < hi (fixed), else each frame's min..max of the field's finite values; a 3D field's plane:
 * slice 1 + the axis it cuts across (x 0, y 1, z 2) at cell slice_index along it, 0 the middle
 * plane across z. */
typedef struct writers_png_style {
    int colormap;
    int fixed;
    double lo, hi;
    int slice;
    int64_t slice_index;
} writers_png_style;

/* An 8-bit RGB PNG of field f of fr (style NULL: viridis, the frame's min..max). Layout, on white:
 *   - a header line at the top left: the field's name and `t = T` (5x7 font, 2 pixels a dot);
 *   - below it the field, nearest-neighbour scaled by the integer factor that makes the longer
 *     side at least 512 pixels (1 from 512 cells on), y up (the top row is the top row of cells);
 *     1D: the cells as columns of a band 1/6 as high as long (at most 128 pixels, and at most
 *     2^24 pixels in all but 8 rows); 3D: the plane the style's slice says, across z (x across,
 *     y up), y (x, z) or x (y, z), its place ("z = 0.5 (k = 8)", the cell centre) in the header;
 *     non-finite values grey (128, 128, 128), values outside the scale the map's ends;
 *   - 8 pixels to its right the colour bar, 24 pixels wide and as high as the field, the map's
 *     top (hi) in its top row and its bottom (lo) in its bottom row, with hi and lo written beside
 *     its two ends;
 *   - under the field, the axes drawn and their cells ("x -> 48 cells   y ^ 32 cells"), and on a
 *     mesh with listed or stretched widths (writers_frame_rectilinear) "   (index space)" after it.
 * tEXt chunks: field, t, range (`LO,HI`), colormap; and space = index on such a mesh. */
int writers_png(const char *path, const writers_frame *fr, int f, const writers_png_style *style, char *err,
                size_t err_len);

/* Opens the regular file at path for reading ("r"): the open does not block (O_NONBLOCK: a FIFO
 * or a device named in its place is not waited for) and anything but a regular file is refused.
 * NULL with the reason in err ("not a regular file", or errno's text), without the path. */
FILE *writers_open_regular(const char *path, char *err, size_t err_len);

/* Creates a folder and its parents (mkdir -p); 0 when it exists. */
int writers_mkdirs(const char *path, char *err, size_t err_len);

/* Whether a file can be written at path as the writers write it (a temporary file beside it,
 * or through it when it exists and is not a regular file): 0, or -1 with errno's text in err
 * ("No such file or directory"). Nothing is left behind. */
int writers_check_writable(const char *path, char *err, size_t err_len);
/* Removes from folder dir (which must exist) the regular files a series writes, and only those:
 * snapshot_NNNNNN.csv/.vti/.vtr/.pvti/.pvtr, snapshot_NNNNNN_pR.vti/.vtr, FIELD_NNNNNN.png (6 or more digits), snapshots.csv, snapshots.pvd;
 * then checks that the folder takes a new file. How many were removed, or -1 with errno's text
 * in err. */
int writers_series_clean(const char *dir, char *err, size_t err_len);

/* The snapshot series of one run in folder dir (created when missing). formats: PJ_FMT_* bits. */
typedef struct writers_series writers_series;
writers_series *writers_series_open(const char *dir, int formats, char *err, size_t err_len);
/* VTK snapshots of a mesh in blocks: the series writes snapshot_N.pvti (.pvtr) naming the pieces
 * snapshot_N_pR.vti (.vtr) (one per block, written by whoever holds it: writers_piece_name)
 * instead of snapshot_N.vti (.vtr), and the .pvd lists the .pvti (.pvtr) files. first and n: n_pieces blocks (copied). */
int writers_series_set_pieces(writers_series *ws, int n_pieces, const int64_t (*first)[3], const int64_t (*n)[3]);
/* The PNG frames' style (default: zero, viridis on each frame's own min..max); copied. */
void writers_series_set_png(writers_series *ws, const writers_png_style *style);
/* Writes snapshot number writers_series_count() of fr and updates the index files. */
int writers_series_write(writers_series *ws, const writers_frame *fr, char *err, size_t err_len);
int writers_series_count(const writers_series *ws);
/* A resumed run (checkpoint.h): takes over the series dir/snapshots.csv lists, up to the first
 * snapshot at or after t_max, the checkpoint's time (those the stopped run wrote from then on,
 * perhaps half, are written again), so the numbering and the index go on. No index: the series
 * starts empty. 0, or -1 (out of memory). */
int writers_series_resume(writers_series *ws, double t_max, char *err, size_t err_len);
void writers_series_close(writers_series *ws);

#endif
