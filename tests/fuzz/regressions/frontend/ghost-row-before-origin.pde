mesh grid(nx = 300, ny = 3)
field u = 1e308
eq dt(u) = 0*u
time dt = 0.1, steps = 4
