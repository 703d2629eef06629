/* writers_vtk.c — the VTK XML writers (writers.h): ImageData (.vti) of a uniform mesh,
 * RectilinearGrid (.vtr) of a mesh with listed or stretched faces, their parallel forms (.pvti,
 * .pvtr) naming the pieces the processes write, and the ParaView series (.pvd). */
#include "writers.h"
#include "writers_afile.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void base64(FILE *f, const unsigned char *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char out[4];
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[0] = tab[v >> 18];
        out[1] = tab[(v >> 12) & 63];
        out[2] = tab[(v >> 6) & 63];
        out[3] = tab[v & 63];
        fwrite(out, 1, 4, f);
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
        out[0] = tab[v >> 18];
        out[1] = tab[(v >> 12) & 63];
        out[2] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        out[3] = '=';
        fwrite(out, 1, 4, f);
    }
}

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

static const char *byte_order(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one ? "LittleEndian" : "BigEndian";
}

/* The end of a (P)CellData start tag: the first field named as the Scalars. */
static void scalars(FILE *f, const writers_frame *fr)
{
    if (fr->n_fields > 0) {
        fprintf(f, " Scalars=\"");
        xml_text(f, fr->names[0]);
        fprintf(f, "\"");
    }
    fprintf(f, ">\n");
}

/* The fields as CellData (base64 binary Float64, UInt64 headers). */
static void cell_data(FILE *f, const writers_frame *fr)
{
    fprintf(f, "      <CellData");
    scalars(f, fr);
    uint64_t bytes = (uint64_t)(fr->n[0] * fr->n[1] * fr->n[2]) * sizeof(double);
    for (int v = 0; v < fr->n_fields; v++) {
        fprintf(f, "        <DataArray type=\"Float64\" Name=\"");
        xml_text(f, fr->names[v]);
        fprintf(f, "\" format=\"binary\">\n          ");
        /* VTK reads the header and the data as two separately encoded base64 blocks */
        base64(f, (const unsigned char *)&bytes, sizeof bytes);
        base64(f, (const unsigned char *)fr->data[v], (size_t)bytes);
        fprintf(f, "\n        </DataArray>\n");
    }
    fprintf(f, "      </CellData>\n");
}

int writers_frame_rectilinear(const writers_frame *fr)
{
    for (int ax = 0; fr->mesh && ax < fr->dim; ax++)
        if (fr->mesh->faces[ax]) return 1;
    return 0;
}

/* The point extent of a block along each axis, "lo hi lo hi lo hi" (0 0 beyond the dimension). */
static void extent(char *out, size_t len, int dim, const int64_t first[3], const int64_t n[3])
{
    long long e[6] = {0};
    for (int ax = 0; ax < dim; ax++) {
        e[2 * ax] = (long long)first[ax];
        e[2 * ax + 1] = (long long)(first[ax] + n[ax]);
    }
    snprintf(out, len, "%lld %lld %lld %lld %lld %lld", e[0], e[1], e[2], e[3], e[4], e[5]);
}

static void xml_head(FILE *f, const char *type)
{
    fprintf(f, "<?xml version=\"1.0\"?>\n<VTKFile type=\"%s\" version=\"1.0\" byte_order=\"%s\" header_type=\"UInt64\">\n",
            type, byte_order());
}

static void time_value(FILE *f, double t)
{
    fprintf(f, "    <FieldData>\n      <DataArray type=\"Float64\" Name=\"TimeValue\" "
               "NumberOfTuples=\"1\" format=\"ascii\">%.17g</DataArray>\n    </FieldData>\n", t);
}

/* VTK XML RectilinearGrid of a mesh with listed faces (or a block of it): the positions of the
 * faces first..first+n along each axis as Coordinates (0 beyond the dimension), the fields as
 * CellData, the time as FieldData. */
static int writers_vtr(const char *path, const writers_frame *fr, char *err, size_t err_len)
{
    afile a;
    if (writers_af_open(&a, path, err, err_len)) return -1;
    FILE *f = a.f;
    char ext[128];
    extent(ext, sizeof ext, fr->dim, fr->first, fr->n);
    xml_head(f, "RectilinearGrid");
    fprintf(f, "  <RectilinearGrid WholeExtent=\"%s\">\n", ext);
    time_value(f, fr->t);
    fprintf(f, "    <Piece Extent=\"%s\">\n", ext);
    cell_data(f, fr);
    fprintf(f, "      <Coordinates>\n");
    for (int ax = 0; ax < 3; ax++) {
        fprintf(f, "        <DataArray type=\"Float64\" Name=\"%c\" format=\"ascii\">", "xyz"[ax]);
        int64_t lo = ax < fr->dim ? fr->first[ax] : 0, hi = ax < fr->dim ? lo + fr->n[ax] : 0;
        for (int64_t j = lo; j <= hi; j++) {
            const double *faces = ax < fr->dim ? fr->mesh->faces[ax] : NULL;
            double v = ax >= fr->dim ? 0 : faces ? faces[j] : fr->origin[ax] + (double)j * fr->h[ax];
            fprintf(f, "%s%.17g", j > lo ? " " : "", v);
        }
        fprintf(f, "</DataArray>\n");
    }
    fprintf(f, "      </Coordinates>\n    </Piece>\n  </RectilinearGrid>\n</VTKFile>\n");
    return writers_af_commit(&a, err, err_len);
}

