mesh grid(nx = 18, x = stretch(1.1), dy = [0.1, 0.2, 0.1, 0.15, 0.1, 0.1, 0.05, 0.2, 0.1, 0.1, 0.1, 0.2])
field u = sin(3*x)*y + dx
on left: u = 1
on right: dn(u) = 2
eq dt(u) = lap(u) + x*dy
time dt = 0.00002, steps = 40, scheme = rk3
