/* llvm_ir_noise.c — rand() and randn() as LLVM IR (llvm_emit_noise, called by llvm_ir.c's module
 * header): @pj.rand(cell, step, stage, site, part, seed), compiler/noise.h's generator written out
 * as integer and IEEE operations in noise.h's order (no fast-math flags, llvm.fma and llvm.sqrt
 * are one rounding each), so the bits are the interpreter's. Always inlined: site and part are
 * constants at each call, so the key folds to a loop invariant (hoisted), the part's branch folds
 * and the per-cell rest (three multiplies of the hash, the polynomials, one sqrt) vectorises. */
#include "llvm_internal.h"
#include "noise.h"

#include <inttypes.h>

/* SplitMix64's finaliser, %o = mix(%i), temporaries named after o. */
static void emit_mix(sbuf *b, const char *o, const char *i)
{
    sb_printf(b, "  %%%s.a = lshr i64 %s, 30\n  %%%s.b = xor i64 %s, %%%s.a\n  %%%s.c = mul i64 %%%s.b, %" PRIu64 "\n"
                 "  %%%s.d = lshr i64 %%%s.c, 27\n  %%%s.e = xor i64 %%%s.c, %%%s.d\n  %%%s.f = mul i64 %%%s.e, %" PRIu64 "\n"
                 "  %%%s.g = lshr i64 %%%s.f, 31\n  %%%s = xor i64 %%%s.f, %%%s.g\n",
              o, i, o, i, o, o, o, (uint64_t)PJ_NOISE_M1, o, o, o, o, o, o, o, (uint64_t)PJ_NOISE_M2, o, o, o, o, o);
}

/* Horner with fma: %NAME0 = poly(x) of degree n >= 1, coefficients c (constant term first). */
static void emit_horner(sbuf *b, const char *name, const char *x, const double *c, int n)
{
    char k[24], p[24];
    llvm_const_text(p, sizeof p, c[n], 0);
    for (int i = n - 1; i >= 0; i--) {
        llvm_const_text(k, sizeof k, c[i], 0);
        sb_printf(b, "  %%%s%d = call double @llvm.fma.f64(double %s, double %s, double %s)\n", name, i, p, x, k);
        snprintf(p, sizeof p, "%%%s%d", name, i);
    }
}

/* The normal number of %w (pj_noise_normal), in double: %z. */
static void emit_normal(sbuf *b)
{
    char ln2[24], sq2[24];
    llvm_const_text(ln2, sizeof ln2, PJ_NOISE_LN2, 0);
    snprintf(sq2, sizeof sq2, "%" PRIu64, (uint64_t)PJ_NOISE_SQRT2_BITS);
    sb_printf(b, "  %%na = lshr i64 %%w, 32\n  %%nv = and i64 %%w, 2147483647\n  %%ns = and i64 %%w, 2147483648\n"
                 "  %%na2 = shl i64 %%na, 1\n  %%na21 = or i64 %%na2, 1\n  %%nd = uitofp i64 %%na21 to double\n"
                 "  %%nbits = bitcast double %%nd to i64\n  %%nex = lshr i64 %%nbits, 52\n  %%ne0 = sub i64 %%nex, 1056\n"
                 "  %%nmm = and i64 %%nbits, 4503599627370495\n  %%nmb0 = or i64 %%nmm, 4607182418800017408\n"
                 "  %%nbig = icmp ugt i64 %%nmb0, %s\n  %%nmb1 = sub i64 %%nmb0, 4503599627370496\n"
                 "  %%nmb = select i1 %%nbig, i64 %%nmb1, i64 %%nmb0\n  %%ne1 = add i64 %%ne0, 1\n"
                 "  %%ne = select i1 %%nbig, i64 %%ne1, i64 %%ne0\n  %%nm = bitcast i64 %%nmb to double\n"
                 "  %%nf = fsub double %%nm, 1.0\n",
              sq2);
    emit_horner(b, "np", "%nf", pj_noise_log_poly, PJ_NOISE_LOG_DEGREE);
    sb_printf(b, "  %%ned = sitofp i64 %%ne to double\n  %%nfp = fmul double %%nf, %%np0\n"
                 "  %%nln = call double @llvm.fma.f64(double %%ned, double %s, double %%nfp)\n"
                 "  %%nm2 = fmul double -2.0, %%nln\n  %%nr = call double @llvm.sqrt.f64(double %%nm2)\n"
                 "  %%nvd = uitofp i64 %%nv to double\n  %%nx = fmul double %%nvd, 0x3E00000000000000\n"
                 "  %%ny = fmul double %%nx, %%nx\n",
              ln2);
    emit_horner(b, "nq", "%ny", pj_noise_sin_poly, PJ_NOISE_SIN_DEGREE);
    sb_printf(b, "  %%nxq = fmul double %%nx, %%nq0\n  %%nz = fmul double %%nr, %%nxq\n  %%nzn = fneg double %%nz\n"
                 "  %%nneg = icmp ne i64 %%ns, 0\n  %%z = select i1 %%nneg, double %%nzn, double %%nz\n");
}

void llvm_emit_noise(gen *g)
{
    sbuf *b = g->b;
    const char *T = g->T;
    const int single = g->opt->single;
    if (single) /* the kernel declares the f32 intrinsics; the generator computes in double */
        sb_printf(b, "declare double @llvm.fma.f64(double, double, double)\ndeclare double @llvm.sqrt.f64(double)\n");
    sb_printf(b, "define internal %s @pj.rand(i64 %%cell, i64 %%step, i32 %%stage, i32 %%site, i32 %%part, i64 %%seed) #6 {\n",
              T);
    sb_printf(b, "  %%s40 = and i64 %%step, 1099511627775\n  %%s24 = shl i64 %%s40, 24\n  %%st = and i32 %%stage, 255\n"
                 "  %%st64 = zext i32 %%st to i64\n  %%st16 = shl i64 %%st64, 16\n  %%si = and i32 %%site, 65535\n"
                 "  %%si64 = zext i32 %%si to i64\n  %%ca = or i64 %%s24, %%st16\n  %%c = or i64 %%ca, %%si64\n"
                 "  %%c1 = add i64 %%c, 1\n  %%cg = mul i64 %%c1, %" PRIu64 "\n",
              (uint64_t)PJ_NOISE_G);
    emit_mix(b, "ms", "%seed");
    sb_printf(b, "  %%kin = add i64 %%ms, %%cg\n");
    emit_mix(b, "key", "%kin");
    sb_printf(b, "  %%cellg = mul i64 %%cell, %" PRIu64 "\n  %%win = xor i64 %%key, %%cellg\n", (uint64_t)PJ_NOISE_G);
    emit_mix(b, "w", "%win");
    sb_printf(b, "  %%isn = icmp eq i32 %%part, %d\n  br i1 %%isn, label %%normal, label %%uniform\nuniform:\n",
              PJ_NOISE_PART_NORMAL);
    if (single)
        sb_printf(b, "  %%w40 = lshr i64 %%w, 40\n  %%uf = uitofp i64 %%w40 to float\n"
                     "  %%u = fmul float %%uf, 0x3E70000000000000\n  ret float %%u\n");
    else
        sb_printf(b, "  %%w11 = lshr i64 %%w, 11\n  %%uf = uitofp i64 %%w11 to double\n"
                     "  %%u = fmul double %%uf, 0x3CA0000000000000\n  ret double %%u\n");
    sb_printf(b, "normal:\n");
    emit_normal(b);
    if (single) sb_printf(b, "  %%zf = fptrunc double %%z to float\n  ret float %%zf\n}\n");
    else sb_printf(b, "  ret double %%z\n}\n");
}