int writers_vti(const char *path, const writers_frame *fr, char *err, size_t err_len)
{
    afile a;
    if (writers_af_open(&a, path, err, err_len)) return -1;
    FILE *f = a.f;
    char ext[128];
    extent(ext, sizeof ext, fr->dim, fr->first, fr->n);
    double sp[3], org[3];
    for (int ax = 0; ax < 3; ax++) {
        sp[ax] = ax < fr->dim ? fr->h[ax] : 1.0;
        org[ax] = ax < fr->dim ? fr->origin[ax] : 0.0;
    }
    xml_head(f, "ImageData");
    fprintf(f, "  <ImageData WholeExtent=\"%s\" Origin=\"%.17g %.17g %.17g\" Spacing=\"%.17g %.17g %.17g\">\n",
            ext, org[0], org[1], org[2], sp[0], sp[1], sp[2]);
    time_value(f, fr->t);
    fprintf(f, "    <Piece Extent=\"%s\">\n", ext);
    cell_data(f, fr);
    fprintf(f, "    </Piece>\n  </ImageData>\n</VTKFile>\n");
    return writers_af_commit(&a, err, err_len);
}

int writers_vtk(const char *path, const writers_frame *fr, char *err, size_t err_len)
{
    return writers_frame_rectilinear(fr) ? writers_vtr(path, fr, err, err_len) : writers_vti(path, fr, err, err_len);
}

void writers_piece_name(char *out, size_t len, int index, int rank, int rectilinear)
{
    snprintf(out, len, "snapshot_%06d_p%d.%s", index, rank, rectilinear ? "vtr" : "vti");
}

int writers_pvtk(const char *path, const writers_frame *fr, int n_pieces, const int64_t (*first)[3],
                 const int64_t (*n)[3], const char *const *piece_files, char *err, size_t err_len)
{
    afile a;
    if (writers_af_open(&a, path, err, err_len)) return -1;
    FILE *f = a.f;
    int rect = writers_frame_rectilinear(fr);
    const char *type = rect ? "PRectilinearGrid" : "PImageData";
    char ext[128];
    const int64_t zero[3] = {0, 0, 0};
    extent(ext, sizeof ext, fr->dim, zero, fr->n);
    xml_head(f, type);
    fprintf(f, "  <%s WholeExtent=\"%s\" GhostLevel=\"0\"", type, ext);
    if (!rect) {
        double sp[3], org[3];
        for (int ax = 0; ax < 3; ax++) {
            sp[ax] = ax < fr->dim ? fr->h[ax] : 1.0;
            org[ax] = ax < fr->dim ? fr->origin[ax] : 0.0;
        }
        fprintf(f, " Origin=\"%.17g %.17g %.17g\" Spacing=\"%.17g %.17g %.17g\"", org[0], org[1], org[2], sp[0], sp[1],
                sp[2]);
    }
    fprintf(f, ">\n    <PCellData");
    scalars(f, fr);
    for (int v = 0; v < fr->n_fields; v++) {
        fprintf(f, "      <PDataArray type=\"Float64\" Name=\"");
        xml_text(f, fr->names[v]);
        fprintf(f, "\"/>\n");
    }
    fprintf(f, "    </PCellData>\n");
    if (rect)
        fprintf(f, "    <PCoordinates>\n      <PDataArray type=\"Float64\" Name=\"x\"/>\n      <PDataArray type=\"Float64\" "
                   "Name=\"y\"/>\n      <PDataArray type=\"Float64\" Name=\"z\"/>\n    </PCoordinates>\n");
    for (int i = 0; i < n_pieces; i++) {
        extent(ext, sizeof ext, fr->dim, first[i], n[i]);
        fprintf(f, "    <Piece Extent=\"%s\" Source=\"", ext);
        xml_text(f, piece_files[i]);
        fprintf(f, "\"/>\n");
    }
    fprintf(f, "  </%s>\n</VTKFile>\n", type);
    return writers_af_commit(&a, err, err_len);
}

int writers_pvd(const char *path, int n, const double *times, const char *const *files, char *err,
                size_t err_len)
{
    afile a;
    if (writers_af_open(&a, path, err, err_len)) return -1;
    FILE *f = a.f;
    fprintf(f, "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"%s\">\n"
               "  <Collection>\n", byte_order());
    for (int i = 0; i < n; i++) {
        fprintf(f, "    <DataSet timestep=\"%.17g\" group=\"\" part=\"0\" file=\"", times[i]);
        xml_text(f, files[i]);
        fprintf(f, "\"/>\n");
    }
    fprintf(f, "  </Collection>\n</VTKFile>\n");
    return writers_af_commit(&a, err, err_len);
}
