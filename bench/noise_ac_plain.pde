# Allen-Cahn without noise in the equation, 128² periodic (bench of issue 30 item 4; noise_ac.pde
# is the same equation with randn()): pdejit run bench/noise_ac.pde prints Mcells/s.
mesh grid(nx = 128, ny = 128, Lx = 1, Ly = 1)
param D = 1e-4, amp = 0.01
field u = 0.1*(rand() - 0.5)
eq dt(u) = D*lap(u) + u - u^3
periodic x, y
time dt = 0.01, until = 40
