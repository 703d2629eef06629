# PFHub benchmark 3 (dendritic growth, https://pages.nist.gov/pfhub/benchmarks/benchmark3.ipynb):
# the problem of ../pfhub3.pde (its header explains the equations), solved with bdf2 at 33x the
# explicit step. The anisotropy's angle, atan2(grady(phi), gradx(phi)), has derivative 0 where the
# gradient is zero (in the melt far from the seed it is nearly so), so the Jacobian stays finite.
mesh grid(nx = 60, ny = 60, Lx = 24, Ly = 24)
const D = 10, W0 = 1, tau0 = 1, eps4 = 0.05, lambda = D*tau0/(0.6267*W0^2), r0 = 8
func a(gx, gy) = 1 + eps4*cos(4*atan2(gy, gx))
func da(gx, gy) = -4*eps4*sin(4*atan2(gy, gx))
func Jx(gx, gy) = W0^2*a(gx, gy)*(a(gx, gy)*gx - da(gx, gy)*gy)
func Jy(gx, gy) = W0^2*a(gx, gy)*(a(gx, gy)*gy + da(gx, gy)*gx)
flux J(p) = normal(Jx(gradx(p), grady(p)), Jy(gradx(p), grady(p)))
func tau(p) = tau0*a((p[1, 0] - p[-1, 0])/(2*dx), (p[0, 1] - p[0, -1])/(2*dy))^2
func dphi(p, u) = (div(J(p)) + (p - lambda*u*(1 - p^2))*(1 - p^2))/tau(p)
field phi = -tanh((sqrt(x^2 + y^2) - r0)/sqrt(2)), u = -0.3
eq dt(phi) = dphi(phi, u)
eq dt(u) = D*lap(u) + 0.5*dphi(phi, u)
monitor every = 1, solid = integral((1 + phi)/2)
time dt = 0.1, until = 8, scheme = bdf2
output every = 2, format = png
