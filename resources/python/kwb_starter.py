#!/usr/bin/env python3
# kwb_starter.py: writes the starter of a fused problem (KernelBench level 2/3, or a user's module):
# a host launcher `kwb_launch` that runs the module's forward one step at a time, each step a
# naive CUDA kernel commented with the PyTorch operation it implements, so the agent's first job
# is fusing them. Issue 46, item 4.
#
# Usage: python3 kwb_starter.py SPEC.json      (or `-`: the spec on stdin)
#   Prints ONE JSON line on stdout. Exit status: 0 when a line was printed (also when no starter
#   can be written: "ok": false); 1 usage error (message on stderr, nothing on stdout): no
#   argument, an unreadable file, text that is not a JSON object, a missing or mistyped field.
#   Needs torch (torch.fx); without it: {"ok": false, "reason": "torch is not installed ..."}.
#
# SPEC (a JSON object):
#   {"module": "/abs/problem.py",   KernelBench format: class Model, get_inputs, get_init_inputs.
#                                   It is executed (imported) by this script.
#    "init": [..],                  Model(*init) at the problem's own sizes (JSON values; a list
#                                   becomes a tuple)
#    "forward": ["x", "alpha"],     forward's arguments in order: kernel_args names (a tensor or
#                                   a param)
#    "outputs": ["out"],            forward's results in order (kernel_args tensor names)
#    "kernel_args": [ARG],          the launcher's args[] order, ARG one of
#        {"name", "kind": "tensor", "dtype", "shape": [size name | int], "role": "in" | "out",
#         "state": "conv.weight"}   ("state": the module's parameter/buffer this input carries;
#                                   "draw": N instead: the tensor forward's N-th random call
#                                   (torch.randn, torch.rand, ...) returns)
#        {"name", "kind": "size"}                          a long long
#        {"name", "kind": "param", "dtype": "f32" | "f64" | "i64" | "i32"}
#    "sizes": {"batch_size": 128, ...},   the problem's own size values
#    "configs": [{"name", "values": {size: int}, "init": [..]}]   other configurations (optional)
#   }
#   Every name must be a C identifier. Only f32 tensors are handled.
#
# Output, one line:
#   {"ok": true, "source": ".cu text", "steps": ["conv2d (conv)", "relu", "add (bias)"],
#    "notes": [str]}
#   {"ok": false, "reason": "one sentence, with PROBLEM.py:LINE where known"}
#
# The .cu defines extern "C" cudaError_t kwb_launch(void *const *args, cudaStream_t stream):
# args[i] points at kernel_args[i]'s value (a device pointer for a tensor, a long long for a size,
# the param's type for a param: float, double, long long, int). Everything runs on `stream`;
# intermediates come from cudaMallocAsync/cudaFreeAsync on it (each freed after its last use);
# the first error is returned. Every shape is computed at run time from the size arguments; the
# module's constants (kernel sizes, strides, eps, slopes, ...) are literals.
#
# How: torch.fx symbolically traces Model(*init) built on the meta device (CPU when meta fails);
# each graph node maps to a step. A node it cannot map refuses the whole starter (an honest
# refusal, never a wrong starter). Checks before answering ok: the trace of Model(*cfg.init) for
# every configuration gives the same source text (so no configuration's constant is baked in),
# and the shape the launcher computes for every intermediate equals the one torch's ShapeProp
# finds, at the problem's sizes and every configuration's; every state tensor and output has the
# shape kernel_args declares; a random node (Dropout with p > 0 in training mode) refuses.
# Draws: while tracing, torch's random functions (kwb_problem_state.DRAW_FUNCTIONS) are replaced by one that records
# a kwb_draw(N) node (torch.fx would otherwise bake a call with constant arguments in as a
# constant tensor), so each random call reads its "draw" argument; forward's trailing arguments
# that default to None and the spec does not pass (`h0=None`) are traced as None.
#
# Numerics: float (f32) arithmetic like PyTorch's, no TF32. Convolution accumulates in float in
# index order, linear/matmul in float blocks of 256 terms (a dot product of 2^20 terms stays within
# 1e-4); reductions over a dimension (sum, mean, logsumexp, softmax's sum, the
# norms' statistics) accumulate in double, since they may run over millions of terms (a
# BatchNorm's batch statistics). BatchNorm follows the module's mode as constructed (training:
# batch statistics, biased variance; the running statistics are not updated).
#
# Kernel launches are written `name<<<blocks, threads, 0, stream>>>(...)` on one line, each
# followed by `if ((err = cudaGetLastError()) != cudaSuccess) break;`; the CPU test
# (tests/starter/) rewrites exactly that launch form to run the kernels on the host.

import json
import math
import operator
import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kwb_problem_state  # noqa: E402  (beside this file: the random functions a draw answers)

MAX_RANK = 8
THREADS = 256
C_KEYWORDS = set("""alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
char16_t char32_t class compl concept const consteval constexpr constinit const_cast continue
co_await co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast requires return short
signed sizeof static static_assert static_cast struct switch template this thread_local throw true
try typedef typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq
args stream err main NULL INFINITY NAN""".split())
PARAM_CTYPES = {"f32": "float", "f64": "double", "i64": "long long", "i32": "int"}


class Refuse(Exception):
    pass


class UsageError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Values of the interpretation: dimensions, scalars, tensors.

class Dim:
    """A dimension: its C expression (an integer literal or a variable) and its value here."""
    __slots__ = ("c", "v")

    def __init__(self, c, v):
        self.c, self.v = c, int(v)

    def is_lit(self):
        return re.fullmatch(r"-?\d+", self.c) is not None

    def __repr__(self):
        return "Dim(%s=%d)" % (self.c, self.v)


def lit(n):
    return Dim(str(int(n)), int(n))


class Scalar:
    """A float scalar: its C expression (of type float) and its value when it is a literal."""
    __slots__ = ("c", "v")

    def __init__(self, c, v=None):
        self.c, self.v = c, v


class Buf:
    """A device buffer: a kernel argument or a temporary the launcher allocates."""

    def __init__(self, ident, kind, name=None, const=False):
        self.id, self.kind, self.name, self.const = ident, kind, name, const
        self.numel = None  # Dim, for temporaries


class T:
    """A contiguous f32 tensor value: a buffer and a shape of Dims."""

    def __init__(self, buf, shape):
        self.buf, self.shape = buf, list(shape)


def float_literal(x):
    """The C float literal of x rounded to f32 (as PyTorch casts a Python scalar for f32)."""
    x = float(x)
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "(-INFINITY)"
    f = struct.unpack("f", struct.pack("f", x))[0] if abs(x) < 3.5e38 else x
    if math.isinf(f):
        return "INFINITY" if f > 0 else "(-INFINITY)"
    for p in range(1, 10):
        s = "%.*g" % (p, f)
        if struct.unpack("f", struct.pack("f", float(s)))[0] == f:
            break
    if "e" not in s and "." not in s and "n" not in s:
        s += ".0"
    return ("(%sf)" % s) if s.startswith("-") else s + "f"


def scalar_of(x, what):
    if isinstance(x, Scalar):
        return x
    if isinstance(x, bool):
        return Scalar(float_literal(float(x)), float(x))
    if isinstance(x, (int, float)):
        return Scalar(float_literal(x), float(x))
    if isinstance(x, Dim):
        return Scalar("static_cast<float>(%s)" % x.c, float(x.v))
    raise Refuse("%s is %s, where the starter writer handles a number" % (what, kind_of(x)))


def kind_of(x):
    if isinstance(x, T):
        return "a tensor"
    if isinstance(x, Scalar):
        return "a scalar"
    if isinstance(x, Dim):
        return "a size"
    return "a %s" % type(x).__name__


# ---------------------------------------------------------------------------------------------
# Kernels shared by every starter that uses them (emitted once, before the step kernels).

GRID_STRIDE = "for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)"

