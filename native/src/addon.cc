// N-API entry points (node-addon-api). JS keeps one Float64Array as the argument block. Each kernel
// has two bindings (kernels.h): `exports.<kernel>()` on the wasm heap, whose buffer JS hands over
// whenever the wasm memory grows (the old ArrayBuffer is detached then), and
// `exports.typed.<kernel>(...arrays)` on the TypedArrays passed in the call.
#include <napi.h>
#include <cblas.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "kernels.h"

extern "C" {
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
char* openblas_get_config(void);
}

namespace sharp {
uint8_t* g_heap = nullptr;
uint8_t* const* g_ptrs = nullptr;
double* g_args = nullptr;
char g_error[256] = {0};
int g_autoThreadsMax = 0;
int g_threadsNow = 1;
static Napi::Reference<Napi::Float64Array> g_argsRef;
static Napi::Reference<Napi::ArrayBuffer> g_heapRef;
}  // namespace sharp

using namespace sharp;

static Napi::Value SetArgs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray()) {
    Napi::TypeError::New(env, "setArgs: expected a Float64Array").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  auto arr = info[0].As<Napi::Float64Array>();
  if (arr.ElementLength() < static_cast<size_t>(kArgsLen)) {
    Napi::RangeError::New(env, "setArgs: argument block too small").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  g_argsRef = Napi::Persistent(arr);
  g_args = arr.Data();
  return env.Undefined();
}

static Napi::Value SetHeap(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArrayBuffer()) {
    Napi::TypeError::New(env, "setHeap: expected the wasm memory ArrayBuffer").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  auto buf = info[0].As<Napi::ArrayBuffer>();
  g_heapRef = Napi::Persistent(buf);
  g_heap = static_cast<uint8_t*>(buf.Data());
  return Napi::Number::New(env, static_cast<double>(buf.ByteLength()));
}

// Fixed thread count (autoMax = 0) or automatic per GEMM (autoMax = all cores; see matmul.cc).
static Napi::Value SetThreads(const Napi::CallbackInfo& info) {
  int n = info[0].As<Napi::Number>().Int32Value();
  if (n < 1) n = 1;
  g_autoThreadsMax = 0;
  openblas_set_num_threads(n);
  g_threadsNow = openblas_get_num_threads();
  return Napi::Number::New(info.Env(), g_threadsNow);
}

static Napi::Value SetAutoThreads(const Napi::CallbackInfo& info) {
  int n = info[0].As<Napi::Number>().Int32Value();
  g_autoThreadsMax = n < 1 ? 1 : n;
  return Napi::Number::New(info.Env(), g_autoThreadsMax);
}

static Napi::Value GetThreads(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), openblas_get_num_threads());
}

// What the kernels' own loops were compiled for (the prebuilt binaries: the x86-64 baseline, or
// AVX2+FMA; a local build: this machine's -march=native).
#if defined(__AVX512F__)
static const char kKernelIsa[] = "AVX-512";
#elif defined(__AVX2__) && defined(__FMA__)
static const char kKernelIsa[] = "AVX2+FMA";
#elif defined(__x86_64__)
static const char kKernelIsa[] = "x86-64 baseline";
#else
static const char kKernelIsa[] = "generic";
#endif

static Napi::Value BlasConfig(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), std::string(openblas_get_config()) + "; kernels " + kKernelIsa);
}

static Napi::Value LastError(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), g_error);
}

// Wraps a kernel: returns its status code (0 = ok) so JS can throw a one-line error with context.
template <int (*K)()>
static Napi::Value Call(const Napi::CallbackInfo& info) {
  if (g_heap == nullptr || g_args == nullptr) {
    std::strncpy(g_error, "native kernels used before setArgs/setHeap", sizeof(g_error) - 1);
    return Napi::Number::New(info.Env(), -1);
  }
  g_error[0] = 0;
  return Napi::Number::New(info.Env(), K());
}

