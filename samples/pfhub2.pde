# PFHub benchmark 2a (spinodal decomposition and Ostwald ripening: c and four order parameters, periodic),
# https://pages.nist.gov/pfhub/benchmarks/benchmark2.ipynb (Jokisaari et al., Comput. Mater. Sci. 126 (2017) 139).
# f = fa(c)(1 - h) + fb(c) h + w g, fa = rho^2 (c - ca)^2, fb = rho^2 (cb - c)^2, h = sum_i eta_i^3 (6 eta_i^2 - 15 eta_i + 10),
# g = sum_i eta_i^2 (1 - eta_i)^2 + alpha sum_i sum_{j != i} eta_i^2 eta_j^2 = ... + alpha ((sum eta^2)^2 - sum eta^4);
# dt(c) = div(M grad(df/dc - kc lap(c))), dt(eta_i) = -L (df/deta_i - ke lap(eta_i)), the derivatives by hand:
# df/dc = 2 rho^2 ((c - ca)(1 - h) - (cb - c) h), df/deta_i = (fb - fa) 30 eta_i^2 (eta_i - 1)^2 + w dg/deta_i,
# dg/deta_i = 2 eta_i (1 - eta_i)(1 - 2 eta_i) + 4 alpha eta_i (sum_j eta_j^2 - eta_i^2).
# The benchmark's 200 x 200 domain and initial condition on a 100 x 100 grid (h = 2), to t = 50 of its 1e6.
mesh grid(nx = 100, ny = 100, Lx = 200, Ly = 200)
param rho = sqrt(2), ca = 0.3, cb = 0.7, kc = 3, ke = 3, M = 5, L = 5, w = 1, alpha = 5
param c0 = 0.5, eps = 0.05, epse = 0.1, psi = 1.5
const N = 4
func h(e) = e^3*(6*e^2 - 15*e + 10)
func g2(u) = ((u[1, 0] - u[-1, 0])^2 + (u[0, 1] - u[0, -1])^2)/(4*dx^2)
field c = c0 + eps*(cos(0.105*x)*cos(0.11*y) + (cos(0.13*x)*cos(0.087*y))^2 + cos(0.025*x - 0.15*y)*cos(0.07*x - 0.02*y))
field eta[N] = epse*(cos(0.01*i*x - 4)*cos((0.007 + 0.01*i)*y) + cos((0.11 + 0.01*i)*x)*cos((0.11 + 0.01*i)*y) +
                     psi*(cos((0.046 + 0.001*i)*x + (0.0405 + 0.001*i)*y)*cos((0.031 + 0.001*i)*x - (0.004 + 0.001*i)*y))^2)^2
eq dt(c) = M*lap(2*rho^2*((c - ca)*(1 - sum(j, h(eta[j]))) - (cb - c)*sum(j, h(eta[j]))) - kc*lap(c))
eq dt(eta[i]) = -L*(rho^2*((cb - c)^2 - (c - ca)^2)*30*eta[i]^2*(eta[i] - 1)^2 - ke*lap(eta[i]) +
                    w*(2*eta[i]*(1 - eta[i])*(1 - 2*eta[i]) + 4*alpha*eta[i]*(sum(j, eta[j]^2) - eta[i]^2)))
periodic x, y
time dt = 0.005, until = 50, scheme = rk2
monitor every = 10, F = integral(rho^2*((c - ca)^2*(1 - sum(j, h(eta[j]))) + (cb - c)^2*sum(j, h(eta[j]))) + kc/2*g2(c) +
                               w*(sum(j, eta[j]^2*(1 - eta[j])^2) + alpha*(sum(j, eta[j]^2)^2 - sum(j, eta[j]^4))) + ke/2*sum(j, g2(eta[j])))
output every = 50, format = png
