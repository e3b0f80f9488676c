"""Pure analyses over parsed traces: kernels, launches, memory, regions, fusion, comparison."""
