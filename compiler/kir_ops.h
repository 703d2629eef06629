/* kir_ops.h — the one table of kernel-IR operations (QBE's ops.h).
 *
 * X(NAME, "text", arity, result type, C function) — the enum, the printer, the arity and type
 * checks, the interpreter, the LLVM lowering and the CUDA printer are all driven from this
 * list, so adding an operation is one line here plus its semantics in kir_eval_scalar().
 *
 * Semantics are C's, in the kernel's precision (double, or float with --precision single):
 * comparisons are C comparisons (every one false with a NaN operand except NE, which is true),
 * AND/OR/NOT act on booleans and evaluate both sides, SELECT picks without branching,
 * math functions are libm's (exp or expf...). The lowering expands min, max, sign, heaviside
 * and small integer powers into these, so back ends never see them. */
#ifndef PJ_KIR_OPS_H
#define PJ_KIR_OPS_H

/* type letters: F = floating point of the kernel's precision, B = boolean */
#define KIR_OPS(X)                                                                   \
    /* leaves */                                                                     \
    X(CONST, "const", 0, F, 0)   /* value */                                         \
    X(PARAM, "param", 0, F, 0)   /* index: runtime parameter number */               \
    X(TIME, "t", 0, F, 0)        /* the stage's time */                              \
    X(DT, "dt", 0, F, 0)         /* the time step */                                 \
    X(SPACING, "h", 0, F, 0)     /* axis: cell size along it */                      \
    X(COORD, "coord", 0, F, 0)   /* axis, half: origin + (i + 1/2 + half/2) * h */   \
    X(LOAD, "load", 0, F, 0)     /* slot, index (field), off[3]: cell value */       \
    /* arithmetic */                                                                 \
    X(NEG, "neg", 1, F, 0)                                                           \
    X(ADD, "add", 2, F, 0)                                                           \
    X(SUB, "sub", 2, F, 0)                                                           \
    X(MUL, "mul", 2, F, 0)                                                           \
    X(DIV, "div", 2, F, 0)                                                           \
    /* comparisons and logic */                                                      \
    X(LT, "lt", 2, B, 0)                                                             \
    X(LE, "le", 2, B, 0)                                                             \
    X(GT, "gt", 2, B, 0)                                                             \
    X(GE, "ge", 2, B, 0)                                                             \
    X(EQ, "eq", 2, B, 0)                                                             \
    X(NE, "ne", 2, B, 0)                                                             \
    X(AND, "and", 2, B, 0)       /* operands B */                                    \
    X(OR, "or", 2, B, 0)         /* operands B */                                    \
    X(NOT, "not", 1, B, 0)       /* operand B */                                     \
    X(SELECT, "select", 3, F, 0) /* arg0 B ? arg1 : arg2 */                          \
    X(B2F, "b2f", 1, F, 0)       /* true → 1, false → 0 */                           \
    X(F2B, "f2b", 1, B, 0)       /* x != 0 */                                        \
    /* math: libm, in the kernel's precision */                                      \
    X(ABS, "abs", 1, F, "fabs")                                                      \
    X(SQRT, "sqrt", 1, F, "sqrt")                                                    \
    X(FLOOR, "floor", 1, F, "floor")                                                 \
    X(CEIL, "ceil", 1, F, "ceil")                                                    \
    X(EXP, "exp", 1, F, "exp")                                                       \
    X(LOG, "log", 1, F, "log")                                                       \
    X(LOG10, "log10", 1, F, "log10")                                                 \
    X(CBRT, "cbrt", 1, F, "cbrt")                                                    \
    X(SIN, "sin", 1, F, "sin")                                                       \
    X(COS, "cos", 1, F, "cos")                                                       \
    X(TAN, "tan", 1, F, "tan")                                                       \
    X(ASIN, "asin", 1, F, "asin")                                                    \
    X(ACOS, "acos", 1, F, "acos")                                                    \
    X(ATAN, "atan", 1, F, "atan")                                                    \
    X(SINH, "sinh", 1, F, "sinh")                                                    \
    X(COSH, "cosh", 1, F, "cosh")                                                    \
    X(TANH, "tanh", 1, F, "tanh")                                                    \
    X(ERF, "erf", 1, F, "erf")                                                       \
    X(ERFC, "erfc", 1, F, "erfc")                                                    \
    X(POW, "pow", 2, F, "pow")                                                       \
    X(ATAN2, "atan2", 2, F, "atan2")

#endif
