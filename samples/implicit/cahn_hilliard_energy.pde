# Cahn-Hilliard from its free energy, as contract section 9 writes it: the chemical potential is
# delta(F, c), derived from F (with its exact Jacobian for the implicit solve); the monitor is F's
# discrete energy, which never rises under beuler steps (tests/test_energy.c checks that).
mesh grid(nx = 48, ny = 48, Lx = 48, Ly = 48)
periodic x, y
param W = 1, kappa = 1, M = 1, L = 1
energy F = W*c^2*(1 - c)^2 + kappa/2*grad2(c)
field c = 0.5 + 0.05*(2*rand() - 1)
eq dt(c) = div(M*grad(delta(F, c)))          # Cahn-Hilliard
monitor every = 10, energy = integral(F)
time dt = 0.5, until = 200, scheme = beuler
output every = 50, format = png
