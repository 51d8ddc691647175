// y = 2 x computed from x rounded to half precision (vstore_half / vload_half convert through
// 16 bits in any OpenCL device, no fp16 extension needed): about 3 decimal digits where f32
// keeps 7.
__kernel void scale(__global const float* x, __global float* y, int n) {
  int i = get_global_id(0);
  if (i < n) {
    ushort bits;  // the half's storage
    vstore_half_rte(x[i], 0, (__private half*)&bits);
    y[i] = 2.0f * vload_half(0, (__private const half*)&bits);
  }
}