LIBRARY = {
    "helpers": r"""
// Blocks for a grid-stride loop over n elements, THREADS threads a block.
static unsigned int kwb_blocks(long long n) {
  long long b = (n + THREADS - 1) / THREADS;
  if (b < 1) b = 1;
  if (b > 65535LL * 16) b = 65535LL * 16;
  return static_cast<unsigned int>(b);
}
""".replace("THREADS", str(THREADS)),
    "unravel": r"""
// Splits the flat index i of a [planes, od, oh, ow] tensor: sets oz, oy, ox, returns the plane.
__device__ __forceinline__ long long kwb_unravel(long long i, long long od, long long oh, long long ow,
                                                 long long &oz, long long &oy, long long &ox) {
  ox = i % ow;
  oy = (i / ow) % oh;
  oz = (i / (ow * oh)) % od;
  return i / (ow * oh * od);
}
""",
    "broadcast": r"""
// Index arithmetic of a broadcast elementwise operation: the output's sizes and, for each
// operand, its stride along every output dimension (0 where the operand is broadcast).
struct KwbBroadcast {
  int rank;
  long long size[8];
  long long stride_a[8];
  long long stride_b[8];
};

// Fills `bc` for operands of shapes a[ra] and b[rb] (contiguous) broadcast to out[ro].
static KwbBroadcast kwb_broadcast(int ro, const long long *out, int ra, const long long *a, int rb, const long long *b) {
  KwbBroadcast bc;
  bc.rank = ro;
  long long sa = 1, sb = 1;
  for (int d = ro - 1; d >= 0; --d) {
    bc.size[d] = out[d];
    int da = d - (ro - ra), db = d - (ro - rb);
    long long na = da >= 0 ? a[da] : 1, nb = db >= 0 ? b[db] : 1;
    bc.stride_a[d] = na == 1 ? 0 : sa;
    bc.stride_b[d] = nb == 1 ? 0 : sb;
    sa *= na;
    sb *= nb;
  }
  return bc;
}

__device__ __forceinline__ void kwb_offsets(const KwbBroadcast &bc, long long i, long long &ia, long long &ib) {
  ia = 0;
  ib = 0;
  for (int d = bc.rank - 1; d >= 0; --d) {
    long long c = i % bc.size[d];
    i /= bc.size[d];
    ia += c * bc.stride_a[d];
    ib += c * bc.stride_b[d];
  }
}
""",
    "permute": r"""
// out = x.permute(perm) made contiguous: `size` is the output's shape, `stride` x's stride along
// each output dimension.
struct KwbPermute {
  int rank;
  long long size[8];
  long long stride[8];
};

__global__ void kwb_permute_copy(const float *x, float *out, long long n, KwbPermute p) {
  GRID_STRIDE {
    long long r = i, src = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      src += (r % p.size[d]) * p.stride[d];
      r /= p.size[d];
    }
    out[i] = x[src];
  }
}
""",
    "copy": r"""
// out = x (a contiguous copy).
__global__ void kwb_copy(const float *x, float *out, long long n) {
  GRID_STRIDE out[i] = x[i];
}
""",
    "linear": r"""
// torch.nn.functional.linear: y[m][j] = sum_k x[m][k] * w[j][k] + b[j] (b may be null);
// x is [m_rows, k_in], w is [n_out, k_in], y is [m_rows, n_out]. One thread per output element,
// float accumulation in blocks of 256 terms added up in float (as a blocked GEMM does), so a
// long dot product (k_in ~ 10^6) stays within 1e-4 of PyTorch.
__global__ void kwb_linear(const float *x, const float *w, const float *b, float *y, long long m_rows, long long n_out, long long k_in) {
  long long n = m_rows * n_out;
  GRID_STRIDE {
    long long m = i / n_out, j = i % n_out;
    const float *xr = x + m * k_in, *wr = w + j * k_in;
    float acc = 0.0f;
    for (long long k0 = 0; k0 < k_in; k0 += 256) {
      long long k1 = k0 + 256 < k_in ? k0 + 256 : k_in;
      float part = 0.0f;
      for (long long k = k0; k < k1; ++k) part += xr[k] * wr[k];
      acc += part;
    }
    y[i] = b ? acc + b[j] : acc;
  }
}
""",
    "matmul": r"""
// torch.matmul of a [batch, m_rows, k_in] by b [batch or 1, k_in, n_out] (b_batch_stride 0 when b
// is one matrix for every batch): y[p][m][j] = sum_k a[p][m][k] * b[p][k][j], float accumulation
// in blocks of 256 terms as in kwb_linear.
__global__ void kwb_matmul(const float *a, const float *b, float *y, long long batch, long long m_rows, long long n_out, long long k_in, long long b_batch_stride) {
  long long n = batch * m_rows * n_out;
  GRID_STRIDE {
    long long j = i % n_out, m = (i / n_out) % m_rows, p = i / (n_out * m_rows);
    const float *ar = a + (p * m_rows + m) * k_in, *bc = b + p * b_batch_stride + j;
    float acc = 0.0f;
    for (long long k0 = 0; k0 < k_in; k0 += 256) {
      long long k1 = k0 + 256 < k_in ? k0 + 256 : k_in;
      float part = 0.0f;
      for (long long k = k0; k < k1; ++k) part += ar[k] * bc[k * n_out];
      acc += part;
    }
    y[i] = acc;
  }
}
""",
    "conv": r"""
// Convolution (torch.nn.Conv1d/2d/3d, zero padding), written for three spatial dimensions: a 2-D
// convolution runs with depth 1 (id = od = kd = 1, stride/dilation 1, padding 0 along it), a 1-D
// one with depth and height 1. x [nb, cin, id, ih, iw], w [cout, cin / groups, kd, kh, kw],
// b [cout] or null, y [nb, cout, od, oh, ow]. One thread per output element, float accumulation.
__global__ void kwb_conv(const float *x, const float *w, const float *b, float *y,
                         long long nb, long long cin, long long id, long long ih, long long iw,
                         long long cout, long long od, long long oh, long long ow,
                         int kd, int kh, int kw, int sd, int sh, int sw, int pd, int ph, int pw,
                         int dd, int dh, int dw, long long groups) {
  long long n = nb * cout * od * oh * ow;
  long long cin_g = cin / groups, cout_g = cout / groups;
  GRID_STRIDE {
    long long oz, oy, ox, plane = kwb_unravel(i, od, oh, ow, oz, oy, ox);
    long long co = plane % cout, nn = plane / cout;
    long long g = co / cout_g;
    float acc = 0.0f;
    for (long long ci = 0; ci < cin_g; ++ci) {
      const float *xc = x + (nn * cin + g * cin_g + ci) * id * ih * iw;
      const float *wc = w + (co * cin_g + ci) * kd * kh * kw;
      for (int a = 0; a < kd; ++a) {
        long long z = oz * sd - pd + a * dd;
        if (z < 0 || z >= id) continue;
        for (int c = 0; c < kh; ++c) {
          long long yy = oy * sh - ph + c * dh;
          if (yy < 0 || yy >= ih) continue;
          for (int e = 0; e < kw; ++e) {
            long long xx = ox * sw - pw + e * dw;
            if (xx < 0 || xx >= iw) continue;
            acc += xc[(z * ih + yy) * iw + xx] * wc[(a * kh + c) * kw + e];
          }
        }
      }
    }
    y[i] = b ? acc + b[co] : acc;
  }
}
""",
    "conv_transpose": r"""
// Transposed convolution (torch.nn.ConvTranspose1d/2d/3d), written for three spatial dimensions
// as kwb_conv is. x [nb, cin, id, ih, iw], w [cin, cout / groups, kd, kh, kw], b [cout] or null,
// y [nb, cout, od, oh, ow]: y[o] gathers x[i] * w[k] over every i, k with o = i * s - p + k * d.
// One thread per output element, float accumulation.
__global__ void kwb_conv_transpose(const float *x, const float *w, const float *b, float *y,
                                   long long nb, long long cin, long long id, long long ih, long long iw,
                                   long long cout, long long od, long long oh, long long ow,
                                   int kd, int kh, int kw, int sd, int sh, int sw, int pd, int ph, int pw,
                                   int dd, int dh, int dw, long long groups) {
  long long n = nb * cout * od * oh * ow;
  long long cin_g = cin / groups, cout_g = cout / groups;
  GRID_STRIDE {
    long long oz, oy, ox, plane = kwb_unravel(i, od, oh, ow, oz, oy, ox);
    long long co = plane % cout, nn = plane / cout;
    long long g = co / cout_g, cg = co % cout_g;
    float acc = 0.0f;
    for (long long ci = 0; ci < cin_g; ++ci) {
      const float *xc = x + (nn * cin + g * cin_g + ci) * id * ih * iw;
      const float *wc = w + ((g * cin_g + ci) * cout_g + cg) * kd * kh * kw;
      for (int a = 0; a < kd; ++a) {
        long long tz = oz + pd - a * dd;
        if (tz < 0 || tz % sd != 0 || tz / sd >= id) continue;
        for (int c = 0; c < kh; ++c) {
          long long ty = oy + ph - c * dh;
          if (ty < 0 || ty % sh != 0 || ty / sh >= ih) continue;
          for (int e = 0; e < kw; ++e) {
            long long tx = ox + pw - e * dw;
            if (tx < 0 || tx % sw != 0 || tx / sw >= iw) continue;
            acc += xc[((tz / sd) * ih + ty / sh) * iw + tx / sw] * wc[(a * kh + c) * kw + e];
          }
        }
      }
    }
    y[i] = b ? acc + b[co] : acc;
  }
}
""",
    "moments": r"""
// Statistics of a normalization: for every group q of `groups`, the mean and 1/sqrt(var + eps)
// (biased variance) of the outer * inner elements x[(o * groups + q) * inner + j]. One thread per
// group, double accumulation, two passes.
__global__ void kwb_moments(const float *x, float *mean, float *rstd, long long outer, long long groups, long long inner, double eps) {
  long long n = groups;
  GRID_STRIDE {
    double s = 0.0;
    for (long long o = 0; o < outer; ++o)
      for (long long j = 0; j < inner; ++j) s += x[(o * groups + i) * inner + j];
    double count = static_cast<double>(outer * inner), mu = s / count, v = 0.0;
    for (long long o = 0; o < outer; ++o)
      for (long long j = 0; j < inner; ++j) {
        double d = x[(o * groups + i) * inner + j] - mu;
        v += d * d;
      }
    mean[i] = static_cast<float>(mu);
    rstd[i] = static_cast<float>(1.0 / sqrt(v / count + eps));
  }
}
""",
    "reduce": r"""
// Reductions over the middle dimension of x viewed as [outer, r, inner]; one thread per output
// element out[o * inner + j].
__global__ void kwb_reduce_sum(const float *x, float *out, long long outer, long long r, long long inner, int mean) {
  long long n = outer * inner;
  GRID_STRIDE {
    const float *p = x + (i / inner) * r * inner + i % inner;
    double s = 0.0;  // torch.sum / torch.mean (double accumulation)
    for (long long k = 0; k < r; ++k) s += p[k * inner];
    out[i] = static_cast<float>(mean ? s / static_cast<double>(r) : s);
  }
}

__global__ void kwb_reduce_max(const float *x, float *out, long long outer, long long r, long long inner, int is_min) {
  long long n = outer * inner;
  GRID_STRIDE {
    const float *p = x + (i / inner) * r * inner + i % inner;
    float m = p[0];  // torch.amax / amin / max(dim).values / min(dim).values: NaN wins
    for (long long k = 1; k < r; ++k) {
      float v = p[k * inner];
      if (isnan(v) || (is_min ? v < m : v > m)) m = v;
      if (isnan(m)) break;
    }
    out[i] = m;
  }
}

__global__ void kwb_logsumexp(const float *x, float *out, long long outer, long long r, long long inner) {
  long long n = outer * inner;
  GRID_STRIDE {
    const float *p = x + (i / inner) * r * inner + i % inner;
    float m = -INFINITY;  // torch.logsumexp: max + log(sum(exp(x - max))), max taken as 0 when infinite
    for (long long k = 0; k < r; ++k) m = fmaxf(m, p[k * inner]);
    if (isinf(m)) m = 0.0f;
    double s = 0.0;
    for (long long k = 0; k < r; ++k) s += expf(p[k * inner] - m);
    out[i] = logf(static_cast<float>(s)) + m;
  }
}
""",
    "softmax": r"""
// torch.softmax / log_softmax over the middle dimension of x viewed as [outer, r, inner]; one
// thread per (outer, inner) row, writing its r outputs.
__global__ void kwb_softmax(const float *x, float *out, long long outer, long long r, long long inner, int log) {
  long long n = outer * inner;
  GRID_STRIDE {
    long long base = (i / inner) * r * inner + i % inner;
    float m = -INFINITY;
    for (long long k = 0; k < r; ++k) m = fmaxf(m, x[base + k * inner]);
    double s = 0.0;
    for (long long k = 0; k < r; ++k) s += expf(x[base + k * inner] - m);
    float sf = static_cast<float>(s), lse = logf(sf);
    for (long long k = 0; k < r; ++k) {
      float v = x[base + k * inner] - m;
      out[base + k * inner] = log ? v - lse : expf(v) / sf;
    }
  }
}
""",
    "pool": r"""
// Pooling written for three spatial dimensions (1-D and 2-D pools run with depth, height 1):
// x [planes, id, ih, iw] (planes = batch * channels), y [planes, od, oh, ow].
// torch max_pool: the max over the window inside the input (NaN wins).
__global__ void kwb_max_pool(const float *x, float *y, long long planes, long long id, long long ih, long long iw,
                             long long od, long long oh, long long ow, int kd, int kh, int kw,
                             int sd, int sh, int sw, int pd, int ph, int pw, int dd, int dh, int dw) {
  long long n = planes * od * oh * ow;
  GRID_STRIDE {
    long long oz, oy, ox, pl = kwb_unravel(i, od, oh, ow, oz, oy, ox);
    const float *xp = x + pl * id * ih * iw;
    float m = -INFINITY;
    for (int a = 0; a < kd; ++a) {
      long long z = oz * sd - pd + a * dd;
      if (z < 0 || z >= id) continue;
      for (int c = 0; c < kh; ++c) {
        long long yy = oy * sh - ph + c * dh;
        if (yy < 0 || yy >= ih) continue;
        for (int e = 0; e < kw; ++e) {
          long long xx = ox * sw - pw + e * dw;
          if (xx < 0 || xx >= iw) continue;
          float v = xp[(z * ih + yy) * iw + xx];
          if (v > m || isnan(v)) m = v;
        }
      }
    }
    y[i] = m;
  }
}

// torch avg_pool: the window's sum over its elements inside the input, divided by the window's
// size clipped to the padded input (count_include_pad), by the elements inside (not), or by
// divisor (> 0: divisor_override).
__global__ void kwb_avg_pool(const float *x, float *y, long long planes, long long id, long long ih, long long iw,
                             long long od, long long oh, long long ow, int kd, int kh, int kw,
                             int sd, int sh, int sw, int pd, int ph, int pw, int count_include_pad, int divisor) {
  long long n = planes * od * oh * ow;
  GRID_STRIDE {
    long long oz, oy, ox, pl = kwb_unravel(i, od, oh, ow, oz, oy, ox);
    const float *xp = x + pl * id * ih * iw;
    long long z0 = oz * sd - pd, y0 = oy * sh - ph, x0 = ox * sw - pw;
    long long z1 = z0 + kd < id + pd ? z0 + kd : id + pd;
    long long y1 = y0 + kh < ih + ph ? y0 + kh : ih + ph;
    long long x1 = x0 + kw < iw + pw ? x0 + kw : iw + pw;
    long long padded = (z1 - z0) * (y1 - y0) * (x1 - x0);
    z0 = z0 > 0 ? z0 : 0; y0 = y0 > 0 ? y0 : 0; x0 = x0 > 0 ? x0 : 0;
    z1 = z1 < id ? z1 : id; y1 = y1 < ih ? y1 : ih; x1 = x1 < iw ? x1 : iw;
    float s = 0.0f;
    for (long long z = z0; z < z1; ++z)
      for (long long yy = y0; yy < y1; ++yy)
        for (long long xx = x0; xx < x1; ++xx) s += xp[(z * ih + yy) * iw + xx];
    long long count = divisor > 0 ? divisor : count_include_pad ? padded : (z1 - z0) * (y1 - y0) * (x1 - x0);
    y[i] = s / static_cast<float>(count);
  }
}

// torch adaptive_avg_pool / adaptive_max_pool: output cell o covers input [floor(o * in / out),
// ceil((o + 1) * in / out)) along each dimension.
__global__ void kwb_adaptive_pool(const float *x, float *y, long long planes, long long id, long long ih, long long iw,
                                  long long od, long long oh, long long ow, int is_max) {
  long long n = planes * od * oh * ow;
  GRID_STRIDE {
    long long oz, oy, ox, pl = kwb_unravel(i, od, oh, ow, oz, oy, ox);
    const float *xp = x + pl * id * ih * iw;
    long long z0 = oz * id / od, z1 = ((oz + 1) * id + od - 1) / od;
    long long y0 = oy * ih / oh, y1 = ((oy + 1) * ih + oh - 1) / oh;
    long long x0 = ox * iw / ow, x1 = ((ox + 1) * iw + ow - 1) / ow;
    float s = is_max ? -INFINITY : 0.0f;
    for (long long z = z0; z < z1; ++z)
      for (long long yy = y0; yy < y1; ++yy)
        for (long long xx = x0; xx < x1; ++xx) {
          float v = xp[(z * ih + yy) * iw + xx];
          if (is_max) { if (v > s || isnan(v)) s = v; } else s += v;
        }
    y[i] = is_max ? s : s / static_cast<float>((z1 - z0) * (y1 - y0) * (x1 - x0));
  }
}
""",
}
LIBRARY["pool_ceil"] = r"""
// A pooled size with ceil_mode=True: ceil((i + num) / s) + 1, less one when the last window
// would start inside the right padding (num = 2 * padding - dilation * (kernel - 1) - 1).
static long long kwb_pool_ceil(long long i, long long num, long long s, long long p) {
  long long o = (i + num + s - 1) / s + 1;
  if ((o - 1) * s >= i + p) --o;
  return o;
}
"""
LIBRARY_ORDER = ["helpers", "unravel", "pool_ceil", "broadcast", "permute", "copy", "linear", "matmul", "conv", "conv_transpose",
                 "moments", "reduce", "softmax", "pool"]


