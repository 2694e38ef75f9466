#include <kess/core/kokkos/device_partition.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>
#endif

namespace kess::core {

#if defined(KOKKOS_ENABLE_CUDA)
namespace {

#if CUDART_VERSION >= 12050
// The driver's green-context entry points, looked up through the runtime (no link to libcuda).
struct GreenApi {
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*get_resource)(CUdevice, CUdevResource*, CUdevResourceType) = nullptr;
  CUresult (*split)(CUdevResource*, unsigned*, const CUdevResource*, CUdevResource*, unsigned,
                    unsigned) = nullptr;
  CUresult (*generate_desc)(CUdevResourceDesc*, CUdevResource*, unsigned) = nullptr;
  CUresult (*create)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned) = nullptr;
  CUresult (*stream_create)(CUstream*, CUgreenCtx, unsigned, int) = nullptr;
  bool ok = false;

  template <class F>
  static bool find(const char* name, F& f) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion(name, &p, 12050, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess || p == nullptr) {
      cudaGetLastError();
      return false;
    }
    f = reinterpret_cast<F>(p);
    return true;
  }
  GreenApi() {
    ok = find("cuDeviceGet", device_get) && find("cuDeviceGetDevResource", get_resource) &&
         find("cuDevSmResourceSplitByCount", split) &&
         find("cuDevResourceGenerateDesc", generate_desc) && find("cuGreenCtxCreate", create) &&
         find("cuGreenCtxStreamCreate", stream_create);
  }
};

const GreenApi& green_api() {
  static const GreenApi api;
  return api;
}

// One green context per (device, multiprocessors left out), created once (nullptr: none).
CUgreenCtx green_context(int device, int leave) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, CUgreenCtx> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(device, leave);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const GreenApi& api = green_api();
  CUgreenCtx g = nullptr;
  CUdevice dev{};
  CUdevResource all{}, part{}, rest{};
  unsigned groups = 1;
  CUdevResourceDesc desc = nullptr;
  if (api.ok && api.device_get(&dev, device) == CUDA_SUCCESS &&
      api.get_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM) == CUDA_SUCCESS) {
    const int device_sms = static_cast<int>(all.sm.smCount);
    const int align = static_cast<int>(std::max(1u, all.sm.smCoscheduledAlignment));
    const int sms = (device_sms - leave) / align * align;
    if (leave > 0 && sms >= static_cast<int>(all.sm.minSmPartitionSize) && sms > 0 &&
        api.split(&part, &groups, &all, &rest, 0, static_cast<unsigned>(sms)) == CUDA_SUCCESS &&
        groups == 1 && static_cast<int>(part.sm.smCount) < device_sms &&
        api.generate_desc(&desc, &part, 1) == CUDA_SUCCESS &&
        api.create(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM) != CUDA_SUCCESS)
      g = nullptr;
  }
  cache.emplace(key, g);
  return g;
}
#endif

}  // namespace

std::optional<Kokkos::Cuda> partition_device(const Kokkos::Cuda& exec, int leave) {
#if CUDART_VERSION >= 12050
  const CUgreenCtx g = green_context(exec.cuda_device(), leave);
  CUstream stream = nullptr;
  if (g == nullptr ||
      green_api().stream_create(&stream, g, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS)
    return std::nullopt;
  return Kokkos::Cuda(static_cast<cudaStream_t>(stream), Kokkos::Impl::ManageStream::yes);
#else
  (void)exec;
  (void)leave;
  return std::nullopt;
#endif
}
#endif

}  // namespace kess::core
