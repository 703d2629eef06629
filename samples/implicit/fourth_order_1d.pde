# FiPy's examples/diffusion/nthOrder/input4thOrder1D.py: the steady fourth-order problem
# u'''' = 0 on [0, 1000] with 500 cells, u = 2 and u'' = 4 at the left end, u' = 1 and u''' = -3
# at the right. The left end takes two conditions (u, then lap(u)); at the right, dn(u) = 1 sets
# the ghost layer and the third derivative is the flux of the outer operator through the right
# face, as FiPy's NthOrderBoundaryCondition of order 3 sets it. The exact solution is the cubic
#   u = a4/6 x^3 + a3/2 x^2 + (a2 - a4/2 L^2 - a3 L) x + a1,
# which FiPy's doctest meets to a relative 1e-4 in every cell (tests/test_implicit.c checks it).
# One direct solve: the operator is linear and its condition number grows as (L/h)^4.
mesh grid(nx = 500, Lx = 1000)
param a1 = 2, a2 = 1, a3 = 4, a4 = -3
flux F(u) = boundary*(x > 500) ? a4 : grad(lap(u))
field u = 0
eq dt(u) = -div(F(u))
on left: u = a1, lap(u) = a3
on right: dn(u) = a2
steady
solver rtol = 1e-6, linear = preonly, pc = lu
