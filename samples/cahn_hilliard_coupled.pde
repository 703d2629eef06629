# FiPy's examples/cahnHilliard/mesh2DCoupled.py with an explicit scheme: the chemical potential mu
# is an unknown of its own, fixed by an algebraic equation, as FiPy writes it,
#   dt(c) = D lap(mu),   0 = mu - (a^2 c (1 - c)(1 - 2c) - eps^2 lap(c)).
# EXPR is linear in mu, so rk4 evaluates mu = a^2 c (1 - c)(1 - 2c) - eps^2 lap(c) in a pass over
# the cells before each stage, and fills mu's ghosts by its condition before the stage reads them:
# the same discrete problem as dt(c) = D*lap(a^2*c*(1 - c)*(1 - 2*c) - eps^2*lap(c)), to round-off
# (tests/test_algebraic.c). Cells of 0.5 (dt below the explicit limit, about 2.8 h^4/(64 D eps^2)
# with rk4: 0.0027), c = 0.5 plus Gaussian noise of variance 0.01, zero-flux sides. The implicit
# version, to FiPy's t = 1000: implicit/cahn_hilliard_coupled.pde.
mesh grid(nx = 32, ny = 32, Lx = 16, Ly = 16)
param D = 1, a = 1, eps = 1
field c = 0.5 + 0.1*randn(), mu = 0
eq dt(c) = D*lap(mu)
eq 0 = mu - (a^2*c*(1 - c)*(1 - 2*c) - eps^2*lap(c))
time dt = 0.002, until = 100, scheme = rk4
monitor every = 10, high = maxval(c), low = minval(c), avg = mean(c)
