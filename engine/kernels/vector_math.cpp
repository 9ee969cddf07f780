// The step's erf and exp loops; see vector_math.hpp for why erf and exp are written out here.
// Coefficients and operation order are those of xsimd 8.1 (arch/generic/xsimd_generic_math.hpp, from
// Boost.SIMD), which is what xt::erf runs on this build. Built with -ffp-contract=off (CMakeLists.txt).
#include "engine/kernels/vector_math.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace gs::kernels {
namespace {

// The loop can be vectorised only if erf and exp are inlined into it (each clone gets its own copy).
#define GS_INLINE inline __attribute__((always_inline))

// c[0] + x (c[1] + x (c[2] + ...)), innermost first, as xsimd's horner<...> evaluates it.
template <std::size_t N>
GS_INLINE double horner(double x, const double (&c)[N]) {
  double r = c[N - 1];
  for (std::size_t i = N - 1; i-- > 0;) r = r * x + c[i];
  return r;
}

// Rounds to the nearest integer, ties to even, as xsimd's nearbyint: adding 2^52 pushes the fraction
// bits out of a double, subtracting it back leaves the rounded value.
GS_INLINE double round_to_integer(double a) {
  const double v = std::fabs(a);
  const double rounded = (v + 0x1p52) - 0x1p52;
  return std::copysign(v < 0x1p52 ? rounded : v, a);  // from 2^52 on, v is an integer already
}

// 2^k for an integer-valued k in [-1022, 1023], built from its exponent bits: (k + 1023) << 52.
// k + 1.5 * 2^52 holds k in the low bits of its pattern; the shift drops the rest.
GS_INLINE double two_to_the(double k) {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(k + 0x1.8p52);
  return std::bit_cast<double>((bits + 1023) << 52);
}

// e^a = 2^k e^r with k = round(a / ln 2) and r = a - k ln 2 in [-ln2/2, ln2/2]. ln 2 is split in a
// high part with trailing zero bits (k * hi is exact) and a low part. On r, e^r comes from a rational
// approximation written as 1 - ((lo - r c / (2 - c)) - hi), with c = r - r^2 P(r^2).
GS_INLINE double exp_inline(double a) {
  constexpr double log2_hi = std::bit_cast<double>(0x3fe62e42fee00000ull);
  constexpr double log2_lo = std::bit_cast<double>(0x3dea39ef35793c76ull);
  constexpr double P[] = {std::bit_cast<double>(0x3fc555555555553eull), std::bit_cast<double>(0xbf66c16c16bebd93ull),
                          std::bit_cast<double>(0x3f11566aaf25de2cull), std::bit_cast<double>(0xbebbbd41c5d26bf1ull),
                          std::bit_cast<double>(0x3e66376972bea4d0ull)};
  const double k = round_to_integer(1.442695040888963407359924681001892137426645954152986 * a);
  const double hi = -k * log2_hi + a;
  const double lo = k * log2_lo;
  const double r = hi - lo;
  const double t = r * r;
  const double c = -t * horner(t, P) + r;
  const double e_r = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
  const double e_a = e_r * two_to_the(k);
  return a <= -708.3964185322641 ? 0.0 : a >= 709.78271289338400 ? HUGE_VAL : e_a;  // under- and overflow
}

// erf(a), three fits on |a|:
//   |a| < 0.65         erf(a) = a P1(a^2) / Q1(a^2)
//   0.65 <= |a| < 2.2  erf(|a|) = 1 - e^(-a^2) P2(|a|) / Q2(|a|)
//   2.2 <= |a| < 6     erf(|a|) = 1 - e^(-a^2) P3(|a|) / Q3(|a|)
//   6 <= |a|           erf(|a|) = 1                                  (to double precision)
// and erf(-a) = -erf(a).
GS_INLINE double erf_inline(double a) {
  // P1 and Q1 have 5 coefficients; the two zeros on top make all six polynomials the same length and
  // change no bit: Horner's rule then starts 0, 0 * t + 0, 0 * t + c4 = c4.
  constexpr double P1[] = {std::bit_cast<double>(0x3ff20dd750429b61ull), std::bit_cast<double>(0x3fc16500f106c0a5ull),
                           std::bit_cast<double>(0x3fa4a59a4f02579cull), std::bit_cast<double>(0x3f53b7664358865aull),
                           std::bit_cast<double>(0x3f110512d5b20332ull), 0.0, 0.0};
  constexpr double Q1[] = {1.0, std::bit_cast<double>(0x3fdd0a84eb1ca867ull), std::bit_cast<double>(0x3fb64536ca92ea2full),
                           std::bit_cast<double>(0x3f8166f75999dbd1ull), std::bit_cast<double>(0x3f37ea4332348252ull),
                           0.0, 0.0};
  constexpr double P2[] = {std::bit_cast<double>(0x3feffffffbbb552bull), std::bit_cast<double>(0x3ff54dfe9b258a60ull),
                           std::bit_cast<double>(0x3fec1986509e687bull), std::bit_cast<double>(0x3fd53dd7a67c7e9full),
                           std::bit_cast<double>(0x3fb2488a6b5cb5e5ull), std::bit_cast<double>(0x3f7cf4cfe0aacbb4ull),
                           0.0};
  constexpr double Q2[] = {1.0,
                           std::bit_cast<double>(0x4003adeae79b9708ull), std::bit_cast<double>(0x40053b1052dca8bdull),
                           std::bit_cast<double>(0x3ff9e677c2777c3cull), std::bit_cast<double>(0x3fe307622fcff772ull),
                           std::bit_cast<double>(0x3fc033c113a7deeeull), std::bit_cast<double>(0x3f89a996639b0d00ull)};
  constexpr double P3[] = {std::bit_cast<double>(0x3fefff5a9e697ae2ull), std::bit_cast<double>(0x3ff9fa202deb88e5ull),
                           std::bit_cast<double>(0x3ff44744306832aeull), std::bit_cast<double>(0x3fe29be1cff90d94ull),
                           std::bit_cast<double>(0x3fc42210f88b9d43ull), std::bit_cast<double>(0x3f971d0907ea7a92ull),
                           0.0};
  constexpr double Q3[] = {1.0,
                           std::bit_cast<double>(0x400602f24bf3fdb6ull), std::bit_cast<double>(0x400afd487397568full),
                           std::bit_cast<double>(0x400315ffdfd5ce91ull), std::bit_cast<double>(0x3ff0cfd4cb6cde9full),
                           std::bit_cast<double>(0x3fd1d7ab774bb837ull), std::bit_cast<double>(0x3fa47bd61bbb3843ull)};
  // Each element picks its fit's coefficients, and one Horner loop evaluates numerator and denominator
  // (in a^2 for the first fit, in |a| for the others). No branches, so the loop vectorises.
  const double x = std::fabs(a);
  const double xx = x * x;
  const bool small = x < 0.65, middle = x < 2.2;
  const double t = small ? xx : x;
  double p = small ? P1[6] : middle ? P2[6] : P3[6];
  double q = small ? Q1[6] : middle ? Q2[6] : Q3[6];
  for (int i = 5; i >= 0; --i) {
    p = p * t + (small ? P1[i] : middle ? P2[i] : P3[i]);
    q = q * t + (small ? Q1[i] : middle ? Q2[i] : Q3[i]);
  }
  const double ratio = p / q;
  const double erf_x = 1.0 - exp_inline(-xx) * ratio;  // erf(|a|), for |a| >= 0.65
  const double signed_erf_x = a < 0.0 ? -erf_x : erf_x;
  // From |a| = 6 on, e^(-a^2) * ratio < 2^-54 and erf_x rounds to exactly 1; past |a| ~ 1e51 the
  // polynomials overflow and ratio = inf / inf = NaN (xsimd's erf has that fault: gelu(1e80) was NaN).
  // So from 6 on the answer is +-1 outright: the same bits wherever the formula was finite.
  const double large = x >= 6.0 ? std::copysign(1.0, a) : signed_erf_x;
  return small ? a * ratio : large;
}

}  // namespace

