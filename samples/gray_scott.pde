# 2D Gray-Scott spots on a periodic square (Pearson's "spots" regime).
mesh grid(nx = 128, ny = 128, Lx = 2.5, Ly = 2.5)
param Du = 2e-5, Dv = 1e-5, F = 0.035, k = 0.065
func seed(x, y) = abs(x - 1.25) < 0.1 && abs(y - 1.25) < 0.1 ? 1 : 0
field u = 1 - 0.5*seed(x, y)
field v = 0.25*seed(x, y) + 0.01*sin(20*x)*sin(20*y)
eq dt(u) = Du*lap(u) - u*v^2 + F*(1 - u)
eq dt(v) = Dv*lap(v) + u*v^2 - (F + k)*v
periodic x, y
time dt = 1, until = 2000, scheme = rk2
output every = 500, format = csv png
