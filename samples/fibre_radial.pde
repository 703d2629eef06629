# Radial diffusion out of a fibre (FiPy's CylindricalGrid1D): a hot core spreads over r in [0, 1],
# no flux through the wall. The axis r = 0 needs no condition. The total, integral(u) (per radian:
# the volume of a cell is r dr), stays what it was to rounding.
mesh cylindrical(nr = 50, Lr = 1, r0 = 0)
param D = 1
field u = exp(-50*r^2)
eq dt(u) = div(D*grad(u))
on outer: dn(u) = 0
monitor every = 0.01, total = integral(u), centre = maxval(u)
time dt = 0.0001, until = 0.05
output every = 0.025, format = csv
