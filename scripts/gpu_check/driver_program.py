"""A small CUDA program with no compiler and no CUDA toolkit: the driver API
through ctypes, and a kernel written in PTX that the driver compiles.

  driver_program.py LAUNCHES [--elements N] [--json OUT]

Copies 1 MiB host-to-device from pageable and from pinned memory, clears it
with a memset, launches `add_one` LAUNCHES times on a created stream (each
adds 1.0 to every element), synchronizes, copies back device-to-host and
checks the values. Prints (and writes with --json) the launch loop's wall
time, which the device check compares with and without the GPU collector;
`--elements 256` makes each kernel tiny, so the loop measures launches.
"""
import ctypes
import json
import sys
import time

PTX = rb"""
.version 7.0
.target sm_80
.address_size 64
.visible .entry add_one(.param .u64 data, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<5>;
  .reg .f32 %f<3>;
  ld.param.u64 %rd1, [data];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.u32 %p1, %r1, %r2;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd4], %f2;
DONE:
  ret;
}
"""

N = 1 << 18  # floats: 1 MiB (the kernels may touch fewer: --elements)
cuda = ctypes.CDLL("libcuda.so.1")


def check(result, what):
    if result != 0:
        name = ctypes.c_char_p()
        cuda.cuGetErrorName(result, ctypes.byref(name))
        raise SystemExit(f"{what} failed: {name.value.decode() if name.value else result}")


def main():
    launches = int(sys.argv[1])
    out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    check(cuda.cuInit(0), "cuInit")
    device = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    context = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    check(cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(PTX)), "cuModuleLoadData")
    check(cuda.cuModuleGetFunction(ctypes.byref(function), module, b"add_one"), "cuModuleGetFunction")
    stream = ctypes.c_void_p()
    check(cuda.cuStreamCreate(ctypes.byref(stream), 0), "cuStreamCreate")

    nbytes = N * 4
    data = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(data), ctypes.c_size_t(nbytes)), "cuMemAlloc")
    pageable = (ctypes.c_float * N)(*([2.0] * N))
    pinned = ctypes.c_void_p()
    check(cuda.cuMemAllocHost_v2(ctypes.byref(pinned), ctypes.c_size_t(nbytes)), "cuMemAllocHost")
    check(cuda.cuMemcpyHtoD_v2(data, pageable, ctypes.c_size_t(nbytes)), "cuMemcpyHtoD (pageable)")
    check(cuda.cuMemcpyHtoDAsync_v2(data, pinned, ctypes.c_size_t(nbytes), stream), "cuMemcpyHtoDAsync (pinned)")
    check(cuda.cuMemsetD8Async(data, ctypes.c_ubyte(0), ctypes.c_size_t(nbytes), stream), "cuMemsetD8Async")

    elements = int(sys.argv[sys.argv.index("--elements") + 1]) if "--elements" in sys.argv else N
    n = ctypes.c_uint32(elements)
    params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(data), ctypes.c_void_p),
                                   ctypes.cast(ctypes.byref(n), ctypes.c_void_p))
    check(cuda.cuStreamSynchronize(stream), "cuStreamSynchronize")
    start = time.perf_counter()
    for _ in range(launches):
        check(cuda.cuLaunchKernel(function, (elements + 255) // 256, 1, 1, 256, 1, 1, 0, stream, params, None),
              "cuLaunchKernel")
    check(cuda.cuStreamSynchronize(stream), "cuStreamSynchronize")
    loop_s = time.perf_counter() - start

    result = (ctypes.c_float * N)()
    check(cuda.cuMemcpyDtoH_v2(result, data, ctypes.c_size_t(nbytes)), "cuMemcpyDtoH")
    check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    last = elements - 1
    if result[0] != float(launches) or result[last] != float(launches) or (elements < N and result[elements] != 0.0):
        raise SystemExit(f"wrong result: {result[0]}, {result[last]}, expected {launches}")
    summary = {"launches": launches, "loop_s": loop_s, "us_per_launch": loop_s / max(launches, 1) * 1e6}
    print(json.dumps(summary))
    if out:
        with open(out, "w") as f:
            json.dump(summary, f)


main()
