// Elementwise ops. Binary ops broadcast like NumPy; the tape sums their gradients back to each
// input's shape, so their backward functions are written as if no broadcasting had happened.
#pragma once

#include "engine/var.hpp"

namespace gs {

Var add(const Var& a, const Var& b, Site site = Site::current());  // a + b
Var sub(const Var& a, const Var& b, Site site = Site::current());  // a - b
Var mul(const Var& a, const Var& b, Site site = Site::current());  // a * b
Var div(const Var& a, const Var& b, Site site = Site::current());  // a / b
Var neg(const Var& x, Site site = Site::current());                // -x
Var pow(const Var& x, double p, Site site = Site::current());      // x^p, p a constant
Var exp(const Var& x, Site site = Site::current());
Var log(const Var& x, Site site = Site::current());                // natural log
Var sqrt(const Var& x, Site site = Site::current());
Var tanh(const Var& x, Site site = Site::current());
Var sigmoid(const Var& x, Site site = Site::current());             // 1 / (1 + e^-x)
Var relu(const Var& x, Site site = Site::current());               // max(x, 0)
Var gelu(const Var& x, Site site = Site::current());               // x * Phi(x), erf form

// A 0-d constant on x's tape, for `x * 2.0` and friends.
Var scalar_like(const Var& x, double c, Site site = Site::current());

// Operators. Their left (or only Var) operand is taken as `At`, which records the call site of the
// expression, so `h = x + attn(x)` is listed at the user's line, not at this header's.
struct At {
  Var var;
  Site site;
  At(const Var& v, Site s = Site::current()) : var(v), site(s) {}
  At(const Parameter& p, Site s = Site::current()) : var(p, s), site(s) {}
};

inline Var operator+(At a, const Var& b) { return add(a.var, b, a.site); }
inline Var operator-(At a, const Var& b) { return sub(a.var, b, a.site); }
inline Var operator*(At a, const Var& b) { return mul(a.var, b, a.site); }
inline Var operator/(At a, const Var& b) { return div(a.var, b, a.site); }
inline Var operator-(At x) { return neg(x.var, x.site); }

inline Var operator+(At a, double c) { return add(a.var, scalar_like(a.var, c, a.site), a.site); }
inline Var operator-(At a, double c) { return sub(a.var, scalar_like(a.var, c, a.site), a.site); }
inline Var operator*(At a, double c) { return mul(a.var, scalar_like(a.var, c, a.site), a.site); }
inline Var operator/(At a, double c) { return div(a.var, scalar_like(a.var, c, a.site), a.site); }
inline Var operator+(double c, At b) { return add(scalar_like(b.var, c, b.site), b.var, b.site); }
inline Var operator-(double c, At b) { return sub(scalar_like(b.var, c, b.site), b.var, b.site); }
inline Var operator*(double c, At b) { return mul(scalar_like(b.var, c, b.site), b.var, b.site); }
inline Var operator/(double c, At b) { return div(scalar_like(b.var, c, b.site), b.var, b.site); }

}  // namespace gs
