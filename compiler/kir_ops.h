/* kir_ops.h — the one table of kernel-IR operations (QBE's ops.h).
 *
 * X(NAME, "text", arity, result type, libm, user name, derivative) — the enum, the printer, the
 * arity and type checks, the interpreter, the constant evaluator, the LLVM lowering (with its
 * vector-library calls), the CUDA printer, the function names the language accepts and the
 * derivative pass are all driven from this list: a math function of libm is one line here, and
 * no other code to edit (tests/test_libm.c checks the line against the C library; test_derive.c
 * asks for test points of a new differentiable op). Operations that are not libm functions
 * (arithmetic, comparisons, select) have their semantics written in kir_eval_scalar() and each
 * back end.
 *
 * libm: the C library function an op is, in both precisions, and how the LLVM back end calls it
 * (the columns each reader takes apart: kir.c's op table and kir_eval_scalar, interp.c's loops):
 *     L0                      not a libm function
 *     L1(double fn, float fn, how), L2(...), L3(...)   a function of 1, 2 or 3 arguments (the
 *                             arity column), e.g. L1(exp, expf, LIBMVEC | BUILTIN)
 *     how (KIR_LIBM_* in kir.h):
 *       INTRINSIC   an LLVM intrinsic of the same name (llvm.fabs.f64 ...): exact, no call
 *       CALL        a libm call (exp or expf), libm's bits lane by lane
 *       LIBMVEC     glibc's vector math library has its variants (_ZGVeN8v_exp ...), which
 *                   --fast-math kernels call where libmvec is present (llvm_backend.c)
 *       BUILTIN     LLVM knows the function and may widen it itself under --fast-math
 *     The CUDA printer calls the double or float function by name (CUDA's math library has both).
 *
 * user name: the function a problem calls it by (with `arity` arguments: sema accepts it, lower
 * builds the op), or 0 for internal operations. Functions the lowering expands into several ops
 * (min, max, sign, heaviside, small integer powers of pow) are special-cased before this table.
 *
 * derivative (read by compiler/derive.c only; inert everywhere else), in terms of the operands
 * A, B and the result R, built with NUM(value), OP1(OP, x), OP2(OP, x, y), OP3(OP, x, y, z):
 *     D0          zero: a leaf other than a load, or piecewise constant (booleans, floor, ceil)
 *     DV          the independent variable: a load (1 for the load differentiated, else 0)
 *     DS          select: d(c ? a : b) = c ? da : db (piecewise; the condition is not differentiated)
 *     D1(p)       d = p * dA                       (each partial built only when its dA is nonzero)
 *     D2(p, q)    d = p * dA + q * dB
 *     DF          fused multiply-add: d(A*B + C) = B * dA + A * dB + dC
 * Where the classical derivative is infinite or undefined at a point a Jacobian meets in practice
 * (abs(0), sqrt(0), atan2(0, 0): a zero gradient), the rule gives 0 there, never Inf or NaN
 * (contract section 9; a select, so that the other side's Inf is never multiplied in).
 *
 * Semantics are C's, in the kernel's precision (double, or float with --precision single):
 * comparisons are C comparisons (every one false with a NaN operand except NE, which is true),
 * AND/OR/NOT act on booleans and evaluate both sides, SELECT picks without branching,
 * math functions are libm's (exp or expf...). The lowering expands min, max, sign, heaviside
 * and small integer powers into these, so back ends never see them. The order of the lines is
 * the op numbering, which the canonical kernel hash (and so every cache key) depends on: new
 * operations go at the end. */
#ifndef PJ_KIR_OPS_H
#define PJ_KIR_OPS_H

