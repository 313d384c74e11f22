#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
static float f(uint32_t u){float x;memcpy(&x,&u,4);return x;}
static uint32_t u(float x){uint32_t v;memcpy(&v,&x,4);return v;}
static float old_r(float y){
  if (std::isnan(y)) return y;
  const float a = std::fabs(y); float r;
  if (a >= 448.0f) r = 448.0f;
  else if (a < 0x1p-6f) r = std::rint(a*512.0f)*0x1p-9f;
  else { int e = std::ilogb(a); float m = std::ldexp(a,-e); float q = std::rint((m-1.0f)*8.0f); r = std::ldexp(1.0f+q*0.125f, e); }
  return std::copysign(r, y);
}
static float new_r(float y){
  const uint32_t b=u(y), a=b&0x7fffffffu, s=b&0x80000000u;
  if (a > 0x7f800000u) return y;
  uint32_t r;
  if (a >= 0x43e00000u) r = 0x43e00000u;
  else if (a < 0x3c800000u) { volatile float t = f(a)*512.0f; volatile float t2 = t + 8388608.0f; float q = t2 - 8388608.0f; r = u(q*0x1p-9f); }
  else r = (a + 0x7ffffu + ((a >> 20) & 1u)) & 0xfff00000u;
  return f(r|s);
}
int main(){
  uint64_t bad=0;
  for (uint64_t i=0;i<(1ull<<32);++i){ float y=f(uint32_t(i)); float o=old_r(y), n=new_r(y); if (u(o)!=u(n) && !(std::isnan(o)&&std::isnan(n)&&u(o)==u(n))) { if (bad<5) printf("diff %08x: %08x %08x\n",(unsigned)i,u(o),u(n)); ++bad; } }
  printf("e4m3 diffs: %llu\n",(unsigned long long)bad);
  // division by 2^k vs multiplication by 2^-k (k from pow2_ceil's clamp: -126..127)
  uint64_t bad2=0;
  for (int k : {-126,-20,0,127}) { float s=std::ldexp(1.0f,k), inv=1.0f/s; if (inv!=std::ldexp(1.0f,-k)) printf("inv inexact k=%d\n",k);
    for (uint64_t i=0;i<(1ull<<32);i+=1){ float v=f(uint32_t(i)); float d=v/s, m=v*inv; if (u(d)!=u(m) && !(std::isnan(d)&&std::isnan(m))) { if (bad2<5) printf("divdiff k=%d v=%08x\n",k,(unsigned)i); ++bad2; } } }
  std::mt19937 g(1); for (int k=-126;k<=127;++k){ float s=std::ldexp(1.0f,k), inv=1.0f/s; for(int j=0;j<2000000;++j){ float v=f(g()); float d=v/s,m=v*inv; if (u(d)!=u(m) && !(std::isnan(d)&&std::isnan(m))) ++bad2; } }
  printf("div diffs: %llu\n",(unsigned long long)bad2);
}
