# FiPy's examples/convection/exponential1D/cylindricalMesh1DNonUniform.py as FiPy writes it: the
# steady convection-diffusion equation div(D grad(phi) + u phi) = 0 on the annulus r0 < r < r1 of a
# CylindricalGrid1D with 100 cells of widths dr = r0 (Rratio - 1) Rratio^i, Rratio = (r1/r0)^(1/nr)
# (its faces r0 Rratio^i: r = stretch(Rratio)), D = 1, u = (10,), phi = 0 at r0 and 1 at r1,
# convection by FiPy's ExponentialConvectionTerm. Exact solution (doctest: atol = 1e-3):
#     phi = exp(u/D (r1 - r)) (Ei(u r0/D) - Ei(u r/D)) / (Ei(u r0/D) - Ei(u r1/D))
# tests/test_fipy_meshes.c checks it, tests/fipy_meshes_test.sh compares with FiPy itself.
const r0 = 1, r1 = 2, nr = 100
const Rratio = (r1/r0)^(1/nr)
mesh cylindrical(nr = nr, Lr = r1 - r0, r0 = r0, r = stretch(Rratio))
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
