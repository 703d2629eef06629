# Cahn-Hilliard spinodal decomposition in 2D: a fourth-order equation (the explicit step would
# shrink as h^4: about 0.03 here), solved with bdf2 and adaptive steps that grow as the
# structure coarsens. mu is the chemical potential; its lap(c) makes lap(mu(c)) reach two cells.
mesh grid(nx = 48, ny = 48, Lx = 48, Ly = 48)
param M = 1, kappa = 1
func mu(c) = c^3 - c - kappa*lap(c)
field c = 0.05*sin(12.9898*x + 78.233*y) + 0.05*cos(39.346*x - 11.135*y)
eq dt(c) = M*lap(mu(c))
periodic x, y
time dt = 0.05, until = 100, scheme = bdf2, adapt = 1e-3
output every = 25, format = png
