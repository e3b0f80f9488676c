"""Time: device idle and its causes, launches, blocking calls, the kernel timeline, the
timed verdict and whether the profiled steps look like the timed ones."""
