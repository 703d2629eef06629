# Allen-Cahn with uniform noise in the equation, 128² periodic (bench of issue 30 item 4, run by
# bench/ab_noise.sh with noise_ac.pde: randn(), and noise_ac_plain.pde: no noise).
mesh grid(nx = 128, ny = 128, Lx = 1, Ly = 1)
param D = 1e-4, amp = 0.01
field u = 0.1*(rand() - 0.5)
eq dt(u) = D*lap(u) + u - u^3 + amp*(rand() - 0.5)
periodic x, y
time dt = 0.01, until = 40
