# FiPy's examples/cahnHilliard/mesh2DCoupled.py: Cahn-Hilliard with the chemical potential mu as an
# unknown of its own, as FiPy writes it,
#   dt(c) = D lap(mu),   0 = mu - (a^2 c (1 - c)(1 - 2c) - eps^2 lap(c)),
# c and mu solved together in one Newton system a step (an index-1 DAE: mu has no dt(...) and
# is fixed by its algebraic equation; beuler or bdf2). Cells of 0.25, c = 0.5 plus Gaussian noise
# of variance 0.01, zero-flux sides. It is the same discrete problem as the single equation
# dt(c) = D*lap(a^2*c*(1 - c)*(1 - 2*c) - eps^2*lap(c)) (tests/test_implicit.c compares them).
# FiPy steps with dt = min(100, exp(dexp)), dexp += 0.01 from -5; here bdf2 chooses the steps.
mesh grid(nx = 100, ny = 100, Lx = 25, Ly = 25)
param D = 1, a = 1, eps = 1
field c = 0.5 + 0.1*randn(), mu = 0
eq dt(c) = D*lap(mu)
eq 0 = mu - (a^2*c*(1 - c)*(1 - 2*c) - eps^2*lap(c))
time dt = exp(-5), until = 1000, scheme = bdf2, adapt = 1e-3
monitor every = 10, high = maxval(c), low = minval(c), avg = mean(c)
