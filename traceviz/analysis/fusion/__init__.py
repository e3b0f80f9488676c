"""The fusion map: whether two traces are the same workload, which eager kernels each
compiled kernel replaced (by the compiler's record or by name and data flow), per source
line, and the unfused chains fusion would merge."""
