# Steady convection-diffusion with a Dirichlet inflow, the exponential scheme: FiPy's
# examples/convection/exponential1D/mesh1D (D u'' + (10 u)' = 0 on [0, 10], u(0) = 0, u(10) = 1),
# run to its steady state. Exact at the cell centres (tests/test_wall.c checks it):
#     u = (1 - exp(-10 x / D)) / (1 - exp(-10 Lx / D))
const Lx = 10
mesh grid(nx = 10, Lx = Lx)
param D = 1, w = -10          # velocity toward -x: the inflow is the right side
param uleft = 0, uright = 1
func alpha(P) = (P - 1 + exp(-P)) / (P*(1 - exp(-P)))
# the exact flux of u' = (w u - J)/D between a value a and a value b a distance d to its right
func J(a, b, d) = w*(alpha(w*d/D)*a + (1 - alpha(w*d/D))*b) - D*(b - a)/d
# inside: cell to cell; on a side of the mesh: the boundary cell to its wall, half a cell away
flux F(u) = boundary ? (x < Lx/2 ? J(wall(u), R(u), dx/2) : J(L(u), wall(u), dx/2)) : J(L(u), R(u), dx)
field u = 0
eq dt(u) = -div(F(u))
on left: u = uleft
on right: u = uright
time dt = 0.02, until = 40
output every = 10, format = csv
