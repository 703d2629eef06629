# Robin boundary: steady heat flow through a bar losing heat to a bath at its right end.
# u = 1 at the left wall, dn(u) + h*u = 0 on the right: the steady state is the line
# u = 1 - h*x / (1 + h*Lx).
mesh grid(nx = 50, Lx = 1)
param D = 1, h = 2
field u = 0
eq dt(u) = D*lap(u)
on left:  u = 1
on right: h*u + dn(u) = 0
time dt = 0.0001, until = 3, scheme = rk2
output every = 1, format = csv
