// The step's erf and exp loops, written so that the compiler vectorises them for the CPU it runs on
// and still produces the same bits on every CPU.
//
// xtensor evaluates xt::erf and xt::exp with xsimd two doubles at a time (SSE2, the only vector ISA
// the build may assume); the C library's std::exp is one double at a time. Here erf and exp are written
// out element by element with the polynomials and the order of operations of xsimd's, so each loop is
// compiled three times (AVX-512, AVX2, plain x86-64; the loader picks the clone for the CPU). Nothing
// is contracted into fused multiply-adds (this file is built with -ffp-contract=off): only +, -, *, /
// and bit tricks, which IEEE 754 rounds the same way at any vector width.
// tests/test_fused_kernels.cpp checks the bits against the plain formulations.
#pragma once

#include <cstddef>

namespace gs::kernels {

// GELU forward: y[i] = x[i] Phi(x[i]) = x[i] / 2 (1 + erf(x[i] / sqrt 2)), bit for bit what xtensor's
// x * 0.5 * (1.0 + xt::erf(x / sqrt 2)) gives on elements it evaluates in pairs (all, for even n).
void gelu_forward(const double* x, double* y, std::size_t n);
void gelu_forward(const float* x, float* y, std::size_t n);  // each element in double, rounded once

// GELU backward: dx[i] = dy[i] (Phi(x[i]) + x[i] phi(x[i])), with phi(x) = e^(-x^2 / 2) / sqrt(2 pi)
// and Phi(x) read off the forward's output as y / x (1/2 where |x| < 1e-300).
void gelu_backward(const double* x, const double* y, const double* dy, double* dx, std::size_t n);
void gelu_backward(const float* x, const float* y, const float* dy, float* dx, std::size_t n);

// Softmax's exponentials: v[i] = e^(v[i] - shift) for i < n.
void exp_shifted(double* v, std::size_t n, double shift);
void exp_shifted(float* v, std::size_t n, double shift);

// The scalar functions the loops are made of, for the tests.
double erf_like_xsimd(double a);  // erf(a), within 1e-14 of std::erf
double exp_like_xsimd(double a);  // e^a, within an ulp of std::exp

}  // namespace gs::kernels
