# 1D Allen-Cahn interface: u relaxes to the stationary front tanh((x - 5) / (sqrt(2) eps)).
mesh grid(nx = 200, Lx = 10)
const eps = 0.2
param m = 1
field u = x < 5 ? -1 : 1
eq dt(u) = m*(eps^2*lap(u) + u - u^3)
on left:  u = -1
on right: u = 1
time dt = 0.001, until = 5, scheme = rk3
output every = 1, format = csv
