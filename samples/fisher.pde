# Fisher-KPP front, 1D
mesh grid(nx = 200, Lx = 40)
param D = 1, k = 1
field u = x < 5 ? 1 : 0
eq dt(u) = div(D*grad(u)) + k*u*(1 - u)
on left:  u = 1
on right: dn(u) = 0
time dt = 0.01, until = 10, scheme = rk2
output every = 1, format = csv
