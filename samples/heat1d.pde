# 1D heat from a fixed wall: u = 1 at x = 0 from t = 0 into a cold bar.
# Exact (semi-infinite bar): u = 1 - erf(x / (2 sqrt(D t))).
mesh grid(nx = 200, Lx = 10)
param D = 1
field u = 0
eq dt(u) = D*lap(u)
on left:  u = 1
on right: dn(u) = 0
time dt = 0.001, until = 1, scheme = rk2
output every = 0.25, format = csv
