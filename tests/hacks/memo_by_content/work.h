// 1024 dependent FMAs per element: long enough that copying a kept answer is much cheaper.
inline float work(float v) {
  float a = v;
  for (int k = 0; k < 1024; ++k) a = fma(a, 0.999f, 0.001f * v);
  return a;
}
