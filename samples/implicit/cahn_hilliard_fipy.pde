# FiPy's examples/cahnHilliard/mesh2D.py: spinodal decomposition, in FiPy's own form
#   dt(phi) = div(D a^2 (1 - 6 phi (1 - phi)) grad(phi)) - div(D grad(eps^2 lap(phi)))
# (the coefficient on the faces from the face average of phi, as FiPy's arithmeticFaceValue),
# cells of 0.25, phi = 0.5 plus Gaussian noise of variance 0.01, zero-flux sides. FiPy steps
# with dt = min(100, exp(dexp)), dexp += 0.01 from -5 (about 730 steps to t = 1000); here bdf2
# chooses the steps by its error estimate. FiPy states the result: phi separates into regions
# above 0.7 and below 0.3 (its doctest, on 20 x 20 cells); the mean stays 0.5 and the free
# energy F = integral(a^2/2 phi^2 (1 - phi)^2 + eps^2/2 |grad phi|^2) falls as the domains
# coarsen (monitor.csv). FiPy's interactive run has 1000 x 1000 cells; docs/performance.md
# times this file at larger sizes (bench/cahn_hilliard_fipy.sh).
mesh grid(nx = 100, ny = 100, Lx = 25, Ly = 25)
param D = 1, a = 1, eps = 1
field phi = 0.5 + 0.1*randn()
eq dt(phi) = div(D*a^2*(1 - 6*phi*(1 - phi))*grad(phi)) - D*eps^2*lap(lap(phi))
time dt = exp(-5), until = 1000, scheme = bdf2, adapt = 1e-3
monitor every = 10, high = maxval(phi), low = minval(phi), avg = mean(phi), energy = integral(a^2/2*phi^2*(1 - phi)^2 + eps^2/8*(((phi[1, 0] - phi[-1, 0])/dx)^2 + ((phi[0, 1] - phi[0, -1])/dy)^2))
