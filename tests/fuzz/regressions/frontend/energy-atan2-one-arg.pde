# Allen-Cahn from its free energy (contract section 9): the equation is the gradient flow of F,
# whose variational derivative delta(F, c) = 2*W*c*(1 - c)*(1 - 2*c) - kappa*lap(c) pdejit derives;
# the monitor is F's discrete energy, which the flow never raises (tests/test_energy.c).
mesh grid(nx = 64, ny = 64, Lx = 32, Ly = 32)
periodic x, y
param W = 1, kappa = 1, L = 1
energy F = W*c^2*(1 - c)^2 + atan2(c) + kappa/2*grad2(c)
field c = 0.5 + 0.4*sin(0.39*x + 0.2)*cos(0.59*y) + 0.1*cos(1.3*x - 0.7*y)
eq dt(c) = -L*delta(F, c)
monitor every = 1, energy = integral(F)
time dt = 0.05, until = 20, scheme = rk2
output every = 5, format = csv
