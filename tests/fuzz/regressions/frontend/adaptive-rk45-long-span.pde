mesh grid(nx = 64, Lx = 1)
periodic x
param D = 5.01
field u = sin(2*pi*x)
eq dt(u) = D*lap(u)
time dt = 1, until = 1, scheme = rk45, adapt = 0.01
