#include "ui/views/cuda_lexer.h"

#include <QColor>
#include <QFontDatabase>

namespace kwb::ui {

namespace {

// Set 1: the C++20 keywords plus CUDA's declaration qualifiers.
constexpr const char kKeywords[] =
    "alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t "
    "char16_t char32_t class co_await co_return co_yield compl concept const consteval "
    "constexpr constinit const_cast continue decltype default delete do double dynamic_cast "
    "else enum explicit export extern false final float for friend goto if inline int long "
    "mutable namespace new noexcept not not_eq nullptr operator or or_eq override private "
    "protected public register reinterpret_cast requires return short signed sizeof static "
    "static_assert static_cast struct switch template this thread_local throw true try "
    "typedef typeid typename union unsigned using virtual void volatile wchar_t while xor "
    "xor_eq "
    "__global__ __device__ __host__ __shared__ __constant__ __managed__ __restrict__ "
    "__restrict __launch_bounds__ __maxnreg__ __cluster_dims__ __forceinline__ __noinline__ "
    "__inline__ __grid_constant__ __align__ __volatile__ __nv_pure__ __builtin_align__ "
    "__cudart_builtin__ __device_builtin__";

// Set 2: built-in variables, intrinsics and the runtime calls people write around kernels.
// Only names that mean the CUDA thing: words as common as min, max, abs, free, wait or reduce are
// left out, because they would colour every variable and member of that name.
constexpr const char kBuiltins[] =
    // built-in variables and constants
    "threadIdx blockIdx blockDim gridDim warpSize clusterIdx clusterDim INFINITY NAN FLT_MAX "
    "FLT_MIN FLT_EPSILON DBL_MAX CUDART_INF_F CUDART_NAN_F CUDART_PI_F "
    // synchronisation and memory fences
    "__syncthreads __syncthreads_count __syncthreads_and __syncthreads_or __syncwarp "
    "__threadfence __threadfence_block __threadfence_system __nanosleep __trap __brkpt "
    "__activemask __prof_trigger clock clock64 globaltimer "
    // warp-level primitives
    "__shfl __shfl_up __shfl_down __shfl_xor __shfl_sync __shfl_up_sync __shfl_down_sync "
    "__shfl_xor_sync __ballot __ballot_sync __any __all __any_sync __all_sync __uni_sync "
    "__match_any_sync __match_all_sync __reduce_add_sync __reduce_min_sync "
    "__reduce_max_sync __reduce_and_sync __reduce_or_sync __reduce_xor_sync "
    // atomics
    "atomicAdd atomicSub atomicExch atomicMin atomicMax atomicInc atomicDec atomicCAS "
    "atomicAnd atomicOr atomicXor atomicAdd_block atomicAdd_system atomicCAS_block "
    "atomicCAS_system atomicExch_block atomicExch_system atomicMax_block atomicMin_block "
    // cached loads and stores
    "__ldg __ldca __ldcg __ldcs __ldlu __ldcv __stwb __stcg __stcs __stwt "
    // fast-math and rounding intrinsics
    "__expf __exp10f __logf __log2f __log10f __powf __sinf __cosf __tanf __sincosf "
    "__fdividef __fdiv_rn __fdiv_rz __frcp_rn __fsqrt_rn __frsqrt_rn __fmaf_rn __fmaf_rz "
    "__fmaf_ru __fmaf_rd __fmul_rn __fmul_rz __fadd_rn __fadd_rz __fsub_rn __fsub_rz "
    "__dmul_rn __dadd_rn __fma_rn __saturatef __float2int_rn __float2int_rz __float2uint_rn "
    "__int2float_rn __uint2float_rn __float_as_int __int_as_float __float_as_uint "
    "__uint_as_float __double2float_rn __double_as_longlong __longlong_as_double "
    "__float2ll_rn __ll2float_rn "
    // math library
    "sqrtf rsqrtf cbrtf rcbrtf expf exp2f exp10f expm1f logf log2f log10f log1pf powf "
    "sinf cosf tanf sincosf sinpif cospif sincospif asinf acosf atanf atan2f sinhf coshf "
    "tanhf asinhf acoshf atanhf erff erfcf erfinvf erfcinvf lgammaf tgammaf fabsf fmaxf "
    "fminf fmaf fdimf floorf ceilf roundf truncf rintf lrintf llrintf lroundf nearbyintf "
    "copysignf fmodf remainderf remquof hypotf normf rnormf norm3df rnorm3df norm4df "
    "rnorm4df frexpf ldexpf scalbnf modff nextafterf "
    "sqrt rsqrt cbrt exp exp2 expm1 log log2 log10 log1p pow sin cos tan tanh erf fabs "
    "fmax fmin fma floor ceil round trunc rint copysign fmod hypot isnan isinf isfinite "
    "signbit umin umax llmin llmax "
    // half and bfloat16 conversions and arithmetic
    "__float2half __float2half_rn __float2half_rz __half2float __floats2half2_rn "
    "__float22half2_rn __half22float2 __halves2half2 __half2half2 __low2half __high2half "
    "__low2float __high2float __lows2half2 __highs2half2 __hadd __hsub __hmul __hdiv "
    "__hfma __hneg __habs __hmax __hmin __hadd2 __hsub2 __hmul2 __h2div __hfma2 __hneg2 "
    "__habs2 __hmax2 __hmin2 __heq __hne __hlt __hle __hgt __hge __hisnan __hisinf hexp "
    "hexp2 hlog hlog2 hsqrt hrsqrt hrcp hsin hcos h2exp h2log h2sqrt h2rsqrt h2rcp "
    "__float2bfloat16 __float2bfloat16_rn __bfloat162float __floats2bfloat162_rn "
    "__float22bfloat162_rn __bfloat1622float2 __halves2bfloat162 __low2bfloat16 "
    "__high2bfloat16 __nv_cvt_float_to_fp8 __nv_cvt_fp8_to_halfraw "
    // integer and bit intrinsics
    "__popc __popcll __clz __clzll __ffs __ffsll __fns __brev __brevll __byte_perm "
    "__funnelshift_l __funnelshift_r __funnelshift_lc __funnelshift_rc __mul24 __umul24 "
    "__mulhi __umulhi __mul64hi __umul64hi __sad __usad __hadd_u __rhadd __uhadd __urhadd "
    "__dp4a __dp2a_lo __dp2a_hi __vabsdiffu4 __vadd4 __vsub4 __vmaxu4 __vminu4 "
    // address spaces and asynchronous copies
    "__isGlobal __isShared __isConstant __isLocal __isGridConstant __cvta_generic_to_shared "
    "__cvta_generic_to_global __cvta_shared_to_generic __cvta_global_to_generic "
    "__pipeline_memcpy_async __pipeline_commit __pipeline_wait_prior __pipeline_arrive_on "
    "memcpy_async cp_async_wait_all wait_prior arrive_and_wait producer_acquire "
    "producer_commit consumer_wait consumer_release make_pipeline "
    "__builtin_assume __builtin_assume_aligned __builtin_expect __builtin_unreachable "
    // warp matrix functions (nvcuda::wmma) and cooperative groups
    "load_matrix_sync store_matrix_sync mma_sync fill_fragment this_thread_block this_grid "
    "this_cluster this_thread tiled_partition coalesced_threads labeled_partition "
    "binary_partition thread_rank meta_group_rank meta_group_size num_threads "
    "block_rank cluster_shape map_shared_rank inclusive_scan exclusive_scan "
    // device-side library calls
    "printf assert malloc memcpy memset "
    // runtime API
    "cudaMalloc cudaMallocAsync cudaMallocManaged cudaMallocHost cudaFree cudaFreeAsync "
    "cudaFreeHost cudaMemcpy cudaMemcpyAsync cudaMemcpy2D cudaMemcpyToSymbol "
    "cudaMemcpyFromSymbol cudaMemset cudaMemsetAsync cudaDeviceSynchronize "
    "cudaStreamSynchronize cudaStreamCreate cudaStreamCreateWithFlags cudaStreamDestroy "
    "cudaEventCreate cudaEventRecord cudaEventSynchronize cudaEventElapsedTime "
    "cudaEventDestroy cudaGetLastError cudaPeekAtLastError cudaGetErrorString "
    "cudaGetErrorName cudaLaunchKernel cudaLaunchKernelEx cudaLaunchCooperativeKernel "
    "cudaFuncSetAttribute cudaFuncGetAttributes cudaGetDevice cudaSetDevice "
    "cudaGetDeviceProperties cudaDeviceGetAttribute cudaOccupancyMaxActiveBlocksPerMultiprocessor "
    "cudaOccupancyMaxPotentialBlockSize cudaSuccess cudaMemcpyHostToDevice "
    "cudaMemcpyDeviceToHost cudaMemcpyDeviceToDevice cudaMemcpyDefault "
    "cudaFuncAttributeMaxDynamicSharedMemorySize cudaStreamNonBlocking tex1Dfetch tex2D "
    "tex3D surf2Dread surf2Dwrite";

// Set 4 ("global classes"): vector, reduced-precision and CUDA runtime types.
constexpr const char kTypes[] =
    "char1 char2 char3 char4 uchar1 uchar2 uchar3 uchar4 short1 short2 short3 short4 "
    "ushort1 ushort2 ushort3 ushort4 int1 int2 int3 int4 uint1 uint2 uint3 uint4 long1 long2 "
    "long3 long4 ulong1 ulong2 ulong3 ulong4 longlong1 longlong2 longlong3 longlong4 "
    "ulonglong1 ulonglong2 ulonglong3 ulonglong4 float1 float2 float3 float4 double1 double2 "
    "double3 double4 long4_16a long4_32a ulong4_16a ulong4_32a longlong4_16a longlong4_32a "
    "ulonglong4_16a ulonglong4_32a double4_16a double4_32a "
    "half half2 __half __half2 __half_raw __half2_raw nv_bfloat16 nv_bfloat162 __nv_bfloat16 "
    "__nv_bfloat162 __nv_bfloat16_raw __nv_fp8_e4m3 __nv_fp8_e5m2 __nv_fp8x2_e4m3 "
    "__nv_fp8x2_e5m2 __nv_fp8x4_e4m3 __nv_fp8x4_e5m2 __nv_fp8_e8m0 __nv_fp8_storage_t "
    "__nv_fp6_e2m3 __nv_fp6_e3m2 __nv_fp4_e2m1 __nv_fp4x2_e2m1 __nv_fp4x4_e2m1 "
    "dim3 cudaStream_t cudaEvent_t cudaError_t cudaDeviceProp cudaLaunchConfig_t "
    "cudaLaunchAttribute cudaFuncAttributes cudaTextureObject_t cudaSurfaceObject_t "
    "cudaGraph_t cudaGraphExec_t CUstream CUevent CUresult CUdevice CUdeviceptr CUcontext "
    "CUmodule CUfunction CUtensorMap "
    "size_t ptrdiff_t intptr_t uintptr_t int8_t int16_t int32_t int64_t uint8_t uint16_t "
    "uint32_t uint64_t "
    "matrix_a matrix_b accumulator row_major col_major mem_row_major mem_col_major "
    "nvcuda wmma cooperative_groups thread_block thread_block_tile grid_group "
    "cluster_group coalesced_group thread_group pipeline_shared_state "
    "aligned_size_t";

// Colours for a light background, chosen to stay apart from each other.
const QColor kKeywordColour(0x1d, 0x4e, 0xd8);  // blue, bold
const QColor kBuiltinColour(0x9d, 0x17, 0x9d);  // magenta
const QColor kTypeColour(0x0f, 0x76, 0x6e);     // teal
const QColor kCommentColour(0x6b, 0x72, 0x80);  // grey, italic
const QColor kNumberColour(0xc2, 0x41, 0x0c);   // burnt orange
const QColor kStringColour(0x15, 0x80, 0x3d);   // green
const QColor kPreprocessorColour(0x92, 0x40, 0x0e);
const QColor kTextColour(0x1f, 0x29, 0x37);
const QColor kInactiveColour(0xa0, 0xa6, 0xb0);

}  // namespace

CudaLexer::CudaLexer(QObject *parent)
    : QsciLexerCPP(parent), base_(QFontDatabase::systemFont(QFontDatabase::FixedFont)) {
  base_.setStyleHint(QFont::Monospace);
  setBaseFont(base_);
}

const char *CudaLexer::language() const {
  return "CUDA";
}

const char *CudaLexer::keywords(int set) const {
  switch (set) {
    case 1:
      return kKeywords;
    case 2:
      return kBuiltins;
    case 4:
      return kTypes;
    default:
      return QsciLexerCPP::keywords(set);
  }
}

QString CudaLexer::description(int style) const {
  switch (style) {
    case KeywordSet2:
      return tr("CUDA built-ins and intrinsics");
    case GlobalClass:
      return tr("CUDA and vector types");
    default:
      return QsciLexerCPP::description(style);
  }
}

QColor CudaLexer::defaultColor(int style) const {
  if (style >= 64) {  // inactive preprocessor branches
    return kInactiveColour;
  }
  switch (style) {
    case Keyword:
      return kKeywordColour;
    case KeywordSet2:
      return kBuiltinColour;
    case GlobalClass:
      return kTypeColour;
    case Comment:
    case CommentLine:
    case CommentDoc:
    case CommentLineDoc:
    case CommentDocKeyword:
    case PreProcessorComment:
    case PreProcessorCommentLineDoc:
      return kCommentColour;
    case Number:
      return kNumberColour;
    case DoubleQuotedString:
    case SingleQuotedString:
    case RawString:
    case VerbatimString:
      return kStringColour;
    case PreProcessor:
      return kPreprocessorColour;
    case Default:
    case Identifier:
    case Operator:
      return kTextColour;
    default:
      return QsciLexerCPP::defaultColor(style);
  }
}

QColor CudaLexer::defaultPaper(int style) const {
  if (style == UnclosedString) return QColor(0xfe, 0xe2, 0xe2);
  return QColor(Qt::white);
}

QFont CudaLexer::defaultFont(int style) const {
  return styledFont(style);
}

QFont CudaLexer::styledFont(int style) const {
  QFont font = base_;
  switch (style % 64) {
    case Keyword:
      font.setBold(true);
      break;
    case Comment:
    case CommentLine:
    case CommentDoc:
    case CommentLineDoc:
    case CommentDocKeyword:
      font.setItalic(true);
      break;
    default:
      break;
  }
  return font;
}

void CudaLexer::setBaseFont(const QFont &font) {
  base_ = font;
  setDefaultFont(base_);
  for (int style = 0; style < 128; ++style) {
    if (!description(style).isEmpty()) setFont(styledFont(style), style);
  }
}

}  // namespace kwb::ui