double exp_like_xsimd(double a) { return exp_inline(a); }
double erf_like_xsimd(double a) { return erf_inline(a); }

// Each loop is cloned for AVX-512, AVX2 and plain x86-64; the loader picks the clone for the CPU.
#define GS_PER_CPU __attribute__((target_clones("avx512f", "avx2", "default")))

// The loops, for double or float arrays: each element is computed in double and stored in the array's
// type, so the float build's GELU and softmax round once, at the end.
template <class T>
GS_INLINE void gelu_forward_loop(const T* x, T* y, std::size_t n) {
  const double inv_sqrt2 = 1.0 / std::numbers::sqrt2;
  // At x = -inf the product is -inf * 0 = NaN; the limit is 0 (gelu(-1e300) is already -0): -0 there.
  for (std::size_t i = 0; i < n; ++i) {
    const double x_i = x[i];
    const double y_i = x_i * 0.5 * (1.0 + erf_inline(x_i * inv_sqrt2));
    y[i] = static_cast<T>(x_i == -INFINITY ? -0.0 : y_i);
  }
}

template <class T>
GS_INLINE void gelu_backward_loop(const T* x, const T* y, const T* dy, T* dx, std::size_t n) {
  const double inv_sqrt_2pi = 0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2;
  for (std::size_t i = 0; i < n; ++i) {
    // Phi(x) = y / x saves a second erf. At x = 0, and for |x| < 1e-300 where x Phi(x) would lose
    // digits, Phi = 1/2.
    // At +-inf, y / x and x phi(x) are inf / inf and inf * 0: their limits are Phi = 1 or 0 and 0.
    const double x_i = x[i];
    const bool infinite = std::fabs(x_i) == INFINITY;
    const double cdf = infinite ? (x_i > 0.0 ? 1.0 : 0.0) : std::fabs(x_i) >= 1e-300 ? y[i] / x_i : 0.5;
    const double pdf = inv_sqrt_2pi * exp_inline(-0.5 * x_i * x_i);
    dx[i] = static_cast<T>(dy[i] * (cdf + (infinite ? 0.0 : x_i * pdf)));
  }
}

template <class T>
GS_INLINE void exp_shifted_loop(T* v, std::size_t n, double shift) {
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(exp_inline(v[i] - shift));
}

GS_PER_CPU void gelu_forward(const double* x, double* y, std::size_t n) { gelu_forward_loop(x, y, n); }
GS_PER_CPU void gelu_forward(const float* x, float* y, std::size_t n) { gelu_forward_loop(x, y, n); }
GS_PER_CPU void gelu_backward(const double* x, const double* y, const double* dy, double* dx, std::size_t n) {
  gelu_backward_loop(x, y, dy, dx, n);
}
GS_PER_CPU void gelu_backward(const float* x, const float* y, const float* dy, float* dx, std::size_t n) {
  gelu_backward_loop(x, y, dy, dx, n);
}
GS_PER_CPU void exp_shifted(double* v, std::size_t n, double shift) { exp_shifted_loop(v, n, shift); }
GS_PER_CPU void exp_shifted(float* v, std::size_t n, double shift) { exp_shifted_loop(v, n, shift); }

}  // namespace gs::kernels
