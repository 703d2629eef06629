# FiPy's cylindricalMesh1D.py (examples/convection/exponential1D) on FiPy's SphericalGrid1D, which
# no FiPy example uses: the steady convection-diffusion equation div(D grad(phi) + u phi) = 0 on
# the spherical shell r0 < r < r1 with 100 cells, D = 1, u = (10,), phi = 0 at r0 and 1 at r1,
# convection by FiPy's ExponentialConvectionTerm. With k = u/D, r^2 (phi' + k phi) is constant:
#     phi = c (k Ei(k r) exp(-k r) - 1/r) + a exp(-k r), a and c from phi(r0) = 0, phi(r1) = 1
# tests/test_fipy_meshes.c checks it (atol = 1e-3, the cylindrical doctest's), and
# tests/fipy_meshes_test.sh compares with FiPy itself.
const r0 = 1, r1 = 2, nr = 100
mesh spherical(nr = nr, Lr = r1 - r0, r0 = r0)
param diffCoeff = 1, convCoeff = 10
# FiPy's exponential weight of the low cell of a face for the Peclet number P
func alpha(P) = abs(P) <= 1e-3 ? 0.5 : P > 101 ? (P - 1)/P : ((P - 1)*exp(P) + 1)/(P*(exp(P) - 1))
# minus the flux D phi' + v phi between a value a and a value b a distance d above it
func J(a, b, d, v) = -v*(alpha(-v*d/diffCoeff)*a + (1 - alpha(-v*d/diffCoeff))*b) - diffCoeff*(b - a)/d
# on a side: between the boundary cell and its wall, half a cell away (FiPy's constrained face)
func Jside(phi, low, d, v) = low ? J(wall(phi), R(phi), d/2, v) : J(L(phi), wall(phi), d/2, v)
flux F(phi) = boundary ? Jside(phi, r < (r0 + r1)/2, dr, convCoeff) : J(L(phi), R(phi), dr, convCoeff)
field phi = 0
eq dt(phi) = -div(F(phi))
on inner: phi = 0
on outer: phi = 1
steady
