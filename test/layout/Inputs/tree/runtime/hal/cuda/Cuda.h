// Cuda.
