// y = max(x, 0) over n floats, as a bare OpenCL file: `kopt check examples/bare/relu_opencl/relu.cl
// --dims n=1000000` infers the problem from this signature and ref.py.
__kernel void relu(__global const float* x, __global float* y, const int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = fmax(x[i], 0.0f);
}