# ---------------------------------------------------------------------------------------------
# Elementwise operations: C expressions of `v` (the element) and scalar parameters p0, p1, ...

def gelu_expr(approximate):
    if approximate == "tanh":
        return "0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)))"
    if approximate != "none":
        raise Refuse("gelu with approximate=%r is not handled" % (approximate,))
    return "0.5f * v * (1.0f + erff(v * 0.7071067811865476f))"


class Step:
    def __init__(self, label, where):
        self.label, self.where = label, where
        self.number = None
        self.lines = []
        self.bufs = set()       # buffer ids this step reads or writes
        self.allocs = []        # temporaries created here


class Gen:
    """Interprets one traced graph into kernels and launcher steps."""

    def __init__(self, spec, gm, model, sizes, path):
        self.spec, self.gm, self.model, self.sizes, self.path = spec, gm, model, sizes, path
        self.modules = dict(model.named_modules())
        self.library = set(["helpers"])
        self.kernels = []       # step kernels' text
        self.steps = []
        self.step = None
        self.bufs = {}
        self.taken = set()
        self.dim_count = 0
        self.tmp_count = 0
        self.notes = []
        self.arg_vals = {}      # kernel arg name -> value (T, Scalar, Dim)
        self.locals = {}        # kernel arg name -> C local name
        self.node_where = None
        self.listed = 0
        self.dim_cache = {}
        self.operand_label = ""
        self._read_args()

    # -- names -------------------------------------------------------------------------------
    def fresh(self, prefix):
        while True:
            if prefix in ("dim", "tmp"):
                n = (self.dim_count if prefix == "dim" else self.tmp_count) + 1
                if prefix == "dim":
                    self.dim_count = n
                else:
                    self.tmp_count = n
                name = "%s%d" % (prefix, n)
            else:
                name = prefix
            if name not in self.taken:
                self.taken.add(name)
                return name
            if prefix not in ("dim", "tmp"):
                prefix += "_"

    def _read_args(self):
        for arg in self.spec["kernel_args"]:
            self.taken.add(arg["name"])
        # sizes first: a tensor's shape may name a size declared after it
        args = sorted(self.spec["kernel_args"], key=lambda a: a["kind"] == "tensor")
        for arg in args:
            name = arg["name"]
            local = name if name not in C_KEYWORDS and not name.startswith("kwb_") else None
            if local is None:
                self.taken.discard(name)
                local = self.fresh(name + "_v")
            self.locals[name] = local
            kind = arg["kind"]
            if kind == "size":
                if name not in self.sizes:
                    raise Refuse("size %s has no value in the spec's sizes" % name)
                self.arg_vals[name] = Dim(local, self.sizes[name])
            elif kind == "param":
                ctype = PARAM_CTYPES.get(arg.get("dtype"))
                if ctype is None:
                    raise Refuse("param %s has dtype %r, where the starter writer handles %s"
                                 % (name, arg.get("dtype"), ", ".join(PARAM_CTYPES)))
                self.arg_vals[name] = Scalar(local if ctype == "float" else "static_cast<float>(%s)" % local)
            elif kind == "tensor":
                if arg.get("dtype") != "f32":
                    if arg.get("state") and arg.get("role") != "out" and arg.get("state", "").endswith("num_batches_tracked"):
                        self.arg_vals[name] = None  # an integer buffer forward does not read
                        continue
                    raise Refuse("tensor %s is %s, where the starter writer handles f32 tensors only"
                                 % (name, arg.get("dtype")))
                shape = []
                for d in arg.get("shape", []):
                    if isinstance(d, int) and not isinstance(d, bool):
                        shape.append(lit(d))
                    elif isinstance(d, str) and d in self.arg_vals and isinstance(self.arg_vals[d], Dim):
                        shape.append(self.arg_vals[d])
                    else:
                        raise Refuse("tensor %s's shape names %r, which is not a size argument" % (name, d))
                buf = Buf(name, "arg", local, const=arg.get("role") != "out")
                self.bufs[name] = buf
                self.arg_vals[name] = T(buf, shape)
            else:
                raise Refuse("kernel argument %s has kind %r" % (name, kind))

    # -- emission ----------------------------------------------------------------------------
    def begin(self, label):
        """Starts a step; label None: shape arithmetic only (not listed, no kernel)."""
        self.step = Step(label, self.node_where)
        if label is not None:
            self.listed += 1
            self.step.number = self.listed
        self.steps.append(self.step)
        return self.step

    def line(self, text):
        self.step.lines.append(text)

    def ref(self, t):
        """The C pointer of a tensor value, as a token resolved when the source is rendered."""
        self.step.bufs.add(t.buf.id)
        return "@%s@" % t.buf.id

    def dim(self, expr, value):
        if re.fullmatch(r"-?\d+|[A-Za-z_]\w*", expr):
            return Dim(expr, value)
        expr = re.sub(r" \+ -(\d)", r" - \1", expr)
        if expr in self.dim_cache:  # every dimension is declared at the launcher's top scope
            return Dim(self.dim_cache[expr], value)
        name = self.fresh("dim")
        self.line("const long long %s = %s;" % (name, expr))
        self.dim_cache[expr] = name
        return Dim(name, value)

    def mul(self, dims):
        lits = 1
        syms = []
        for d in dims:
            if d.is_lit():
                lits *= d.v
            else:
                syms.append(d)
        if not syms or lits == 0:
            return lit(lits)
        value = lits
        for d in syms:
            value *= d.v
        parts = [d.c for d in syms] + ([str(lits)] if lits != 1 else [])
        return self.dim(" * ".join(parts), value)

    def new_tensor(self, shape):
        n = self.mul(shape)
        ident = "t%d" % (len(self.bufs) + 1)
        buf = Buf(ident, "tmp", None)
        buf.numel = n
        self.bufs[ident] = buf
        self.step.allocs.append(ident)
        self.step.bufs.add(ident)
        self.line("@alloc %s@" % ident)
        return T(buf, shape)

    def launch(self, kernel, n, args):
        self.line("%s<<<kwb_blocks(%s), %d, 0, stream>>>(%s);" % (kernel, n.c, THREADS, ", ".join(args)))
        self.line("if ((err = cudaGetLastError()) != cudaSuccess) break;")

    def step_kernel(self, name, params, body, comment):
        number = self.step.number
        kname = "step%d_%s" % (number, name)
        self.kernels.append("// Step %d: %s\n__global__ void %s(%s) {\n  %s {\n%s\n  }\n}\n"
                            % (number, comment, kname, ", ".join(params), GRID_STRIDE,
                               "\n".join("    " + b for b in body)))
        return kname

    # -- elementwise -------------------------------------------------------------------------
    def unary(self, x, name, expr, scalars=(), comment=None):
        """out[i] = expr(v = x[i], p0, p1, ...)"""
        x = self.tensor(x, name)
        s = self.begin(name if comment is None else comment)
        out = self.new_tensor(x.shape)
        n = out.buf.numel
        params = ["const float *x", "float *out", "long long n"] + ["float p%d" % k for k in range(len(scalars))]
        body = ["float v = x[i];", "out[i] = %s;" % expr]
        k = self.step_kernel(re.sub(r"\W", "_", name.split(" ")[0]), params, body, "%s%s" % (s.label, self.where_text()))
        self.launch(k, n, [self.ref(x), self.ref(out), n.c] + [sc.c for sc in scalars])
        return out

    def binary(self, a, b, op, name, comment=None):
        """Elementwise op of two operands, tensors or scalars, with broadcasting. op(a, b) -> C."""
        if not isinstance(a, T) and not isinstance(b, T):
            raise Refuse("%s of two scalars is not a tensor operation the starter writer handles" % name)
        if not isinstance(b, T):
            sb = scalar_of(b, "%s's operand" % name)
            if sb.v is not None:
                return self.unary(a, name, op("v", sb.c), (), comment)
            return self.unary(a, name, op("v", "p0"), (sb,), comment)
        if not isinstance(a, T):
            sa = scalar_of(a, "%s's operand" % name)
            if sa.v is not None:
                return self.unary(b, name, op(sa.c, "v"), (), comment)
            return self.unary(b, name, op("p0", "v"), (sa,), comment)
        a, b = self.tensor(a, name), self.tensor(b, name)
        if b.shape == [] or all(d.is_lit() and d.v == 1 for d in b.shape) and len(b.shape) <= len(a.shape):
            pass
        s = self.begin(name if comment is None else comment)
        shape = self.broadcast_shape(a.shape, b.shape, name)
        out = self.new_tensor(shape)
        n = out.buf.numel
        same = [d.c for d in a.shape] == [d.c for d in shape] and [d.c for d in b.shape] == [d.c for d in shape]
        label = re.sub(r"\W", "_", name.split(" ")[0])
        where = self.where_text()
        if same:
            params = ["const float *a", "const float *b", "float *out", "long long n"]
            body = ["out[i] = %s;" % op("a[i]", "b[i]")]
            k = self.step_kernel(label, params, body, "%s%s (same shapes)" % (s.label, where))
            self.launch(k, n, [self.ref(a), self.ref(b), self.ref(out), n.c])
            return out
        self.library.add("broadcast")
        bc = self.fresh("bc")
        arrays = []
        for tag, shp in (("o", shape), ("a", a.shape), ("b", b.shape)):
            nm = self.fresh("%s_%s" % (bc, tag))
            vals = ", ".join(d.c for d in shp) or "1"
            self.line("const long long %s[%d] = {%s};" % (nm, max(len(shp), 1), vals))
            arrays.append(nm)
        self.line("const KwbBroadcast %s = kwb_broadcast(%d, %s, %d, %s, %d, %s);"
                  % (bc, len(shape), arrays[0], len(a.shape), arrays[1], len(b.shape), arrays[2]))
        params = ["const float *a", "const float *b", "float *out", "long long n", "KwbBroadcast bc"]
        body = ["long long ia, ib;", "kwb_offsets(bc, i, ia, ib);", "out[i] = %s;" % op("a[ia]", "b[ib]")]
        k = self.step_kernel(label, params, body, "%s%s (broadcast)" % (s.label, where))
        self.launch(k, n, [self.ref(a), self.ref(b), self.ref(out), n.c, bc])
        return out

    def broadcast_shape(self, sa, sb, name):
        if len(sa) > MAX_RANK or len(sb) > MAX_RANK:
            raise Refuse("%s on a tensor of rank above %d" % (name, MAX_RANK))
        r = max(len(sa), len(sb))
        sa = [lit(1)] * (r - len(sa)) + sa
        sb = [lit(1)] * (r - len(sb)) + sb
        out = []
        for x, y in zip(sa, sb):
            if x.c == y.c:
                out.append(x)
            elif x.is_lit() and x.v == 1:
                out.append(y)
            elif y.is_lit() and y.v == 1:
                out.append(x)
            else:
                if x.v != y.v and x.v != 1 and y.v != 1:
                    raise Refuse("%s broadcasts sizes %d and %d" % (name, x.v, y.v))
                out.append(self.dim("(%s == 1 ? %s : %s)" % (x.c, y.c, x.c), y.v if x.v == 1 else x.v))
        return out

    def tensor(self, x, name):
        if not isinstance(x, T):
            raise Refuse("%s's input is %s, where the starter writer handles a tensor" % (name, kind_of(x)))
        return x

    def where_text(self):
        return (" (%s)" % self.node_where) if self.node_where else ""

    # -- shapes --------------------------------------------------------------------------------
    def norm_dim(self, d, rank, name):
        if isinstance(d, Dim):
            if not d.is_lit():
                raise Refuse("%s takes a dimension computed at run time" % name)
            d = d.v
        if not isinstance(d, int) or isinstance(d, bool):
            raise Refuse("%s takes dimension %r, where the starter writer handles an int" % (name, d))
        if d < -max(rank, 1) or d >= max(rank, 1):
            raise Refuse("%s takes dimension %d of a rank-%d tensor" % (name, d, rank))
        return d % max(rank, 1)

    def split3(self, x, dims, name):
        """x viewed as [outer, r, inner] around the adjacent dims: three Dims."""
        dims = sorted(dims)
        if dims != list(range(dims[0], dims[-1] + 1)):
            raise Refuse("%s over dimensions %s, which are not adjacent" % (name, dims))
        outer = self.mul(x.shape[:dims[0]])
        r = self.mul(x.shape[dims[0]:dims[-1] + 1])
        inner = self.mul(x.shape[dims[-1] + 1:])
        return outer, r, inner

    def spatial3(self, shape, nsp, name):
        """The last nsp dims of shape, padded in front with 1s to three."""
        if len(shape) < nsp + 1:
            raise Refuse("%s on a tensor of rank %d" % (name, len(shape)))
        sp = shape[len(shape) - nsp:]
        return [lit(1)] * (3 - nsp) + sp

    def conv_out(self, i, k, s, p, d, name):
        """floor((i + 2p - d(k-1) - 1) / s) + 1, in C (truncation is floor for a valid size)."""
        k = k if isinstance(k, Dim) else lit(k)
        value = (i.v + 2 * p - d * (k.v - 1) - 1) // s + 1
        if i.is_lit() and k.is_lit():
            return lit(value)
        if k.is_lit():
            num = 2 * p - d * (k.v - 1) - 1
            expr = ("(%s + %d) / %d + 1" % (i.c, num, s)) if s != 1 else "%s + %d" % (i.c, num + 1)
        else:
            expr = "(%s + %d - %d * (%s - 1) - 1) / %d + 1" % (i.c, 2 * p, d, k.c, s)
        return self.dim(expr, value)

    def pool_out(self, i, k, s, p, d, ceil_mode, name):
        if not ceil_mode:
            return self.conv_out(i, k, s, p, d, name)
        num = 2 * p - d * (k - 1) - 1
        value = -(-(i.v + num) // s) + 1
        if (value - 1) * s >= i.v + p:
            value -= 1
        expr = "kwb_pool_ceil(%s, %d, %d, %d)" % (i.c, num, s, p)
        self.library.add("pool_ceil")
        return lit(value) if i.is_lit() else self.dim(expr, value)

    # -- draws -----------------------------------------------------------------------------------
    def draw_arg(self, number):
        """The kernel argument forward's random call `number` reads (its "draw")."""
        for arg in self.spec["kernel_args"]:
            if arg.get("kind") == "tensor" and arg.get("draw") == number and arg.get("role") != "out":
                return self.arg_vals[arg["name"]]
        raise Refuse("forward's random call %d has no kernel argument (no \"draw\": %d)" % (number, number))

    # -- state tensors -------------------------------------------------------------------------
    def state(self, key, required=True):
        for arg in self.spec["kernel_args"]:
            if arg.get("kind") == "tensor" and arg.get("state") == key and arg.get("role") != "out":
                v = self.arg_vals.get(arg["name"])
                if isinstance(v, T):
                    return v
        if required:
            raise Refuse("forward reads %s, which no kernel argument carries (no \"state\": \"%s\")" % (key, key))
        return None

    def get_attr(self, target):
        """A state tensor's kernel argument, or the value of a one-element constant the trace made
        (torch.tensor(3.0) in forward becomes the graph's _tensor_constant0)."""
        found = self.state(target, required=False)
        if found is not None:
            return found
        obj = self.gm
        for part in target.split("."):
            obj = getattr(obj, part, None)
        import torch
        if isinstance(obj, torch.Tensor) and obj.device.type != "meta" and obj.numel() == 1 and obj.dim() == 0 \
                and not any(True for _ in self.model.named_parameters() if _[0] == target) \
                and obj.dtype in (torch.float32, torch.float64, torch.int64, torch.int32, torch.bool):
            return scalar_of(obj.item(), "constant %s" % target)
        return self.state(target)

    def module_state(self, path, name):
        m = self.modules[path]
        t = getattr(m, name, None)
        if t is None:
            return None
        return self.state((path + "." if path else "") + name)


class Unhandled:
    """A value forward computes but the starter cannot (e.g. argmax indices): refuses when used."""

    def __init__(self, reason):
        self.reason = reason


def tup(v, n, what):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            v = list(v) * n
        if len(v) != n or not all(isinstance(e, int) and not isinstance(e, bool) for e in v):
            raise Refuse("%s is %r, where %d integers were expected" % (what, v, n))
        return list(v)
    if isinstance(v, int) and not isinstance(v, bool):
        return [v] * n
    raise Refuse("%s is %r, where an integer was expected" % (what, v))


def pad3(v, fill):
    return [fill] * (3 - len(v)) + list(v)


# ---------------------------------------------------------------------------------------------
# The operations: PyTorch's names and signatures, on interpreted values.

UNARY = {
    # name: (C expression of v, parameter names with defaults)
    "relu": ("v <= 0.0f ? 0.0f : v", {}),
    "relu6": ("fminf(fmaxf(v, 0.0f), 6.0f)", {}),
    "sigmoid": ("1.0f / (1.0f + expf(-v))", {}),
    "tanh": ("tanhf(v)", {}),
    "silu": ("v / (1.0f + expf(-v))", {}),
    "mish": ("v * tanhf(log1pf(expf(v)))", {}),
    "hardswish": ("v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f", {}),
    "hardsigmoid": ("fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f", {}),
    "selu": ("1.0507009873554805f * (v > 0.0f ? v : 1.6732632423543772f * expm1f(v))", {}),
    "exp": ("expf(v)", {}),
    "log": ("logf(v)", {}),
    "log1p": ("log1pf(v)", {}),
    "expm1": ("expm1f(v)", {}),
    "abs": ("fabsf(v)", {}),
    "neg": ("-v", {}),
    "sqrt": ("sqrtf(v)", {}),
    "rsqrt": ("1.0f / sqrtf(v)", {}),
    "square": ("v * v", {}),
    "reciprocal": ("1.0f / v", {}),
    "erf": ("erff(v)", {}),
    "sin": ("sinf(v)", {}),
    "cos": ("cosf(v)", {}),
    "floor": ("floorf(v)", {}),
    "ceil": ("ceilf(v)", {}),
    "sign": ("(v > 0.0f) - (v < 0.0f)", {}),
}

BINARY = {
    "add": lambda a, b: "%s + %s" % (a, b),
    "sub": lambda a, b: "%s - %s" % (a, b),
    "mul": lambda a, b: "%s * %s" % (a, b),
    "div": lambda a, b: "%s / %s" % (a, b),
    "minimum": lambda a, b: "fminf(%s, %s)" % (a, b),
    "maximum": lambda a, b: "fmaxf(%s, %s)" % (a, b),
    "pow": lambda a, b: "powf(%s, %s)" % (a, b),
}
DIM_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv}
DIM_C = {"add": "+", "sub": "-", "mul": "*", "floordiv": "/"}


