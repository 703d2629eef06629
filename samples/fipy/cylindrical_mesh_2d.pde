# FiPy's examples/convection/exponential2D/cylindricalMesh2D.py as FiPy writes it: the steady
# convection-diffusion equation div(D grad(phi) + u phi) = 0 on a CylindricalGrid2D of 100 x 1
# cells, r0 < r < r1, 0 < z < 1 (a pseudo-1D annulus), D = 1, u = (10, 0), phi = 0 at r0 and 1
# at r1, no flux through bottom and top, convection by FiPy's ExponentialConvectionTerm on every
# face (normal(...) picks the face's component). Exact solution (doctest: atol = 1e-3):
#     phi = exp(u/D (r1 - r)) (Ei(u r0/D) - Ei(u r/D)) / (Ei(u r0/D) - Ei(u r1/D))
# tests/test_fipy_meshes.c checks it, tests/fipy_meshes_test.sh compares with FiPy itself.
const r0 = 1, r1 = 2, nr = 100
mesh cylindrical(nr = nr, nz = 1, Lr = r1 - r0, Lz = 1, r0 = r0)
param diffCoeff = 1, convCoeff = 10
# FiPy's exponential weight of the low cell of a face for the Peclet number P
func alpha(P) = abs(P) <= 1e-3 ? 0.5 : P > 101 ? (P - 1)/P : ((P - 1)*exp(P) + 1)/(P*(exp(P) - 1))
# minus the flux D phi' + v phi between a value a and a value b a distance d above it
func J(a, b, d, v) = -v*(alpha(-v*d/diffCoeff)*a + (1 - alpha(-v*d/diffCoeff))*b) - diffCoeff*(b - a)/d
# on a side: between the boundary cell and its wall, half a cell away (FiPy's constrained face)
func Jside(phi, low, d, v) = low ? J(wall(phi), R(phi), d/2, v) : J(L(phi), wall(phi), d/2, v)
# on each face: the velocity across it, the distance between the centres, whether it is a low side
func v() = normal(convCoeff, 0)
func h() = normal(dr, dz)
func low() = normal(r < (r0 + r1)/2, z < 1/2)
flux F(phi) = boundary ? Jside(phi, low(), h(), v()) : J(L(phi), R(phi), h(), v())
field phi = 0
eq dt(phi) = -div(F(phi))
on inner: phi = 0
on outer: phi = 1
steady
