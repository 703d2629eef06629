# A small 2D problem for compile-time measurements (docs/performance.md): pj_bench's
# reaction-diffusion step (Fisher-KPP) on a 64 x 64 periodic square, explicit Euler, 100 steps.
mesh grid(nx = 64, ny = 64, Lx = 1, Ly = 1)
param D = 0.00244140625, k = 0.01
field u = 0.5 + 0.25*(sin(6.283185307179586*x)*cos(6.283185307179586*y))
eq dt(u) = D*lap(u) + k*u*(1 - u)
periodic x, y
time dt = 0.01, until = 1, scheme = euler
