# PFHub benchmark 2b (https://pages.nist.gov/pfhub/benchmarks/benchmark2.ipynb; Jokisaari et al.,
# Comput. Mater. Sci. 126 (2017) 139): benchmark 2a (pfhub2.pde: c and four order parameters)
# on the same 200 x 200 square with no-flux sides, written from its free energy: pdejit derives
# the chemical potential delta(F, c) and the driving forces delta(F, eta[i]), and integral(F) is
# the energy the benchmark reports (its discrete form, which the flow never raises).
# On a 100 x 100 grid (h = 2) to t = 50 of the benchmark's 1e6 (tests/test_pfhub2.c).
mesh grid(nx = 100, ny = 100, Lx = 200, Ly = 200)
param rho = sqrt(2), ca = 0.3, cb = 0.7, kc = 3, ke = 3, M = 5, L = 5, w = 1, alpha = 5
param c0 = 0.5, eps = 0.05, epse = 0.1, psi = 1.5
const N = 4
func h(e) = e^3*(6*e^2 - 15*e + 10)
field c = c0 + eps*(cos(0.105*x)*cos(0.11*y) + (cos(0.13*x)*cos(0.087*y))^2 + cos(0.025*x - 0.15*y)*cos(0.07*x - 0.02*y))
field eta[N] = epse*(cos(0.01*i*x - 4)*cos((0.007 + 0.01*i)*y) + cos((0.11 + 0.01*i)*x)*cos((0.11 + 0.01*i)*y) +
                     psi*(cos((0.046 + 0.001*i)*x + (0.0405 + 0.001*i)*y)*cos((0.031 + 0.001*i)*x - (0.004 + 0.001*i)*y))^2)^2
energy F = rho^2*((c - ca)^2*(1 - sum(j, h(eta[j]))) + (cb - c)^2*sum(j, h(eta[j]))) + kc/2*grad2(c) +
           w*(sum(j, eta[j]^2*(1 - eta[j])^2) + alpha*(sum(j, eta[j]^2)^2 - sum(j, eta[j]^4))) + ke/2*sum(j, grad2(eta[j]))
eq dt(c) = M*lap(delta(F, c))
eq dt(eta[i]) = -L*delta(F, eta[i])
time dt = 0.005, until = 50, scheme = rk2
monitor every = 10, energy = integral(F), mass = mean(c)
output every = 50, format = png
