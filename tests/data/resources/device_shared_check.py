"""Device check behind h200_shared_check_*.json: how the driver counts cuobjdump's SHARED.

Run on a GPU machine with cuda-bindings, next to the cubins `make_fixtures.py --cubins DIR` keeps
(the committed JSON came from the same kernels, compiled with Triton 3.4.0 for sm_90a, on an H200,
driver 580.159.04):

    python3 device_shared_check.py DIR > out.json

For each kernel it prints CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES (the driver's static shared), the
largest accepted MAX_DYNAMIC_SHARED_SIZE_BYTES, and the dynamic sizes at which
cuOccupancyMaxActiveBlocksPerMultiprocessor changes its answer.
"""

import json
import sys
from pathlib import Path

from cuda.bindings import driver as cu

KERNELS = {  # cubin file -> (function, threads per block, Triton metadata.shared)
    "red64x64-3.4.0.cubin": ("red_kernel", 128, 512),
    "red64x256-3.4.0.cubin": ("red_kernel", 128, 1024),
    "multi.cubin": ("shared_kernel", 256, 0),
}


def ok(r):
    if r[0] != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(str(r[0]))
    return r[1] if len(r) == 2 else r[1:]


def main() -> None:
    folder = Path(sys.argv[1])
    ok(cu.cuInit(0))
    dev = ok(cu.cuDeviceGet(0))
    ok(cu.cuCtxSetCurrent(ok(cu.cuDevicePrimaryCtxRetain(dev))))
    A, F = cu.CUdevice_attribute, cu.CUfunction_attribute
    optin = ok(cu.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev))
    out = {"reserved_per_block": ok(cu.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, dev))}
    for file, (name, threads, triton_shared) in KERNELS.items():
        fn = ok(cu.cuModuleGetFunction(ok(cu.cuModuleLoadData((folder / file).read_bytes())), name.encode()))
        static = ok(cu.cuFuncGetAttribute(F.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn))
        rec = {"triton_shared": triton_shared, "static_shared": static}
        for dyn in (optin - static, optin - static + 1):
            rec[f"set_max_dynamic_{dyn}"] = str(cu.cuFuncSetAttribute(fn, F.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dyn)[0])
        trans, prev = {}, None
        for d in range(40000, 120000, 128):
            r = cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, threads, d)
            if r[0] == cu.CUresult.CUDA_SUCCESS and r[1] != prev:
                trans[d], prev = r[1], r[1]
        rec["occupancy_transitions"] = trans
        out[file] = rec
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