// Typed-array binding: every argument is a TypedArray (any element type; its data pointer, offset
// included, is taken as is, nothing is copied); the kernel's reference slots hold argument indices.
template <int (*K)()>
static Napi::Value CallTyped(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (g_args == nullptr) {
    std::strncpy(g_error, "native kernels used before setArgs", sizeof(g_error) - 1);
    return Napi::Number::New(env, -1);
  }
  static std::vector<uint8_t*> ptrs;
  const size_t n = info.Length();
  ptrs.resize(n);
  for (size_t i = 0; i < n; i++) {
    napi_typedarray_type type;
    size_t length = 0, byteOffset = 0;
    void* data = nullptr;
    napi_value buffer;
    if (napi_get_typedarray_info(env, info[i], &type, &length, &data, &buffer, &byteOffset) != napi_ok) {
      std::snprintf(g_error, sizeof(g_error), "argument %zu is not a TypedArray", i);
      return Napi::Number::New(env, -1);
    }
    ptrs[i] = static_cast<uint8_t*>(data);
  }
  g_error[0] = 0;
  g_ptrs = ptrs.data();
  const int code = K();
  g_ptrs = nullptr;
  return Napi::Number::New(env, code);
}

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("setArgs", Napi::Function::New(env, SetArgs));
  exports.Set("setHeap", Napi::Function::New(env, SetHeap));
  exports.Set("setThreads", Napi::Function::New(env, SetThreads));
  exports.Set("setAutoThreads", Napi::Function::New(env, SetAutoThreads));
  exports.Set("getThreads", Napi::Function::New(env, GetThreads));
  exports.Set("blasConfig", Napi::Function::New(env, BlasConfig));
  exports.Set("lastError", Napi::Function::New(env, LastError));
  exports.Set("argsLength", Napi::Number::New(env, kArgsLen));
  exports.Set("matmul", Napi::Function::New(env, Call<matmul>));
  exports.Set("binary", Napi::Function::New(env, Call<binary>));
  exports.Set("unary", Napi::Function::New(env, Call<unary>));
  exports.Set("transpose", Napi::Function::New(env, Call<transpose>));
  exports.Set("slice", Napi::Function::New(env, Call<slice>));
  exports.Set("concat", Napi::Function::New(env, Call<concat>));
  exports.Set("gather", Napi::Function::New(env, Call<gather>));
  exports.Set("segmentSum", Napi::Function::New(env, Call<segmentSum>));
  exports.Set("oneHot", Napi::Function::New(env, Call<oneHot>));
  exports.Set("addN", Napi::Function::New(env, Call<addN>));
  exports.Set("reduce", Napi::Function::New(env, Call<reduce>));
  exports.Set("softmax", Napi::Function::New(env, Call<softmax>));
  exports.Set("adamw", Napi::Function::New(env, Call<adamw>));
  exports.Set("select", Napi::Function::New(env, Call<select>));
  exports.Set("cast", Napi::Function::New(env, Call<cast>));
  exports.Set("rmsNorm", Napi::Function::New(env, Call<rmsNorm>));
  exports.Set("rmsNormGrad", Napi::Function::New(env, Call<rmsNormGrad>));
  exports.Set("swiglu", Napi::Function::New(env, Call<swiglu>));
  exports.Set("swigluGrad", Napi::Function::New(env, Call<swigluGrad>));
  exports.Set("rope", Napi::Function::New(env, Call<rope>));
  exports.Set("selectedLogprobs", Napi::Function::New(env, Call<selectedLogprobs>));
  exports.Set("selectedLogprobsGrad", Napi::Function::New(env, Call<selectedLogprobsGrad>));
  exports.Set("attnProbs", Napi::Function::New(env, Call<attnProbs>));
  exports.Set("attnProbsGrad", Napi::Function::New(env, Call<attnProbsGrad>));
  exports.Set("attnApply", Napi::Function::New(env, Call<attnApply>));
  exports.Set("attnApplyGrad", Napi::Function::New(env, Call<attnApplyGrad>));
  exports.Set("kvWrite", Napi::Function::New(env, Call<kvWrite>));
  exports.Set("cumsum", Napi::Function::New(env, Call<cumsum>));
  exports.Set("bf16MatMul", Napi::Function::New(env, Call<bf16MatMul>));
  exports.Set("bf16Unpack", Napi::Function::New(env, Call<bf16Unpack>));
  Napi::Object typed = Napi::Object::New(env);
  typed.Set("matmul", Napi::Function::New(env, CallTyped<matmul>));
  typed.Set("binary", Napi::Function::New(env, CallTyped<binary>));
  typed.Set("unary", Napi::Function::New(env, CallTyped<unary>));
  typed.Set("transpose", Napi::Function::New(env, CallTyped<transpose>));
  typed.Set("slice", Napi::Function::New(env, CallTyped<slice>));
  typed.Set("concat", Napi::Function::New(env, CallTyped<concat>));
  typed.Set("gather", Napi::Function::New(env, CallTyped<gather>));
  typed.Set("segmentSum", Napi::Function::New(env, CallTyped<segmentSum>));
  typed.Set("oneHot", Napi::Function::New(env, CallTyped<oneHot>));
  typed.Set("addN", Napi::Function::New(env, CallTyped<addN>));
  typed.Set("reduce", Napi::Function::New(env, CallTyped<reduce>));
  typed.Set("softmax", Napi::Function::New(env, CallTyped<softmax>));
  typed.Set("adamw", Napi::Function::New(env, CallTyped<adamw>));
  typed.Set("select", Napi::Function::New(env, CallTyped<select>));
  typed.Set("cast", Napi::Function::New(env, CallTyped<cast>));
  typed.Set("cumsum", Napi::Function::New(env, CallTyped<cumsum>));
  typed.Set("rmsNorm", Napi::Function::New(env, CallTyped<rmsNorm>));
  typed.Set("rmsNormGrad", Napi::Function::New(env, CallTyped<rmsNormGrad>));
  typed.Set("swiglu", Napi::Function::New(env, CallTyped<swiglu>));
  typed.Set("swigluGrad", Napi::Function::New(env, CallTyped<swigluGrad>));
  typed.Set("rope", Napi::Function::New(env, CallTyped<rope>));
  typed.Set("selectedLogprobs", Napi::Function::New(env, CallTyped<selectedLogprobs>));
  typed.Set("selectedLogprobsGrad", Napi::Function::New(env, CallTyped<selectedLogprobsGrad>));
  typed.Set("attnProbs", Napi::Function::New(env, CallTyped<attnProbs>));
  typed.Set("attnProbsGrad", Napi::Function::New(env, CallTyped<attnProbsGrad>));
  typed.Set("attnApply", Napi::Function::New(env, CallTyped<attnApply>));
  typed.Set("attnApplyGrad", Napi::Function::New(env, CallTyped<attnApplyGrad>));
  typed.Set("kvWrite", Napi::Function::New(env, CallTyped<kvWrite>));
  typed.Set("bf16MatMul", Napi::Function::New(env, CallTyped<bf16MatMul>));
  typed.Set("bf16Unpack", Napi::Function::New(env, CallTyped<bf16Unpack>));
  exports.Set("typed", typed);
  return exports;
}

NODE_API_MODULE(sharp_native, Init)
