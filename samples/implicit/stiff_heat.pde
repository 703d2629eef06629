# Stiff diffusion, 100x beyond the explicit limit: bdf2 takes 100 steps where rk4 would need 5700
# (pdejit refuses rk4 at this dt: "dt = 0.001 exceeds the explicit stability limit (about
# 1.74e-05) of rk4"). The exact solution is exp(-pi^2 D t) sin(pi x).
mesh grid(nx = 200, Lx = 1)
param D = 1
field u = sin(pi*x)
eq dt(u) = D*lap(u)
on all: u = 0
time dt = 0.001, until = 0.1, scheme = bdf2
