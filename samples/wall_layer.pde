# A boundary layer refined at the wall: cells 1.05x wider each step away from x = 0. The steady
# state of u'' = u / eps^2 with u(0) = 1, dn(u) = 0 far away is exp(-x / eps); it is reached by
# diffusion.
mesh grid(nx = 40, Lx = 1, x = stretch(1.05))
const eps = 0.05
field u = 0
eq dt(u) = lap(u) - u / eps^2
on left: u = 1
on right: dn(u) = 0
monitor every = 0.05, layer = integral(u)
time dt = 0.00002, until = 0.2
output every = 0.05, format = csv
