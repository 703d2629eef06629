# PFHub benchmark 1a (spinodal decomposition) to late times: the problem of pfhub1.pde (periodic
# 200 x 200 square, f = rho*(c - ca)^2*(cb - c)^2, mobility M, gradient coefficient kappa), solved
# implicitly. An explicit step must stay below about h^4/(M*kappa*64) = 0.003; bdf2 with adaptive
# steps starts at 0.01 and lets the step grow as the microstructure coarsens (to hundreds at late
# times), so t = 10000 takes a few hundred steps. The free energy F = integral(f + kappa/2
# |grad c|^2) is a monitor (the gradient by central differences, as FiPy's published run
# computes it); `every` caps the step, so it is a const: --set every=0.25 for a fine early curve.
mesh grid(nx = 200, ny = 200, Lx = 200, Ly = 200)
periodic x, y
const rho = 5, ca = 0.3, cb = 0.7, kappa = 2, M = 5, c0 = 0.5, eps = 0.01, every = 100
func f(c) = rho*(c - ca)^2*(cb - c)^2
func dfdc(c) = 2*rho*(c - ca)*(cb - c)*(ca + cb - 2*c)
field c = c0 + eps*(cos(0.105*x)*cos(0.11*y) + (cos(0.13*x)*cos(0.087*y))^2 +
                    cos(0.025*x - 0.15*y)*cos(0.07*x - 0.02*y))
eq dt(c) = M*lap(dfdc(c) - kappa*lap(c))
monitor every = every, energy = integral(f(c) + kappa/2*(((c[1, 0] - c[-1, 0])/(2*dx))^2 +
                                                         ((c[0, 1] - c[0, -1])/(2*dy))^2)),
        mass = mean(c), cmax = maxval(c), cmin = minval(c)
time dt = 0.01, until = 10000, scheme = bdf2, adapt = 1e-4
output every = 1000, format = csv png
