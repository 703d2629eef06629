# PFHub benchmark 1 (spinodal decomposition), variant a: Cahn-Hilliard on a periodic 200 x 200
# square, f = rho*(c - ca)^2*(cb - c)^2, mobility M, gradient coefficient kappa. The free energy
# F = integral(f + kappa/2 |grad c|^2) is a monitor: it must decrease. The benchmark runs to
# t = 10000 or later; explicitly (dt ~ h^4) that is millions of steps, so this file stops at
# t = 200 (pdejit run pfhub1.pde --until T for more); implicit/pfhub1.pde goes to t = 10000 with
# bdf2 and adaptive steps (tests/test_pfhub1.c compares both with FiPy's published curve).
mesh grid(nx = 200, ny = 200, Lx = 200, Ly = 200)
periodic x, y
const rho = 5, ca = 0.3, cb = 0.7, kappa = 2, M = 5, c0 = 0.5, eps = 0.01
func f(c) = rho*(c - ca)^2*(cb - c)^2
func dfdc(c) = 2*rho*(c - ca)*(cb - c)*(ca + cb - 2*c)
field c = c0 + eps*(cos(0.105*x)*cos(0.11*y) + (cos(0.13*x)*cos(0.087*y))^2 +
                    cos(0.025*x - 0.15*y)*cos(0.07*x - 0.02*y))
eq dt(c) = M*lap(dfdc(c) - kappa*lap(c))
monitor every = 10, energy = integral(f(c) + kappa/2*(((c[1, 0] - c[-1, 0])/(2*dx))^2 +
                                                      ((c[0, 1] - c[0, -1])/(2*dy))^2)),
        mass = mean(c), cmax = maxval(c), cmin = minval(c)
time dt = 0.0025, until = 200
output every = 50, format = csv png
