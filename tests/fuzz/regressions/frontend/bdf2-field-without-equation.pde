mesh grid(nx = 24, ny = 20)
param D = 0.1
field u = exp(-20*((x-0.4)^2+(y-0.5)^2))
field v
on left: u = 1 + t
on right: dn(u) = 0
periodic y
on left, right: v = 0.2
time dt = 0.05, steps = 4, scheme = bdf2
