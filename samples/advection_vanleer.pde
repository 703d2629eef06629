# 1D advection of a square wave with a user-written van Leer limiter, periodic.
mesh grid(nx = 200, Lx = 1)
func vanleer(r) = (r + abs(r)) / (1 + abs(r))
param c = 1
flux adv(u) = c * (L(u) + 0.5*vanleer((L(u) - LL(u)) / (R(u) - L(u) + 1e-30)) * (R(u) - L(u)))
field u = x > 0.25 && x < 0.5 ? 1 : 0
eq dt(u) = -div(adv(u))
periodic x
time dt = 0.002, until = 1, scheme = rk2
output every = 0.25, format = csv