class Interp(Gen):

    # -- elementwise functions -----------------------------------------------------------------
    def op_unary(self, name, x, **kw):
        expr, _ = UNARY[name]
        return self.unary(x, name, expr)

    def op_gelu(self, input, approximate="none"):
        return self.unary(input, "gelu" if approximate == "none" else "gelu (tanh)", gelu_expr(approximate))

    def op_softplus(self, input, beta=1.0, threshold=20.0):
        b, t = scalar_of(beta, "softplus's beta"), scalar_of(threshold, "softplus's threshold")
        if b.v is None or t.v is None:
            raise Refuse("softplus with a run-time beta or threshold")
        return self.unary(input, "softplus", "v * %s > %s ? v : log1pf(expf(v * %s)) / %s" % (b.c, t.c, b.c, b.c))

    def op_hardtanh(self, input, min_val=-1.0, max_val=1.0, inplace=False):
        lo, hi = scalar_of(min_val, "hardtanh's min_val"), scalar_of(max_val, "hardtanh's max_val")
        return self.clamp_to(input, "hardtanh", lo, hi)

    def clamp_to(self, x, name, lo, hi):
        scal = []
        expr = "v"
        for s, fn in ((lo, "fmaxf"), (hi, "fminf")):
            if s is None:
                continue
            c = s.c
            if s.v is None:
                c = "p%d" % len(scal)
                scal.append(s)
            expr = "%s(%s, %s)" % (fn, expr, c)
        return self.unary(x, name, expr, scal)

    def op_clamp(self, input, min=None, max=None):
        if isinstance(min, T) or isinstance(max, T):
            raise Refuse("clamp with tensor bounds is not handled")
        lo = None if min is None else scalar_of(min, "clamp's min")
        hi = None if max is None else scalar_of(max, "clamp's max")
        if lo is None and hi is None:
            raise Refuse("clamp without bounds")
        return self.clamp_to(input, "clamp", lo, hi)

    def op_leaky_relu(self, input, negative_slope=0.01, inplace=False):
        s = scalar_of(negative_slope, "leaky_relu's negative_slope")
        if s.v is None:
            return self.unary(input, "leaky_relu", "v > 0.0f ? v : v * p0", [s])
        return self.unary(input, "leaky_relu", "v > 0.0f ? v : v * %s" % s.c)

    def op_elu(self, input, alpha=1.0, inplace=False):
        s = scalar_of(alpha, "elu's alpha")
        return self.unary(input, "elu", "v > 0.0f ? v : %s * expm1f(v)" % s.c if s.v is not None else "v > 0.0f ? v : p0 * expm1f(v)",
                          [] if s.v is not None else [s])

    def op_dropout(self, input, p=0.5, training=True, inplace=False):
        if training and p:
            raise Refuse("dropout with p=%s in training mode makes forward's output random" % p)
        return input

    def op_identity(self, input, *args, **kw):
        return input

    def op_to(self, input, *args, **kw):
        import torch
        for a in list(args) + list(kw.values()):
            if isinstance(a, torch.dtype) and a != torch.float32:
                raise Refuse("forward converts a tensor to %s; the starter writer handles f32 only" % a)
        return input

    def op_float(self, input, *a, **kw):
        return input

    def op_tensor(self, data, dtype=None, device=None, requires_grad=False):
        if isinstance(data, (int, float, bool)) or isinstance(data, Scalar):
            return scalar_of(data, "torch.tensor's value")
        raise Refuse("torch.tensor of %r is not a scalar" % (data,))

    def op_binary(self, name, input, other, alpha=1, rounding_mode=None):
        if isinstance(input, (Dim, int)) and isinstance(other, (Dim, int)) and not isinstance(input, bool) \
                and name in ("add", "sub", "mul"):
            return self.dim_arith(name, input, other)
        if rounding_mode is not None:
            raise Refuse("div with rounding_mode=%r is not handled" % rounding_mode)
        if alpha != 1:
            if not isinstance(other, T):
                other = Scalar("(%s * %s)" % (scalar_of(other, "operand").c, scalar_of(alpha, "alpha").c),
                               None if scalar_of(other, "operand").v is None else scalar_of(other, "operand").v * alpha)
                if other.v is not None:
                    other = Scalar(float_literal(other.v), other.v)
            else:
                raise Refuse("%s with a tensor and alpha=%r is not handled" % (name, alpha))
        if name == "pow" and not isinstance(other, T):
            e = scalar_of(other, "pow's exponent")
            if e.v == 2.0:
                return self.unary(input, "pow (square)", "v * v")
            if e.v == 3.0:
                return self.unary(input, "pow (cube)", "v * v * v")
            if e.v == 0.5:
                return self.unary(input, "pow (sqrt)", "sqrtf(v)")
        return self.binary(input, other, BINARY[name], name + self.operand_label)

    def op_rsub(self, input, other, alpha=1):
        return self.op_binary("sub", other, input, alpha)

    def dim_arith(self, name, a, b):
        a = a if isinstance(a, Dim) else lit(a)
        b = b if isinstance(b, Dim) else lit(b)
        v = DIM_OPS[name](a.v, b.v)
        if a.is_lit() and b.is_lit():
            return lit(v)
        self.begin(None)
        return self.dim("%s %s %s" % (a.c, DIM_C[name], b.c), v)

    def op_minmax(self, name, input, dim=None, keepdim=False, other=None):
        # torch.max(x) / torch.max(x, dim, keepdim) / torch.max(x, other)
        if isinstance(dim, (T, Scalar)) or (isinstance(dim, float)):
            other, dim = dim, None
        if other is not None:
            return self.binary(input, other, BINARY["maximum" if name == "max" else "minimum"], name + self.operand_label)
        values = self.reduce("amax" if name == "max" else "amin", input, dim, keepdim, what="torch.%s" % name)
        if dim is None:
            return values
        return (values, Unhandled("forward uses the indices torch.%s returns, which the starter writer does not compute" % name))

    # -- reductions ----------------------------------------------------------------------------
    def reduce_dims(self, x, dim, name):
        r = len(x.shape)
        if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
            return list(range(r))
        dims = dim if isinstance(dim, (list, tuple)) else [dim]
        dims = sorted(set(self.norm_dim(d, r, name) for d in dims))
        return dims

    def reduce(self, kind, x, dim, keepdim, what):
        x = self.tensor(x, what)
        dims = self.reduce_dims(x, dim, what)
        self.begin("%s%s" % (what.replace("torch.", ""), self.operand_label))
        if x.shape:
            outer, r, inner = self.split3(x, dims, what)
        else:
            outer, r, inner = lit(1), lit(1), lit(1)
        shape = [lit(1) if i in dims else d for i, d in enumerate(x.shape)] if keepdim else \
            [d for i, d in enumerate(x.shape) if i not in dims]
        out = self.new_tensor(shape)
        self.library.add("reduce")
        args = [self.ref(x), self.ref(out), outer.c, r.c, inner.c]
        n = self.mul([outer, inner])
        if kind in ("sum", "mean"):
            self.launch("kwb_reduce_sum", n, args + ["1" if kind == "mean" else "0"])
        elif kind in ("amax", "amin"):
            self.launch("kwb_reduce_max", n, args + ["1" if kind == "amin" else "0"])
        elif kind == "logsumexp":
            self.launch("kwb_logsumexp", n, args)
        return out

    def op_sum(self, input, dim=None, keepdim=False, dtype=None):
        return self.reduce("sum", input, dim, keepdim, "torch.sum")

    def op_mean(self, input, dim=None, keepdim=False, dtype=None):
        return self.reduce("mean", input, dim, keepdim, "torch.mean")

    def op_amax(self, input, dim=(), keepdim=False):
        return self.reduce("amax", input, dim, keepdim, "torch.amax")

    def op_amin(self, input, dim=(), keepdim=False):
        return self.reduce("amin", input, dim, keepdim, "torch.amin")

    def op_logsumexp(self, input, dim, keepdim=False):
        return self.reduce("logsumexp", input, dim, keepdim, "torch.logsumexp")

    def op_softmax(self, input, dim=None, _stacklevel=3, dtype=None, log=False):
        name = "log_softmax" if log else "softmax"
        x = self.tensor(input, name)
        if dim is None:
            raise Refuse("%s without dim (PyTorch's legacy implicit dimension) is not handled" % name)
        if dtype is not None:
            return self.op_to(x, dtype) and self.op_softmax(x, dim, log=log)
        d = self.norm_dim(dim, len(x.shape), name)
        self.begin(name + self.operand_label)
        outer, r, inner = self.split3(x, [d], name) if x.shape else (lit(1), lit(1), lit(1))
        out = self.new_tensor(x.shape)
        self.library.add("softmax")
        self.launch("kwb_softmax", self.mul([outer, inner]), [self.ref(x), self.ref(out), outer.c, r.c, inner.c, "1" if log else "0"])
        return out

    def op_log_softmax(self, input, dim=None, _stacklevel=3, dtype=None):
        return self.op_softmax(input, dim, dtype=dtype, log=True)

    # -- views ---------------------------------------------------------------------------------
    def as_dim(self, v, what):
        if isinstance(v, Dim):
            return v
        if isinstance(v, int) and not isinstance(v, bool):
            return lit(v)
        raise Refuse("%s is %s, where a size was expected" % (what, kind_of(v)))

    def op_view(self, input, *shape, **kw):
        x = self.tensor(input, "view")
        if "size" in kw or "shape" in kw:
            shape = (kw.get("size", kw.get("shape")),)
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = tuple(shape[0])
        dims = [self.as_dim(d, "view's size") for d in shape]
        self.begin(None)
        minus = [i for i, d in enumerate(dims) if d.is_lit() and d.v == -1]
        if len(minus) > 1:
            raise Refuse("view with more than one -1")
        total = self.mul(x.shape)
        if minus:
            known = self.mul([d for i, d in enumerate(dims) if i != minus[0]])
            if known.v == 0:
                raise Refuse("view with -1 beside a zero size")
            dims[minus[0]] = lit(total.v // known.v) if total.is_lit() and known.is_lit() else \
                self.dim("%s / %s" % (total.c, known.c), total.v // known.v)
        if self.mul(dims).v != total.v:
            raise Refuse("view of %d elements as %s" % (total.v, [d.v for d in dims]))
        return T(x.buf, dims)

    op_reshape = op_view

    def op_flatten(self, input, start_dim=0, end_dim=-1):
        x = self.tensor(input, "flatten")
        r = len(x.shape)
        if r == 0:
            return T(x.buf, [lit(1)])
        s, e = self.norm_dim(start_dim, r, "flatten"), self.norm_dim(end_dim, r, "flatten")
        if s > e:
            raise Refuse("flatten with start_dim after end_dim")
        self.begin(None)
        return T(x.buf, x.shape[:s] + [self.mul(x.shape[s:e + 1])] + x.shape[e + 1:])

    def op_squeeze(self, input, dim=None):
        x = self.tensor(input, "squeeze")
        r = len(x.shape)
        dims = list(range(r)) if dim is None else [self.norm_dim(d, r, "squeeze") for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
        keep = []
        for i, d in enumerate(x.shape):
            if i in dims and not d.is_lit():
                raise Refuse("squeeze of dimension %d, whose size (%s) is only known at run time" % (i, d.c))
            if not (i in dims and d.v == 1):
                keep.append(d)
        return T(x.buf, keep)

    def op_unsqueeze(self, input, dim):
        x = self.tensor(input, "unsqueeze")
        d = self.norm_dim(dim, len(x.shape) + 1, "unsqueeze")
        return T(x.buf, x.shape[:d] + [lit(1)] + x.shape[d:])

    def op_size(self, input, dim=None):
        x = self.tensor(input, "size")
        if dim is None:
            return tuple(x.shape)
        return x.shape[self.norm_dim(dim, len(x.shape), "size")]

    def op_dim(self, input):
        return len(self.tensor(input, "dim").shape)

    def op_numel(self, input):
        self.begin(None)
        return self.mul(self.tensor(input, "numel").shape)

    def op_permute(self, input, *dims):
        x = self.tensor(input, "permute")
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = tuple(dims[0])
        r = len(x.shape)
        perm = [self.norm_dim(d, r, "permute") for d in dims]
        if sorted(perm) != list(range(r)):
            raise Refuse("permute with dims %s" % (list(dims),))
        if perm == list(range(r)):
            return x
        if r > MAX_RANK:
            raise Refuse("permute of a rank-%d tensor" % r)
        self.begin("permute %s%s" % (perm, self.operand_label))
        shape = [x.shape[p] for p in perm]
        out = self.new_tensor(shape)
        self.library.add("permute")
        strides = []
        for i in range(r):
            strides.append(self.mul(x.shape[i + 1:]))
        pv = self.fresh("perm")
        self.line("const KwbPermute %s = {%d, {%s}, {%s}};" % (pv, r, ", ".join(d.c for d in shape),
                                                               ", ".join(strides[p].c for p in perm)))
        self.launch("kwb_permute_copy", out.buf.numel, [self.ref(x), self.ref(out), out.buf.numel.c, pv])
        return out

    def op_transpose(self, input, dim0, dim1):
        x = self.tensor(input, "transpose")
        r = len(x.shape)
        perm = list(range(r))
        a, b = self.norm_dim(dim0, r, "transpose"), self.norm_dim(dim1, r, "transpose")
        perm[a], perm[b] = perm[b], perm[a]
        return self.op_permute(x, *perm)

    def op_t(self, input):
        x = self.tensor(input, "t")
        if len(x.shape) < 2:
            return x
        return self.op_transpose(x, 0, 1)

    def op_getattr(self, obj, name, *default):
        if isinstance(obj, T):
            if name == "shape":
                return tuple(obj.shape)
            if name == "T":
                return self.op_permute(obj, *reversed(range(len(obj.shape))))
            if name == "mT":
                return self.op_transpose(obj, -2, -1)
            if name in ("device", "dtype"):
                return None
            if name == "ndim":
                return len(obj.shape)
        if isinstance(obj, tuple) and len(obj) == 2 and name in ("values", "indices"):
            return obj[0] if name == "values" else obj[1]
        raise Refuse("forward reads attribute %r of %s" % (name, kind_of(obj)))

    def op_getitem(self, obj, index):
        if isinstance(obj, (tuple, list)):
            if isinstance(index, int):
                return obj[index]
            if isinstance(index, slice):
                return tuple(obj[index])
        raise Refuse("forward indexes %s with %r (tensor indexing and slicing are not handled)" % (kind_of(obj), index))

    # -- linear algebra ------------------------------------------------------------------------
    def linear(self, x, w, b, label):
        x = self.tensor(x, "linear")
        if len(w.shape) != 2 or not x.shape:
            raise Refuse("linear with a weight of rank %d" % len(w.shape))
        self.begin(label)
        k = x.shape[-1]
        rows = self.mul(x.shape[:-1])
        out = self.new_tensor(x.shape[:-1] + [w.shape[0]])
        self.library.add("linear")
        self.launch("kwb_linear", out.buf.numel, [self.ref(x), self.ref(w), self.ref(b) if b else "nullptr",
                                                  self.ref(out), rows.c, w.shape[0].c, k.c])
        return out

    def op_linear(self, input, weight, bias=None):
        return self.linear(input, self.tensor(weight, "linear's weight"), bias, "linear" + self.operand_label)

    def op_matmul(self, input, other):
        a, b = self.tensor(input, "matmul"), self.tensor(other, "matmul")
        if len(a.shape) < 2 or len(b.shape) < 2:
            raise Refuse("matmul with a 1-D operand is not handled")
        if len(b.shape) > 2 and [d.c for d in a.shape[:-2]] != [d.c for d in b.shape[:-2]]:
            raise Refuse("matmul whose batch dimensions differ (broadcast batches) is not handled")
        self.begin("matmul" + self.operand_label)
        batch = self.mul(a.shape[:-2])
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        out = self.new_tensor(a.shape[:-2] + [m, n])
        bstride = self.mul([k, n]) if len(b.shape) > 2 else lit(0)
        self.library.add("matmul")
        self.launch("kwb_matmul", out.buf.numel, [self.ref(a), self.ref(b), self.ref(out), batch.c, m.c, n.c, k.c, bstride.c])
        return out

    op_mm = op_matmul
    op_bmm = op_matmul

    # -- convolutions ----------------------------------------------------------------------------
    def conv(self, x, w, b, nsp, stride, padding, dilation, groups, transpose, output_padding, label):
        x = self.tensor(x, label)
        if len(x.shape) != nsp + 2:
            raise Refuse("%s on a rank-%d input (unbatched input is not handled)" % (label, len(x.shape)))
        if len(w.shape) != nsp + 2:
            raise Refuse("%s with a rank-%d weight" % (label, len(w.shape)))
        ks = list(w.shape[2:])  # Dims: the kernel size may be a size argument
        s, d = tup(stride, nsp, "stride"), tup(dilation, nsp, "dilation")
        if isinstance(padding, str):
            if padding == "valid":
                p = [0] * nsp
            elif padding == "same" and not transpose:
                if not all(k.is_lit() for k in ks):
                    raise Refuse("%s with padding='same' and a kernel size given as a size argument" % label)
                tot = [dd * (kk.v - 1) for dd, kk in zip(d, ks)]
                if any(t % 2 for t in tot):
                    raise Refuse("%s with padding='same' and an even kernel pads unevenly; not handled" % label)
                p = [t // 2 for t in tot]
            else:
                raise Refuse("%s with padding=%r" % (label, padding))
        else:
            p = tup(padding, nsp, "padding")
        op = tup(output_padding, nsp, "output_padding") if transpose else [0] * nsp
        self.begin(label)
        sp = x.shape[2:]
        out_sp = []
        for i in range(nsp):
            if transpose:
                # (i - 1) * s - 2p + d(k - 1) + output_padding + 1
                v = (sp[i].v - 1) * s[i] - 2 * p[i] + d[i] * (ks[i].v - 1) + op[i] + 1
                if ks[i].is_lit():
                    c = (ks[i].v - 1) * d[i] + op[i] + 1 - 2 * p[i]
                    expr = "(%s - 1) * %d + %d" % (sp[i].c, s[i], c)
                else:
                    expr = "(%s - 1) * %d - %d + %d * (%s - 1) + %d" % (sp[i].c, s[i], 2 * p[i], d[i], ks[i].c, op[i] + 1)
                out_sp.append(lit(v) if sp[i].is_lit() and ks[i].is_lit() else self.dim(expr, v))
            else:
                out_sp.append(self.conv_out(sp[i], ks[i], s[i], p[i], d[i], label))
        cout = self.dim("%s * %d" % (w.shape[1].c, groups), w.shape[1].v * groups) if transpose and groups != 1 else \
            (w.shape[1] if transpose else w.shape[0])
        out = self.new_tensor([x.shape[0], cout] + out_sp)
        self.library.update(["conv_transpose" if transpose else "conv", "unravel"])
        i3, o3 = pad3(sp, lit(1)), pad3(out_sp, lit(1))
        g = lit(groups)
        if groups != 1 and not transpose and not (x.shape[1].is_lit() and w.shape[1].is_lit()):
            # in_channels / (in_channels per group): right where groups follows the channels
            # (a depthwise convolution), so no configuration's groups is baked in
            if w.shape[1].v * groups != x.shape[1].v:
                raise Refuse("%s: %d input channels are not %d groups of %d" % (label, x.shape[1].v, groups, w.shape[1].v))
            g = self.dim("%s / %s" % (x.shape[1].c, w.shape[1].c), groups)
        consts = [k.c for k in pad3(ks, lit(1))] + [str(c) for c in pad3(s, 1) + pad3(p, 0) + pad3(d, 1)] + [g.c]
        self.launch("kwb_conv_transpose" if transpose else "kwb_conv", out.buf.numel,
                    [self.ref(x), self.ref(w), self.ref(b) if b else "nullptr", self.ref(out),
                     x.shape[0].c, x.shape[1].c] + [e.c for e in i3] + [cout.c] + [e.c for e in o3] + consts)
        return out

    def functional_conv(self, nsp, transpose):
        def f(input, weight, bias=None, stride=1, padding=0, *rest, **kw):
            if transpose:
                names = ["output_padding", "groups", "dilation"]
                vals = dict(zip(names, rest)); vals.update(kw)
                return self.conv(input, self.tensor(weight, "weight"), bias, nsp, stride, padding, vals.get("dilation", 1),
                                 vals.get("groups", 1), True, vals.get("output_padding", 0), "conv_transpose%dd%s" % (nsp, self.operand_label))
            names = ["dilation", "groups"]
            vals = dict(zip(names, rest)); vals.update(kw)
            return self.conv(input, self.tensor(weight, "weight"), bias, nsp, stride, padding, vals.get("dilation", 1),
                             vals.get("groups", 1), False, 0, "conv%dd%s" % (nsp, self.operand_label))
        return f

    # -- normalizations ------------------------------------------------------------------------
    def moments(self, x, outer, groups, inner, eps):
        mean = self.new_tensor([groups])
        rstd = self.new_tensor([groups])
        self.library.add("moments")
        self.launch("kwb_moments", groups, [self.ref(x), self.ref(mean), self.ref(rstd), outer.c, groups.c, inner.c, repr(float(eps))])
        return mean, rstd

    def norm_apply(self, x, mean, rstd, w, b, stat_index, affine_index, extra, label, comment):
        """out[i] = (x[i] - mean[q]) * rstd[q] * w[c] + b[c], q and c C expressions of i."""
        out = self.new_tensor(x.shape)
        params = ["const float *x", "const float *mean", "const float *rstd", "const float *w", "const float *b",
                  "float *out", "long long n"] + ["long long %s" % e for e, _ in extra]
        body = ["long long q = %s;" % stat_index]
        if w is not None or b is not None:
            body.append("long long c = %s;" % affine_index)
        expr = "(x[i] - mean[q]) * rstd[q]"
        if w is not None:
            expr += " * w[c]"
        if b is not None:
            expr += " + b[c]"
        body.append("out[i] = %s;" % expr)
        k = self.step_kernel(label, params, body, comment)
        n = out.buf.numel
        self.launch(k, n, [self.ref(x), self.ref(mean), self.ref(rstd), self.ref(w) if w else "nullptr",
                           self.ref(b) if b else "nullptr", self.ref(out), n.c] + [d.c for _, d in extra])
        return out

    def batch_norm(self, x, path, m):
        x = self.tensor(x, "batch_norm")
        if len(x.shape) < 2:
            raise Refuse("batch_norm of a rank-%d input" % len(x.shape))
        batch_stats = m.training or m.running_mean is None
        w = self.module_state(path, "weight") if m.affine else None
        b = self.module_state(path, "bias") if m.affine else None
        mode = "training mode: batch statistics" if batch_stats else "eval mode: running statistics"
        s = self.begin("batch_norm (%s, %s)" % (path, mode.split(":")[0]))
        c = x.shape[1]
        inner = self.mul(x.shape[2:])
        comment = "%s (%s)%s: y = (x - mean[c]) / sqrt(var[c] + eps) * weight[c] + bias[c]" % (s.label, mode, self.where_text())
        if batch_stats:
            mean, rstd = self.moments(x, x.shape[0], c, inner, m.eps)
            return self.norm_apply(x, mean, rstd, w, b, "(i / inner) % channels", "q",
                                   [("inner", inner), ("channels", c)], "batch_norm", comment)
        rm, rv = self.module_state(path, "running_mean"), self.module_state(path, "running_var")
        out = self.new_tensor(x.shape)
        params = ["const float *x", "const float *rm", "const float *rv", "const float *w", "const float *b",
                  "float *out", "long long n", "long long inner", "long long channels"]
        expr = "(x[i] - rm[c]) * (1.0f / sqrtf(rv[c] + %s))" % float_literal(m.eps)
        expr += " * w[c]" if w else ""
        expr += " + b[c]" if b else ""
        k = self.step_kernel("batch_norm", params, ["long long c = (i / inner) % channels;", "out[i] = %s;" % expr], comment)
        n = out.buf.numel
        self.launch(k, n, [self.ref(x), self.ref(rm), self.ref(rv), self.ref(w) if w else "nullptr",
                           self.ref(b) if b else "nullptr", self.ref(out), n.c, inner.c, c.c])
        return out

    def group_norm(self, x, groups, w, b, eps, label):
        x = self.tensor(x, "group_norm")
        if len(x.shape) < 2:
            raise Refuse("group_norm of a rank-%d input" % len(x.shape))
        s = self.begin(label)
        c = x.shape[1]
        if c.v % groups:
            raise Refuse("group_norm: %d channels in %d groups" % (c.v, groups))
        spatial = self.mul(x.shape[2:])
        per = self.mul([self.dim("%s / %d" % (c.c, groups), c.v // groups) if not c.is_lit() else lit(c.v // groups), spatial])
        ng = self.mul([x.shape[0], lit(groups)])
        mean, rstd = self.moments(x, lit(1), ng, per, eps)
        comment = "%s%s: per (batch, group) of %d: y = (x - mean) / sqrt(var + eps) * weight[c] + bias[c]" % (s.label, self.where_text(), groups)
        return self.norm_apply(x, mean, rstd, w, b, "i / per_group", "(i / spatial) % channels",
                               [("per_group", per), ("spatial", spatial), ("channels", c)], "group_norm", comment)

    def op_group_norm(self, input, num_groups, weight=None, bias=None, eps=1e-5):
        return self.group_norm(input, num_groups, weight, bias, eps, "group_norm" + self.operand_label)

    def layer_norm(self, x, normalized_shape, w, b, eps, label):
        x = self.tensor(x, "layer_norm")
        k = len(normalized_shape) if isinstance(normalized_shape, (list, tuple)) else 1
        if k > len(x.shape) or k == 0:
            raise Refuse("layer_norm over %d dimensions of a rank-%d input" % (k, len(x.shape)))
        s = self.begin(label)
        r = self.mul(x.shape[len(x.shape) - k:])
        rows = self.mul(x.shape[:len(x.shape) - k])
        mean, rstd = self.moments(x, lit(1), rows, r, eps)
        comment = "%s%s: per row of the last %d dimension(s): y = (x - mean) / sqrt(var + eps) * weight + bias" % (s.label, self.where_text(), k)
        return self.norm_apply(x, mean, rstd, w, b, "i / row", "i % row", [("row", r)], "layer_norm", comment)

    def op_layer_norm(self, input, normalized_shape, weight=None, bias=None, eps=1e-5):
        return self.layer_norm(input, normalized_shape, weight, bias, eps, "layer_norm" + self.operand_label)

    def instance_norm(self, x, path, m, nsp):
        x = self.tensor(x, "instance_norm")
        if len(x.shape) != nsp + 2:
            raise Refuse("instance_norm of a rank-%d input (unbatched input is not handled)" % len(x.shape))
        if m.track_running_stats and not m.training:
            raise Refuse("instance_norm with running statistics in eval mode is not handled")
        w = self.module_state(path, "weight") if m.affine else None
        b = self.module_state(path, "bias") if m.affine else None
        s = self.begin("instance_norm (%s)" % path)
        spatial = self.mul(x.shape[2:])
        rows = self.mul(x.shape[:2])
        mean, rstd = self.moments(x, lit(1), rows, spatial, m.eps)
        comment = "%s%s: per (batch, channel): y = (x - mean) / sqrt(var + eps)%s" % (s.label, self.where_text(), " * weight[c] + bias[c]" if m.affine else "")
        return self.norm_apply(x, mean, rstd, w, b, "i / spatial", "(i / spatial) % channels",
                               [("spatial", spatial), ("channels", x.shape[1])], "instance_norm", comment)

    # -- pooling ---------------------------------------------------------------------------------
    def pool(self, kind, x, nsp, kernel_size, stride, padding, dilation, ceil_mode, count_include_pad, divisor, label):
        x = self.tensor(x, label)
        if len(x.shape) < nsp + 1:
            raise Refuse("%s on a rank-%d input" % (label, len(x.shape)))
        k = tup(kernel_size, nsp, "kernel_size")
        s = tup(stride if stride not in (None, [], ()) else kernel_size, nsp, "stride")
        p = tup(padding, nsp, "padding")
        d = tup(dilation, nsp, "dilation")
        self.begin(label)
        sp = x.shape[len(x.shape) - nsp:]
        planes = self.mul(x.shape[:len(x.shape) - nsp])
        osp = [self.pool_out(sp[i], k[i], s[i], p[i], d[i], ceil_mode, label) for i in range(nsp)]
        out = self.new_tensor(x.shape[:len(x.shape) - nsp] + osp)
        self.library.update(["pool", "unravel"])
        i3, o3 = pad3(sp, lit(1)), pad3(osp, lit(1))
        args = [self.ref(x), self.ref(out), planes.c] + [e.c for e in i3] + [e.c for e in o3]
        consts = pad3(k, 1) + pad3(s, 1) + pad3(p, 0)
        if kind == "max":
            self.launch("kwb_max_pool", out.buf.numel, args + [str(c) for c in consts + pad3(d, 1)])
        else:
            self.launch("kwb_avg_pool", out.buf.numel, args + [str(c) for c in consts] + ["1" if count_include_pad else "0", str(divisor or 0)])
        return out

    def adaptive_pool(self, kind, x, nsp, output_size, label):
        x = self.tensor(x, label)
        if len(x.shape) < nsp + 1:
            raise Refuse("%s on a rank-%d input" % (label, len(x.shape)))
        sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * nsp
        if len(sizes) != nsp:
            raise Refuse("%s with output_size %r" % (label, output_size))
        self.begin(label)
        sp = x.shape[len(x.shape) - nsp:]
        osp = [sp[i] if sizes[i] is None else self.as_dim(sizes[i], "output_size") for i in range(nsp)]
        planes = self.mul(x.shape[:len(x.shape) - nsp])
        out = self.new_tensor(x.shape[:len(x.shape) - nsp] + osp)
        self.library.update(["pool", "unravel"])
        i3, o3 = pad3(sp, lit(1)), pad3(osp, lit(1))
        self.launch("kwb_adaptive_pool", out.buf.numel, [self.ref(x), self.ref(out), planes.c] + [e.c for e in i3] +
                    [e.c for e in o3] + ["1" if kind == "max" else "0"])
        return out

    # -- modules -------------------------------------------------------------------------------
    def call_module(self, path, m, args, kwargs):
        tname = type(m).__name__
        x = args[0] if args else kwargs.get("input")
        if len(args) + len(kwargs) != 1:
            raise Refuse("module %s (%s) is called with %d arguments" % (path, tname, len(args) + len(kwargs)))
        label = "%s (%s)" % (tname.lower(), path)
        if tname == "Linear":
            return self.linear(x, self.module_state(path, "weight"), self.module_state(path, "bias"), "linear (%s)" % path)
        conv = re.fullmatch(r"Conv(Transpose)?([123])d", tname)
        if conv:
            if m.padding_mode != "zeros":
                raise Refuse("%s pads with %r, where the starter writer handles zeros" % (tname, m.padding_mode))
            nsp, tr = int(conv.group(2)), bool(conv.group(1))
            return self.conv(x, self.module_state(path, "weight"), self.module_state(path, "bias"), nsp, m.stride,
                             m.padding, m.dilation, m.groups, tr, getattr(m, "output_padding", 0),
                             "%s%dd (%s)" % ("conv_transpose" if tr else "conv", nsp, path))
        if re.fullmatch(r"BatchNorm[123]d", tname):
            return self.batch_norm(x, path, m)
        if tname == "GroupNorm":
            return self.group_norm(x, m.num_groups, self.module_state(path, "weight") if m.affine else None,
                                   self.module_state(path, "bias") if m.affine else None, m.eps, "group_norm (%s)" % path)
        if tname == "LayerNorm":
            return self.layer_norm(x, tuple(m.normalized_shape), self.module_state(path, "weight"),
                                   self.module_state(path, "bias"), m.eps, "layer_norm (%s)" % path)
        inorm = re.fullmatch(r"InstanceNorm([123])d", tname)
        if inorm:
            return self.instance_norm(x, path, m, int(inorm.group(1)))
        pool = re.fullmatch(r"(Max|Avg)Pool([123])d", tname)
        if pool:
            if getattr(m, "return_indices", False):
                raise Refuse("%s returns indices, which the starter writer does not compute" % tname)
            nsp = int(pool.group(2))
            if pool.group(1) == "Max":
                return self.pool("max", x, nsp, m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode, True, None, label)
            return self.pool("avg", x, nsp, m.kernel_size, m.stride, m.padding, 1, m.ceil_mode,
                             m.count_include_pad, getattr(m, "divisor_override", None), label)
        apool = re.fullmatch(r"Adaptive(Max|Avg)Pool([123])d", tname)
        if apool:
            if getattr(m, "return_indices", False):
                raise Refuse("%s returns indices, which the starter writer does not compute" % tname)
            return self.adaptive_pool(apool.group(1).lower(), x, int(apool.group(2)), m.output_size, label)
        simple = {"ReLU": "relu", "ReLU6": "relu6", "Sigmoid": "sigmoid", "Tanh": "tanh", "SiLU": "silu",
                  "Mish": "mish", "Hardswish": "hardswish", "Hardsigmoid": "hardsigmoid", "SELU": "selu"}
        if tname in simple:
            return self.op_unary(simple[tname], x)
        if tname == "GELU":
            return self.op_gelu(x, m.approximate)
        if tname == "Softplus":
            return self.op_softplus(x, m.beta, m.threshold)
        if tname == "Hardtanh":
            return self.op_hardtanh(x, m.min_val, m.max_val)
        if tname == "LeakyReLU":
            return self.op_leaky_relu(x, m.negative_slope)
        if tname == "ELU":
            return self.op_elu(x, m.alpha)
        if tname in ("Softmax", "LogSoftmax"):
            return self.op_softmax(x, m.dim, log=tname == "LogSoftmax")
        if tname in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"):
            return self.op_dropout(x, m.p, m.training)
        if tname == "Identity":
            return x
        if tname == "Flatten":
            return self.op_flatten(x, m.start_dim, m.end_dim)
        raise Refuse("forward calls module %s (%s.%s)%s, which the starter writer has no naive kernel for"
                     % (path, type(m).__module__, tname, self.at()))

    def at(self):
        return (" at %s" % self.node_where) if self.node_where else ""


def function_table():
    """PyTorch callables (and method names) to the interpreter's handlers."""
    import torch
    import torch.nn.functional as F
    table = {}

    def put(keys, handler):
        for k in keys:
            if k is not None:
                table[k] = handler

    put([kwb_draw], lambda gen, number: gen.draw_arg(number))

    for name in UNARY:
        put([getattr(torch, name, None), getattr(F, name, None), getattr(torch.special, name, None), name],
            (lambda n: lambda g, *a, **k: g.op_unary(n, *a, **k))(name))
    for name in BINARY:
        h = (lambda n: lambda g, *a, **k: g.op_binary(n, *a, **k))(name)
        put([getattr(torch, name, None), name], h)
    put([operator.add, operator.iadd], lambda g, *a, **k: g.op_binary("add", *a, **k))
    put([operator.sub, operator.isub, torch.subtract, "subtract"], lambda g, *a, **k: g.op_binary("sub", *a, **k))
    put([operator.mul, operator.imul, torch.multiply, "multiply"], lambda g, *a, **k: g.op_binary("mul", *a, **k))
    put([operator.truediv, operator.itruediv, torch.true_divide, torch.divide, "true_divide", "divide"],
        lambda g, *a, **k: g.op_binary("div", *a, **k))
    put([operator.pow], lambda g, *a, **k: g.op_binary("pow", *a, **k))
    put([operator.neg], lambda g, *a, **k: g.op_unary("neg", *a, **k))
    put([operator.floordiv], lambda g, a, b: g.dim_arith("floordiv", a, b) if isinstance(a, (Dim, int)) and isinstance(b, (Dim, int))
        else (_ for _ in ()).throw(Refuse("floor division of tensors is not handled")))
    put([torch.rsub, "rsub"], lambda g, *a, **k: g.op_rsub(*a, **k))
    put([torch.max, "max"], lambda g, *a, **k: g.op_minmax("max", *a, **k))
    put([torch.min, "min"], lambda g, *a, **k: g.op_minmax("min", *a, **k))
    simple = {
        "gelu": "op_gelu", "softplus": "op_softplus", "hardtanh": "op_hardtanh", "clamp": "op_clamp", "clip": "op_clamp",
        "leaky_relu": "op_leaky_relu", "elu": "op_elu", "dropout": "op_dropout", "sum": "op_sum", "mean": "op_mean",
        "amax": "op_amax", "amin": "op_amin", "logsumexp": "op_logsumexp", "softmax": "op_softmax",
        "log_softmax": "op_log_softmax", "view": "op_view", "reshape": "op_reshape", "flatten": "op_flatten",
        "squeeze": "op_squeeze", "unsqueeze": "op_unsqueeze", "size": "op_size", "dim": "op_dim", "numel": "op_numel",
        "permute": "op_permute", "transpose": "op_transpose", "t": "op_t", "matmul": "op_matmul", "mm": "op_mm",
        "bmm": "op_bmm", "linear": "op_linear", "group_norm": "op_group_norm", "layer_norm": "op_layer_norm",
        "tensor": "op_tensor", "to": "op_to", "float": "op_float", "contiguous": "op_identity", "clone": "op_identity",
        "detach": "op_identity", "cuda": "op_identity",
    }
    for name, meth in simple.items():
        h = (lambda m: lambda g, *a, **k: getattr(g, m)(*a, **k))(meth)
        put([getattr(torch, name, None) if name not in ("dim", "size", "float", "to", "cuda", "contiguous", "view", "t") else None,
             getattr(F, name, None), name], h)
    put([F.relu6], lambda g, *a, **k: g.op_unary("relu6", a[0]))
    put([torch.clamp_min, "clamp_min"], lambda g, x, m: g.op_clamp(x, min=m))
    put([torch.clamp_max, "clamp_max"], lambda g, x, m: g.op_clamp(x, max=m))
    for fn, nm in ((F.hardswish, "hardswish"), (F.hardsigmoid, "hardsigmoid"), (F.silu, "silu"), (F.mish, "mish"),
                   (F.relu, "relu"), (F.selu, "selu"), (torch.relu, "relu")):
        table[fn] = (lambda n: lambda g, x, inplace=False: g.op_unary(n, x))(nm)
    for fn in (F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout):
        table[fn] = lambda g, *a, **k: g.op_dropout(*a, **k)
    for nsp in (1, 2, 3):
        table[getattr(F, "conv%dd" % nsp)] = (lambda n: lambda g, *a, **k: g.functional_conv(n, False)(*a, **k))(nsp)
        table[getattr(torch, "conv%dd" % nsp)] = table[getattr(F, "conv%dd" % nsp)]
        table[getattr(F, "conv_transpose%dd" % nsp)] = (lambda n: lambda g, *a, **k: g.functional_conv(n, True)(*a, **k))(nsp)
        table[getattr(F, "max_pool%dd" % nsp)] = (lambda n: lambda g, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False:
                                                  g.pool("max", input, n, kernel_size, stride, padding, dilation, ceil_mode, True, None, "max_pool%dd" % n)
                                                  if not return_indices else (_ for _ in ()).throw(Refuse("max_pool with return_indices")))(nsp)
        table[getattr(F, "avg_pool%dd" % nsp)] = (lambda n: lambda g, input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None:
                                                  g.pool("avg", input, n, kernel_size, stride, padding, 1, ceil_mode, count_include_pad, divisor_override, "avg_pool%dd" % n))(nsp)
        table[getattr(F, "adaptive_avg_pool%dd" % nsp)] = (lambda n: lambda g, input, output_size:
                                                           g.adaptive_pool("avg", input, n, output_size, "adaptive_avg_pool%dd" % n))(nsp)
        table[getattr(F, "adaptive_max_pool%dd" % nsp)] = (lambda n: lambda g, input, output_size, return_indices=False:
                                                           g.adaptive_pool("max", input, n, output_size, "adaptive_max_pool%dd" % n))(nsp)
    import builtins
    table[builtins.getattr] = lambda g, *a: g.op_getattr(*a)
    table[operator.getitem] = lambda g, *a: g.op_getitem(*a)
    table.pop(None, None)
    return table


INPLACE_METHOD = re.compile(r"^[a-z]\w*_$")


# ---------------------------------------------------------------------------------------------
# The graph walk.

def node_where(node, path):
    trace = getattr(node, "stack_trace", None) or ""
    found = None
    for m in re.finditer(r'File "([^"]+)", line (\d+)', trace):
        if os.path.abspath(m.group(1)) == os.path.abspath(path):
            found = "%s:%s" % (os.path.basename(path), m.group(2))
    return found


def node_text(node):
    target = node.target
    if node.op == "call_module":
        return "module %s" % target
    if node.op == "call_method":
        return "Tensor.%s" % target
    mod = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", str(target))
    if mod.startswith("torch._C"):
        mod = "torch"
    return "%s.%s" % (mod, name) if mod else name


def interpret(gen, gm, table):
    import torch.fx
    env = {}
    nodes = list(gm.graph.nodes)
    order = {n: i for i, n in enumerate(nodes)}
    placeholders = [n for n in nodes if n.op == "placeholder"]
    forward = gen.spec["forward"]
    if len(placeholders) != len(forward):
        raise Refuse("forward takes %d arguments but the spec names %d" % (len(placeholders), len(forward)))
    outputs = None
    for node in nodes:
        gen.node_where = node_where(node, gen.path)
        gen.operand_label = ""
        if node.op == "placeholder":
            name = forward[placeholders.index(node)]
            if name not in gen.arg_vals:
                raise Refuse("forward's argument %s is not a kernel argument" % name)
            env[node] = gen.arg_vals[name]
            continue
        if node.op == "get_attr":
            env[node] = gen.get_attr(node.target)
            continue
        if node.op == "output":
            outputs = node.args[0]
            break

        def resolve(a):
            v = env[a]
            if isinstance(v, Unhandled):
                raise Refuse(v.reason + gen.at())
            return v
        args = torch.fx.node.map_arg(node.args, resolve)
        kwargs = torch.fx.node.map_arg(node.kwargs, resolve)
        # in-place: allowed when nothing reads the overwritten input afterwards
        fname = node.target if node.op == "call_method" else getattr(node.target, "__name__", "") if node.op == "call_function" else ""
        inplace = (node.op != "call_module" and INPLACE_METHOD.match(fname) and fname[:-1] in table) or kwargs.get("inplace") is True or \
            (node.op == "call_module" and getattr(gen.modules.get(node.target), "inplace", False))
        if inplace and node.args and isinstance(node.args[0], torch.fx.Node):
            src = node.args[0]
            later = [u for u in src.users if u is not node and order[u] > order[node]]
            if later:
                raise Refuse("%s changes its input in place and forward reads that input again%s" % (node_text(node), gen.at()))
        kwargs = {k: v for k, v in kwargs.items() if k != "inplace"}
        labels = [a.target for a in node.all_input_nodes if a.op == "get_attr"]
        if node.op == "call_module":
            labels = [node.target]
        gen.operand_label = (" (%s)" % ", ".join(labels)) if labels else ""
        try:
            if node.op == "call_module":
                value = gen.call_module(node.target, gen.modules[node.target], list(args), kwargs)
            else:
                key = node.target
                handler = table.get(key) if (isinstance(key, str) or _hashable(key)) else None
                if handler is None and INPLACE_METHOD.match(fname) and fname[:-1] in table:
                    handler = table[fname[:-1]]  # x.relu_(), torch.relu_(x): checked above
                if handler is None:
                    raise Refuse("forward calls %s%s, which the starter writer has no naive kernel for" % (node_text(node), gen.at()))
                value = handler(gen, *args, **kwargs)
        except Refuse as e:
            text = str(e)
            if gen.node_where and gen.node_where not in text:
                text += " (at %s)" % gen.node_where
            raise Refuse(text)
        except TypeError as e:
            raise Refuse("%s is called in a form the starter writer does not read (%s)%s" % (node_text(node), e, gen.at()))
        env[node] = value
    return env, outputs


def _hashable(x):
    try:
        hash(x)
        return True
    except TypeError:
        return False


def finish_outputs(gen, outputs):
    """Makes each output land in its kernel argument: the producing temporary becomes it, or a copy."""
    import torch.fx
    flat = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    names = gen.spec["outputs"]
    if len(flat) != len(names):
        raise Refuse("forward returns %d values but the spec names %d outputs" % (len(flat), len(names)))
    results = []
    claimed = set()
    for node, name in zip(flat, names):
        value = gen.env[node] if isinstance(node, torch.fx.Node) else node
        if isinstance(value, Unhandled):
            raise Refuse(value.reason)
        if not isinstance(value, T):
            raise Refuse("forward's output %s is %s, where the starter writer handles a tensor" % (name, kind_of(value)))
        out = gen.arg_vals.get(name)
        if not isinstance(out, T):
            raise Refuse("output %s is not a tensor kernel argument" % name)
        results.append((value, out, name))
    gen.node_where = None
    for value, out, name in results:
        if value.buf.kind == "tmp" and value.buf.id not in claimed:
            claimed.add(value.buf.id)
            value.buf.kind = "out"
            value.buf.name = out.buf.name
            value.buf.id_out = out.buf.id
        else:
            s = gen.begin("copy to %s" % name)
            gen.library.add("copy")
            n = gen.mul(out.shape)
            gen.launch("kwb_copy", n, [gen.ref(value), gen.ref(out), n.c])
    return results


def render(gen, header_lines):
    # last use of every temporary, by step index
    last = {}
    for i, st in enumerate(gen.steps):
        for b in st.bufs:
            last[b] = i
    temps = [b for b in gen.bufs.values() if b.kind == "tmp"]
    tnames = {}
    for b in temps:
        tnames[b.id] = gen.fresh("tmp")

    def cname(ident):
        b = gen.bufs[ident]
        if b.kind == "tmp":
            return tnames[ident]
        return b.name

    out = []
    out.extend("// " + h if h else "//" for h in header_lines)
    out.append("#include <cuda_runtime.h>")
    out.append("#include <math.h>")
    out.append("")
    for key in LIBRARY_ORDER:
        if key in gen.library:
            out.append(LIBRARY[key].strip("\n").replace("GRID_STRIDE", GRID_STRIDE))
            out.append("")
    for k in gen.kernels:
        out.append(k)
    out.append('extern "C" cudaError_t kwb_launch(void *const *args, cudaStream_t stream) {')
    for i, arg in enumerate(gen.spec["kernel_args"]):
        local = gen.locals[arg["name"]]
        if arg["kind"] == "tensor":
            if gen.arg_vals.get(arg["name"]) is None:
                out.append("  // args[%d]: %s, %s (not read)" % (i, arg["name"], arg.get("dtype")))
                continue
            if arg.get("role") == "out":
                out.append("  float *%s = *static_cast<float *const *>(args[%d]);" % (local, i))
            else:
                out.append("  const float *%s = *static_cast<const float *const *>(args[%d]);" % (local, i))
        elif arg["kind"] == "size":
            out.append("  const long long %s = *static_cast<const long long *>(args[%d]);" % (local, i))
        else:
            ctype = PARAM_CTYPES[arg["dtype"]]
            out.append("  const %s %s = *static_cast<const %s *>(args[%d]);" % (ctype, local, ctype, i))
    if temps:
        out.append("  float %s;" % ", ".join("*%s = nullptr" % tnames[b.id] for b in temps))
    out.append("  cudaError_t err = cudaSuccess;")
    out.append("  do {")
    for i, st in enumerate(gen.steps):
        if not st.lines:
            continue
        if st.number is not None:
            out.append("    // Step %d: %s%s" % (st.number, st.label, (" (%s)" % st.where) if st.where else ""))
        for ln in st.lines:
            m = re.fullmatch(r"@alloc (\w+)@", ln)
            if m:
                b = gen.bufs[m.group(1)]
                if b.kind == "tmp":
                    out.append("    if ((err = cudaMallocAsync(reinterpret_cast<void **>(&%s), %s * sizeof(float), stream)) != cudaSuccess) break;"
                               % (tnames[b.id], "static_cast<size_t>(%s)" % b.numel.c))
                continue
            out.append("    " + re.sub(r"@(\w+)@", lambda mm: cname(mm.group(1)), ln))
        for b in temps:
            if last.get(b.id) == i:
                out.append("    cudaFreeAsync(%s, stream);" % tnames[b.id])
                out.append("    %s = nullptr;" % tnames[b.id])
    out.append("  } while (0);")
    for b in temps:
        out.append("  if (%s) cudaFreeAsync(%s, stream);" % (tnames[b.id], tnames[b.id]))
    out.append("  return err;")
    out.append("}")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# One configuration: build, trace, interpret, check shapes against torch's.

def to_init(v):
    if isinstance(v, list):
        return tuple(to_init(e) for e in v)
    return v


def load_problem(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("kwb_starter_problem", path)
    if spec is None or spec.loader is None:
        raise Refuse("%s cannot be imported" % path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # the problem's own code
        raise Refuse("importing %s failed: %s: %s" % (os.path.basename(path), type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
    if not hasattr(mod, "Model"):
        raise Refuse("%s defines no class Model" % os.path.basename(path))
    return mod


def build(mod, init, path):
    import torch
    errors = []
    for device in ("meta", "cpu"):
        try:
            with torch.device(device):
                model = mod.Model(*[to_init(v) for v in init])
            return model
        except Exception as e:
            errors.append("%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
    raise Refuse("Model(*init) failed in %s: %s" % (os.path.basename(path), errors[-1]))


DRAW_SHAPES = {}  # draw number -> shape, while ShapeProp runs the traced graph (and "device")


def kwb_draw(number):
    """forward's random call `number` in the traced graph: the tensor the draw argument holds
    (zeros of its shape while ShapeProp runs)."""
    import torch
    return torch.zeros(DRAW_SHAPES[number], dtype=torch.float32, device=DRAW_SHAPES["device"])


def none_defaults(model, passed):
    """forward's parameters after the first `passed` whose default is None (traced as None)."""
    import inspect
    params = list(inspect.signature(model.forward).parameters.values())[passed:]
    return {p.name: None for p in params if p.default is None and p.kind is not p.VAR_POSITIONAL}


def trace(model, path, passed, draws):
    """The GraphModule of forward over its first `passed` arguments; `draws` random calls."""
    import torch
    import torch.fx
    tracer = torch.fx.Tracer()
    tracer.record_stack_traces = True
    made = []

    def draw(*args, **kwargs):
        made.append(len(made) + 1)
        return tracer.create_proxy("call_function", kwb_draw, (len(made),), {})
    try:
        with kwb_problem_state.draw_functions_replaced(torch, lambda name, original: draw):
            graph = tracer.trace(model, concrete_args=none_defaults(model, passed) or None)
    except Exception as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise Refuse("torch.fx cannot trace forward (%s: %s); a forward with control flow on values is not handled"
                     % (type(e).__name__, msg[:200]))
    if len(made) != draws:
        raise Refuse("forward makes %d random call(s) when traced, the spec gives %d draw(s)" % (len(made), draws))
    # The arguments traced as None: their placeholders and checks go (forward takes `passed`).
    for node in list(graph.nodes):
        if node.op == "call_function" and getattr(node.target, "__name__", "") == "_assert_is_none":
            graph.erase_node(node)
    for node in [n for n in graph.nodes if n.op == "placeholder"][passed:]:
        if not node.users:
            graph.erase_node(node)
    return torch.fx.GraphModule(model, graph)


def eval_shape(arg, sizes):
    out = []
    for d in arg.get("shape", []):
        out.append(d if isinstance(d, int) else sizes[d])
    return out


def check_shapes(gen, gm, model, sizes, env):
    import torch
    from torch.fx.passes.shape_prop import ShapeProp
    device = next((p.device for p in list(model.parameters()) + list(model.buffers())), torch.device("meta"))
    inputs = []
    by_name = {a["name"]: a for a in gen.spec["kernel_args"]}
    for name in gen.spec["forward"]:
        arg = by_name[name]
        if arg["kind"] == "tensor":
            inputs.append(torch.zeros(eval_shape(arg, sizes), dtype=torch.float32, device=device))
        elif arg["kind"] == "param":
            inputs.append(1.0 if arg["dtype"] in ("f32", "f64") else 1)
        else:
            inputs.append(sizes[name])
    DRAW_SHAPES.clear()
    DRAW_SHAPES["device"] = device
    for arg in gen.spec["kernel_args"]:
        if arg.get("kind") == "tensor" and arg.get("draw"):
            DRAW_SHAPES[arg["draw"]] = eval_shape(arg, sizes)
    try:
        with torch.no_grad():
            ShapeProp(gm).propagate(*inputs)
    except Exception as e:
        raise Refuse("forward does not run at these sizes %s (%s: %s)"
                     % (json.dumps(sizes, sort_keys=True), type(e).__name__, (str(e).splitlines() or [""])[0][:200]))
    for node, value in env.items():
        meta = node.meta.get("tensor_meta")
        if isinstance(value, T) and meta is not None and hasattr(meta, "shape"):
            mine = [d.v for d in value.shape]
            if list(meta.shape) != mine:
                raise Refuse("internal check: the starter's shape %s for %s differs from torch's %s%s"
                             % (mine, node_text(node), list(meta.shape),
                                (" at %s" % node_where(node, gen.path)) if node_where(node, gen.path) else ""))
            if meta.dtype != torch.float32:
                raise Refuse("%s gives a %s tensor; the starter writer handles f32 only" % (node_text(node), meta.dtype))
    # state tensors: the declared shape is the module's
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    for arg in gen.spec["kernel_args"]:
        key = arg.get("state")
        if arg["kind"] != "tensor" or not key:
            continue
        t = state.get(key)
        if t is None:
            raise Refuse("kernel argument %s carries state %s, which Model has not" % (arg["name"], key))
        if list(t.shape) != eval_shape(arg, sizes):
            raise Refuse("kernel argument %s is declared %s but %s is %s" % (arg["name"], eval_shape(arg, sizes), key, list(t.shape)))


def write_one(spec, mod, init, sizes, table):
    model = build(mod, init, spec["module"])
    draws = [a for a in spec["kernel_args"] if a.get("kind") == "tensor" and a.get("draw")]
    gm = trace(model, spec["module"], len(spec["forward"]), len(draws))
    gen = Interp(spec, gm, model, sizes, spec["module"])
    env, outputs = interpret(gen, gm, table)
    gen.env = env
    results = finish_outputs(gen, outputs)
    for value, out, name in results:
        if [d.v for d in value.shape] != [d.v for d in out.shape]:
            raise Refuse("output %s is declared %s but forward returns %s" % (name, [d.v for d in out.shape], [d.v for d in value.shape]))
    check_shapes(gen, gm, model, sizes, env)
    return gen


def header(spec, gen):
    name = os.path.basename(spec["module"])
    lines = ["Starter written by kwb_starter.py from %s: forward, one naive kernel per step." % name,
             "It is correct by construction and slow: fuse the steps. Steps:"]
    for st in gen.steps:
        if st.number is not None:
            lines.append("  %d. %s%s" % (st.number, st.label, (" (%s)" % st.where) if st.where else ""))
    lines += ["Every shape is computed at run time from the size arguments; module constants are literals.",
              "Float accumulation in matmul/convolution; double in reductions and norm statistics."]
    return lines


def write_starter(spec):
    try:
        import torch  # noqa: F401
        import torch.fx  # noqa: F401
    except Exception as e:
        return {"ok": False, "reason": "torch is not installed for this Python (%s), and the starter writer reads forward with torch.fx" % type(e).__name__}
    table = function_table()
    mod = load_problem(spec["module"])
    configs = [("the problem's sizes", spec["init"], dict(spec["sizes"]))]
    for cfg in spec.get("configs") or []:
        values = dict(spec["sizes"])
        values.update(cfg.get("values") or {})
        configs.append(("configuration %s" % cfg.get("name", "?"), cfg.get("init", spec["init"]), values))
    first = None
    for label, init, sizes in configs:
        try:
            gen = write_one(spec, mod, init, sizes, table)
        except Refuse as e:
            if first is None:
                raise
            raise Refuse("at %s: %s" % (label, e))
        source = render(gen, header(spec, gen))
        if first is None:
            first = (gen, source)
        elif source != first[1]:
            a, b = first[1].splitlines(), source.splitlines()
            diff = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            raise Refuse("the starter differs at %s (line %d: %r vs %r): a module constant changes with the "
                         "configuration, and the starter bakes module constants in"
                         % (label, diff + 1, a[diff].strip() if diff < len(a) else "", b[diff].strip() if diff < len(b) else ""))
    gen, source = first
    steps = [st.label for st in gen.steps if st.number is not None]
    return {"ok": True, "source": source, "steps": steps, "notes": gen.notes}


def read_spec(argv):
    if len(argv) != 2:
        raise UsageError("usage: kwb_starter.py SPEC.json (or - for stdin)")
    try:
        text = sys.stdin.read() if argv[1] == "-" else open(argv[1], encoding="utf-8").read()
    except OSError as e:
        raise UsageError("%s: %s" % (argv[1], e.strerror))
    try:
        spec = json.loads(text)
    except ValueError as e:
        raise UsageError("%s: not JSON: %s" % (argv[1], e))
    if not isinstance(spec, dict):
        raise UsageError("%s: the spec is not a JSON object" % argv[1])
    for field, kind in (("module", str), ("init", list), ("forward", list), ("outputs", list),
                        ("kernel_args", list), ("sizes", dict)):
        if not isinstance(spec.get(field), kind):
            raise UsageError("%s: field %r is missing or not a %s" % (argv[1], field, kind.__name__))
    if "configs" in spec and not isinstance(spec["configs"], list):
        raise UsageError("%s: field 'configs' is not a list" % argv[1])
    names = set()
    for i, arg in enumerate(spec["kernel_args"]):
        if not isinstance(arg, dict) or not isinstance(arg.get("name"), str) or arg.get("kind") not in ("tensor", "size", "param"):
            raise UsageError("%s: kernel_args[%d] needs a name and a kind (tensor, size or param)" % (argv[1], i))
        if not re.fullmatch(r"[A-Za-z_]\w*", arg["name"]):
            raise UsageError("%s: kernel_args[%d]'s name %r is not a C identifier" % (argv[1], i, arg["name"]))
        if arg["name"] in names:
            raise UsageError("%s: kernel_args[%d]'s name %r repeats" % (argv[1], i, arg["name"]))
        names.add(arg["name"])
    for field in ("forward", "outputs"):
        for n in spec[field]:
            if n not in names:
                raise UsageError("%s: %s names %r, which is not in kernel_args" % (argv[1], field, n))
    return spec


def main(argv):
    try:
        spec = read_spec(argv)
    except UsageError as e:
        sys.stderr.write("kwb_starter.py: %s\n" % e)
        return 1
    try:
        result = write_starter(spec)
    except Refuse as e:
        result = {"ok": False, "reason": str(e)}
    except RecursionError:
        result = {"ok": False, "reason": "forward's graph is too deep to read"}
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