/* type letters: F = floating point of the kernel's precision, B = boolean */
#define KIR_OPS(X)                                                                                           \
    /* leaves */                                                                                             \
    X(CONST, "const", 0, F, L0, 0, D0)     /* value */                                                       \
    X(PARAM, "param", 0, F, L0, 0, D0)     /* index: runtime parameter number */                             \
    X(TIME, "t", 0, F, L0, 0, D0)          /* the stage's time */                                            \
    X(DT, "dt", 0, F, L0, 0, D0)           /* the time step */                                               \
    X(SPACING, "h", 0, F, L0, 0, D0)       /* axis: cell size along it */                                    \
    X(COORD, "coord", 0, F, L0, 0, D0)     /* axis, half: origin + (i + 1/2 + half/2) * h */                 \
    X(LOAD, "load", 0, F, L0, 0, DV)       /* slot, index (field), off[3]: cell value */                     \
    /* arithmetic */                                                                                         \
    X(NEG, "neg", 1, F, L0, 0, D1(NUM(-1)))                                                                  \
    X(ADD, "add", 2, F, L0, 0, D2(NUM(1), NUM(1)))                                                           \
    X(SUB, "sub", 2, F, L0, 0, D2(NUM(1), NUM(-1)))                                                          \
    X(MUL, "mul", 2, F, L0, 0, D2(B, A))                                                                     \
    X(DIV, "div", 2, F, L0, 0, D2(OP2(DIV, NUM(1), B), OP1(NEG, OP2(DIV, R, B))))                            \
    /* comparisons and logic */                                                                              \
    X(LT, "lt", 2, B, L0, 0, D0)                                                                             \
    X(LE, "le", 2, B, L0, 0, D0)                                                                             \
    X(GT, "gt", 2, B, L0, 0, D0)                                                                             \
    X(GE, "ge", 2, B, L0, 0, D0)                                                                             \
    X(EQ, "eq", 2, B, L0, 0, D0)                                                                             \
    X(NE, "ne", 2, B, L0, 0, D0)                                                                             \
    X(AND, "and", 2, B, L0, 0, D0)         /* operands B */                                                  \
    X(OR, "or", 2, B, L0, 0, D0)           /* operands B */                                                  \
    X(NOT, "not", 1, B, L0, 0, D0)         /* operand B */                                                   \
    X(SELECT, "select", 3, F, L0, 0, DS)   /* arg0 B ? arg1 : arg2 */                                        \
    X(B2F, "b2f", 1, F, L0, 0, D0)         /* true → 1, false → 0 */                                         \
    X(F2B, "f2b", 1, B, L0, 0, D0)         /* x != 0 */                                                      \
    /* math: libm, in the kernel's precision */                                                              \
    X(ABS, "abs", 1, F, L1(fabs, fabsf, INTRINSIC), "abs", /* sign(a), 0 at 0 */                             \
      D1(OP3(SELECT, OP2(GT, A, NUM(0)), NUM(1), OP3(SELECT, OP2(LT, A, NUM(0)), NUM(-1), NUM(0)))))         \
    X(SQRT, "sqrt", 1, F, L1(sqrt, sqrtf, INTRINSIC), "sqrt", /* 0.5 / r, 0 at 0 (never Inf) */             \
      D1(OP3(SELECT, OP2(GT, R, NUM(0)), OP2(DIV, NUM(0.5), R), NUM(0))))                                    \
    X(FLOOR, "floor", 1, F, L1(floor, floorf, INTRINSIC), "floor", D0)                                       \
    X(CEIL, "ceil", 1, F, L1(ceil, ceilf, INTRINSIC), "ceil", D0)                                            \
    X(EXP, "exp", 1, F, L1(exp, expf, LIBMVEC | BUILTIN), "exp", D1(R))                                      \
    X(LOG, "log", 1, F, L1(log, logf, LIBMVEC | BUILTIN), "log", D1(OP2(DIV, NUM(1), A)))                    \
    X(LOG10, "log10", 1, F, L1(log10, log10f, LIBMVEC | BUILTIN), "log10", /* log10(e) / a */                \
      D1(OP2(DIV, NUM(0.43429448190325182765), A)))                                                          \
    X(CBRT, "cbrt", 1, F, L1(cbrt, cbrtf, LIBMVEC), "cbrt",                                                  \
      D1(OP2(DIV, NUM(1), OP2(MUL, NUM(3), OP2(MUL, R, R)))))                                                \
    X(SIN, "sin", 1, F, L1(sin, sinf, LIBMVEC | BUILTIN), "sin", D1(OP1(COS, A)))                            \
    X(COS, "cos", 1, F, L1(cos, cosf, LIBMVEC | BUILTIN), "cos", D1(OP1(NEG, OP1(SIN, A))))                  \
    X(TAN, "tan", 1, F, L1(tan, tanf, LIBMVEC), "tan", D1(OP2(ADD, NUM(1), OP2(MUL, R, R))))                 \
    X(ASIN, "asin", 1, F, L1(asin, asinf, LIBMVEC), "asin",                                                  \
      D1(OP2(DIV, NUM(1), OP1(SQRT, OP2(SUB, NUM(1), OP2(MUL, A, A))))))                                     \
    X(ACOS, "acos", 1, F, L1(acos, acosf, LIBMVEC), "acos",                                                  \
      D1(OP2(DIV, NUM(-1), OP1(SQRT, OP2(SUB, NUM(1), OP2(MUL, A, A))))))                                    \
    X(ATAN, "atan", 1, F, L1(atan, atanf, LIBMVEC), "atan",                                                  \
      D1(OP2(DIV, NUM(1), OP2(ADD, NUM(1), OP2(MUL, A, A)))))                                                \
    X(SINH, "sinh", 1, F, L1(sinh, sinhf, LIBMVEC), "sinh", D1(OP1(COSH, A)))                                \
    X(COSH, "cosh", 1, F, L1(cosh, coshf, LIBMVEC), "cosh", D1(OP1(SINH, A)))                                \
    X(TANH, "tanh", 1, F, L1(tanh, tanhf, LIBMVEC), "tanh", D1(OP2(SUB, NUM(1), OP2(MUL, R, R))))            \
    X(ERF, "erf", 1, F, L1(erf, erff, LIBMVEC), "erf", /* 2/sqrt(pi) exp(-a^2) */                            \
      D1(OP2(MUL, NUM(1.1283791670955125739), OP1(EXP, OP1(NEG, OP2(MUL, A, A))))))                          \
    X(ERFC, "erfc", 1, F, L1(erfc, erfcf, LIBMVEC), "erfc",                                                  \
      D1(OP2(MUL, NUM(-1.1283791670955125739), OP1(EXP, OP1(NEG, OP2(MUL, A, A))))))                         \
    X(POW, "pow", 2, F, L2(pow, powf, LIBMVEC | BUILTIN), "pow", /* the log term only where dB is nonzero */ \
      D2(OP2(MUL, B, OP2(POW, A, OP2(SUB, B, NUM(1)))), OP2(MUL, R, OP1(LOG, A))))                           \
    X(ATAN2, "atan2", 2, F, L2(atan2, atan2f, LIBMVEC), "atan2", /* (B dA - A dB) / (A^2 + B^2), 0 where */  \
      D2(OP3(SELECT, OP2(GT, OP2(ADD, OP2(MUL, A, A), OP2(MUL, B, B)), NUM(0)), /* A^2 + B^2 is 0 */        \
             OP2(DIV, B, OP2(ADD, OP2(MUL, A, A), OP2(MUL, B, B))), NUM(0)),                                 \
         OP3(SELECT, OP2(GT, OP2(ADD, OP2(MUL, A, A), OP2(MUL, B, B)), NUM(0)),                              \
             OP2(DIV, OP1(NEG, A), OP2(ADD, OP2(MUL, A, A), OP2(MUL, B, B))), NUM(0))))                      \
    /* noise (compiler/noise.h): of (seed; cell at off[3], step, stage, call site `index`), `axis` 0:         \
       rand(), uniform in [0, 1); 2: randn(), standard normal (Box-Muller inside the op) */                  \
    X(RAND, "rand", 0, F, L0, 0, D0)                                                                         \
    /* `boundary` on a face: 1 when the face between the cells at off[axis] and off[axis] + 1 along          \
       `axis` is a side of the mesh (the cell index i + off is -1 or n - 1), else 0 */                       \
    X(EDGE, "edge", 0, F, L0, 0, D0)                                                                         \
    /* a * b + c rounded once (C's fma): made by kir_finish from the sum of a product nobody else            \
       uses, never by the language; every back end computes it exactly (llvm.fma, CUDA fma) */               \
    X(FMA, "fma", 3, F, L3(fma, fmaf, INTRINSIC), 0, DF)                                                     \
    /* a metric table of a non-uniform or curvilinear axis (kir.h, kir_metric): table `index` of             \
       `axis` at the mesh index of the cell + off[axis] (a face j is the low face of cell j) */             \
    X(METRIC, "metric", 0, F, L0, 0, D0)

#endif
