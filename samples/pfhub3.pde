# PFHub benchmark 3, dendritic growth (https://pages.nist.gov/pfhub/benchmarks/benchmark3.ipynb):
# tau(n) dt(phi) = div(W^2 grad(phi) + W W'(theta) (-phi_y, phi_x)) + (phi - lambda u (1 - phi^2))(1 - phi^2),
# dt(u) = D lap(u) + dt(phi)/2, W = W0 a, tau = tau0 a^2, a = 1 + eps4 cos(4 theta), theta the angle of
# grad(phi): on faces atan2(grady(phi), gradx(phi)), in cells of the central differences. A seed of
# radius 8 in the corner of a melt undercooled to u = -0.3, zero flux on the walls. The benchmark is
# 960 x 960 to t = 1500; this is 60 x 60 cells (dx = 0.4) to t = 8. bdf2 at 33x the step:
#   pdejit run pfhub3.pde --scheme bdf2 --dt 0.1
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
time dt = 0.003, until = 8
output every = 2, format = png
