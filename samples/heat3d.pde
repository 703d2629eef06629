# 3D heat in a unit cube with u = 0 on every wall.
# Exact: u = exp(-3 pi^2 D t) sin(pi x) sin(pi y) sin(pi z).
mesh grid(nx = 24, ny = 24, nz = 24)
param D = 1
field u = sin(pi*x)*sin(pi*y)*sin(pi*z)
eq dt(u) = D*lap(u)
on all: u = 0
time dt = 0.0002, until = 0.05, scheme = rk3
output every = 0.01, format = csv
