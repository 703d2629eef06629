/* cuda_driver.c — NVRTC and the CUDA Driver API through dlopen (see cuda_driver.h).
 *
 * cuda.h and nvrtc.h are included for their types only: every function is looked up with
 * dlsym under its versioned name (cuda.h maps cuMemAlloc to cuMemAlloc_v2 and so on, so the
 * names are spelt out here rather than taken from the macros).
 *
 * Both libraries are opened RTLD_NODELETE: once loaded they stay for the life of the process
 * (dlclose only drops a reference). Unloading a CUDA library whose threads may still run is
 * unsafe, and NVRTC links its own libstdc++, whose exception pool would otherwise show up as
 * a 72 KiB leak from an unloaded module under LeakSanitizer. */
#include "cuda_driver.h"
#include "diag.h"
#include "knobs.h"
#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dlsym into a function pointer without the object/function pointer cast warning. */
static int load_sym(void *lib, const char *name, void *fn_ptr_addr)
{
    void *p = dlsym(lib, name);
    if (!p) return -1;
    memcpy(fn_ptr_addr, &p, sizeof p);
    return 0;
}

/* ---- NVRTC ------------------------------------------------------------------------------ */

struct cuda_nvrtc {
    void *lib;
    char version[32];
    int *archs, n_archs;
    const char *(*GetErrorString)(nvrtcResult);
    nvrtcResult (*Version)(int *, int *);
    nvrtcResult (*GetNumSupportedArchs)(int *);
    nvrtcResult (*GetSupportedArchs)(int *);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                                 const char *const *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
};

static void *open_first(const char *const *names, int n, char *tried, size_t tried_len)
{
    size_t used = 0;
    if (tried_len) tried[0] = 0;
    for (int i = 0; i < n; i++) {
        if (!names[i] || !*names[i]) continue;
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (lib) return lib;
        if (used < tried_len) {
            int w = snprintf(tried + used, tried_len - used, "%s%s", used ? ", " : "", names[i]);
            if (w > 0) used += (size_t)w;
        }
    }
    return NULL;
}

void cuda_nvrtc_names_init(cuda_nvrtc_names *n)
{
    n->home13[0] = n->home[0] = 0;
    const char *ch = knob(KNOB_CUDA_HOME);
    if (ch) {
        snprintf(n->home13, sizeof n->home13, "%s/lib64/libnvrtc.so.13", ch);
        snprintf(n->home, sizeof n->home, "%s/lib64/libnvrtc.so", ch);
    }
    const char *names[CUDA_NVRTC_CANDIDATES] = {knob(KNOB_NVRTC), "libnvrtc.so.13", "libnvrtc.so", n->home13,
                                                n->home, "/usr/local/cuda/lib64/libnvrtc.so.13",
                                                "/usr/local/cuda/lib64/libnvrtc.so", "libnvrtc.so.12"};
    memcpy(n->name, names, sizeof names);
}

cuda_nvrtc *cuda_nvrtc_open(char *reason, size_t reason_len)
{
    cuda_nvrtc_names nn;
    cuda_nvrtc_names_init(&nn);
    char tried[1024];
    void *lib = open_first(nn.name, CUDA_NVRTC_CANDIDATES, tried, sizeof tried);
    if (!lib) {
        diag_set(reason, reason_len, "NVRTC not found (tried %s)", tried);
        return NULL;
    }
    cuda_nvrtc *nv = calloc(1, sizeof *nv);
    if (!nv) {
        dlclose(lib);
        diag_set(reason, reason_len, "out of memory");
        return NULL;
    }
    nv->lib = lib;
    struct { const char *name; void *slot; } syms[] = {
        {"nvrtcGetErrorString", &nv->GetErrorString},
        {"nvrtcVersion", &nv->Version},
        {"nvrtcGetNumSupportedArchs", &nv->GetNumSupportedArchs},
        {"nvrtcGetSupportedArchs", &nv->GetSupportedArchs},
        {"nvrtcCreateProgram", &nv->CreateProgram},
        {"nvrtcDestroyProgram", &nv->DestroyProgram},
        {"nvrtcCompileProgram", &nv->CompileProgram},
        {"nvrtcGetProgramLogSize", &nv->GetProgramLogSize},
        {"nvrtcGetProgramLog", &nv->GetProgramLog},
        {"nvrtcGetPTXSize", &nv->GetPTXSize},
        {"nvrtcGetPTX", &nv->GetPTX},
        {"nvrtcGetCUBINSize", &nv->GetCUBINSize},
        {"nvrtcGetCUBIN", &nv->GetCUBIN},
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
        if (load_sym(lib, syms[i].name, syms[i].slot)) {
            diag_set(reason, reason_len, "NVRTC lacks %s (too old)", syms[i].name);
            cuda_nvrtc_close(nv);
            return NULL;
        }
    int major = 0, minor = 0;
    if (nv->Version(&major, &minor) != NVRTC_SUCCESS) {
        diag_set(reason, reason_len, "nvrtcVersion failed");
        cuda_nvrtc_close(nv);
        return NULL;
    }
    snprintf(nv->version, sizeof nv->version, "%d.%d", major, minor);
    int n = 0;
    if (nv->GetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
        nv->archs = malloc(sizeof *nv->archs * (size_t)n);
        if (nv->archs && nv->GetSupportedArchs(nv->archs) == NVRTC_SUCCESS) nv->n_archs = n;
    }
    return nv;
}

void cuda_nvrtc_close(cuda_nvrtc *nv)
{
    if (!nv) return;
    free(nv->archs);
    if (nv->lib) dlclose(nv->lib);
    free(nv);
}

const char *cuda_nvrtc_version(const cuda_nvrtc *nv) { return nv->version; }

int cuda_nvrtc_has_cubin(const cuda_nvrtc *nv, int sm)
{
    for (int i = 0; i < nv->n_archs; i++)
        if (nv->archs[i] == sm) return 1;
    return 0;
}

/* Copies the first lines of a log (up to ~600 characters) after a prefix. */
static void err_with_log(char *err, size_t err_len, const char *prefix, const char *log)
{
    if (!log || !*log) {
        diag_set(err, err_len, "%s", prefix);
        return;
    }
    size_t n = strlen(log);
    while (n && (log[n - 1] == '\n' || log[n - 1] == ' ')) n--;
    if (n > 600) n = 600;
    diag_set(err, err_len, "%s:\n%.*s", prefix, (int)n, log);
}

int cuda_nvrtc_compile(cuda_nvrtc *nv, const char *src, const char *name, int sm, int fast_math,
                       void **image, size_t *len, int *is_cubin, char **log, char *err,
                       size_t err_len)
{
    *image = NULL;
    *len = 0;
    *is_cubin = 0;
    if (log) *log = NULL;
    /* a cubin when this NVRTC knows sm, else PTX for the newest architecture it knows below */
    int cubin = cuda_nvrtc_has_cubin(nv, sm) || nv->n_archs == 0, target = sm;
    if (!cubin) {
        target = 0;
        for (int i = 0; i < nv->n_archs; i++)
            if (nv->archs[i] <= sm && nv->archs[i] > target) target = nv->archs[i];
        if (!target) {
            diag_set(err, err_len, "NVRTC %s cannot compile for compute capability %d.%d (oldest it knows: %d.%d)",
                    nv->version, sm / 10, sm % 10, nv->n_archs ? nv->archs[0] / 10 : 0,
                    nv->n_archs ? nv->archs[0] % 10 : 0);
            return -1;
        }
    }
    char arch[48], prog_name[256];
    snprintf(arch, sizeof arch, "--gpu-architecture=%s_%d", cubin ? "sm" : "compute", target);
    snprintf(prog_name, sizeof prog_name, "%s.cu", name ? name : "kernel");
    const char *opts[] = {arch, fast_math ? "--use_fast_math" : "--fmad=false", "--std=c++17"};

    nvrtcProgram prog = NULL;
    char *logbuf = NULL;
    int rc = -1;
    nvrtcResult r = nv->CreateProgram(&prog, src, prog_name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        diag_set(err, err_len, "nvrtcCreateProgram: %s", nv->GetErrorString(r));
        prog = NULL;
        goto out;
    }
    nvrtcResult cr = nv->CompileProgram(prog, (int)(sizeof opts / sizeof *opts), opts);
    size_t log_size = 0;
    if (nv->GetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
        logbuf = malloc(log_size);
        if (logbuf && nv->GetProgramLog(prog, logbuf) != NVRTC_SUCCESS) {
            free(logbuf);
            logbuf = NULL;
        }
    }
    if (cr != NVRTC_SUCCESS) {
        char prefix[512];
        snprintf(prefix, sizeof prefix, "nvrtcCompileProgram (%s, %s): %s", prog_name, arch + 19,
                 nv->GetErrorString(cr));
        err_with_log(err, err_len, prefix, logbuf);
        goto out;
    }
    size_t size = 0;
    r = cubin ? nv->GetCUBINSize(prog, &size) : nv->GetPTXSize(prog, &size);
    if (r != NVRTC_SUCCESS) {
        diag_set(err, err_len, "%s: %s", cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize", nv->GetErrorString(r));
        goto out;
    }
    char *img = malloc(size + 1);
    if (!img) {
        diag_set(err, err_len, "out of memory for a %zu-byte image", size);
        goto out;
    }
    r = cubin ? nv->GetCUBIN(prog, img) : nv->GetPTX(prog, img);
    if (r != NVRTC_SUCCESS) {
        free(img);
        diag_set(err, err_len, "%s: %s", cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX", nv->GetErrorString(r));
        goto out;
    }
    img[size] = 0;
    *image = img;
    *len = size;
    *is_cubin = cubin;
    rc = 0;
out:
    if (prog) nv->DestroyProgram(&prog);
    if (log) *log = logbuf;
    else free(logbuf);
    return rc;
}

/* ---- the driver ------------------------------------------------------------------------- */

typedef struct cu_api {
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemGetAddressRange)(CUdeviceptr *, size_t *, CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*Memcpy2D)(const CUDA_MEMCPY2D *); /* optional: NULL, rows one at a time */
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
} cu_api;

struct cuda_device {
    void *lib;
    cu_api cu;
    CUdevice dev;
    CUcontext ctx;
    int ctx_retained;
    char name[256];
    int cc, driver, sms;
    atomic_size_t live_bytes;
    atomic_int live_allocs;
};

struct cuda_module {
    cuda_device *d;
    CUmodule mod;
};

struct cuda_event {
    cuda_device *d;
    CUevent ev;
};

/* "call: CUDA_ERROR_X: description"; returns -1 for rc != CUDA_SUCCESS, else 0. */
static int cu_fail(const cuda_device *d, CUresult rc, const char *call, char *err, size_t err_len)
{
    if (rc == CUDA_SUCCESS) return 0;
    const char *name = NULL, *desc = NULL;
    if (d->cu.GetErrorName && d->cu.GetErrorName(rc, &name) != CUDA_SUCCESS) name = NULL;
    if (d->cu.GetErrorString && d->cu.GetErrorString(rc, &desc) != CUDA_SUCCESS) desc = NULL;
    if (name && desc) diag_set(err, err_len, "%s: %s: %s", call, name, desc);
    else diag_set(err, err_len, "%s: CUresult %d", call, (int)rc);
    return -1;
}

#define CU(d, call, args) cu_fail((d), (d)->cu.call args, "cu" #call, err, err_len)

/* Makes the primary context current on this thread. */
static int bind(cuda_device *d, char *err, size_t err_len)
{
    return CU(d, CtxSetCurrent, (d->ctx));
}

cuda_device *cuda_device_open(int ordinal, char *reason, size_t reason_len)
{
    const char *env = knob(KNOB_LIBCUDA);
    const char *libname = env ? env : "libcuda.so.1";
    void *lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) {
        if (env && *env) diag_set(reason, reason_len, "%s not found (no NVIDIA driver)", libname);
        else diag_set(reason, reason_len, "libcuda.so.1 not found (no NVIDIA driver)");
        return NULL;
    }
    cuda_device *d = calloc(1, sizeof *d);
    if (!d) {
        dlclose(lib);
        diag_set(reason, reason_len, "out of memory");
        return NULL;
    }
    d->lib = lib;
    atomic_init(&d->live_bytes, 0);
    atomic_init(&d->live_allocs, 0);
    cu_api *c = &d->cu;
    struct { const char *name; void *slot; } syms[] = {
        {"cuInit", &c->Init},
        {"cuDriverGetVersion", &c->DriverGetVersion},
        {"cuGetErrorName", &c->GetErrorName},
        {"cuGetErrorString", &c->GetErrorString},
        {"cuDeviceGetCount", &c->DeviceGetCount},
        {"cuDeviceGet", &c->DeviceGet},
        {"cuDeviceGetName", &c->DeviceGetName},
        {"cuDeviceGetAttribute", &c->DeviceGetAttribute},
        {"cuDevicePrimaryCtxRetain", &c->DevicePrimaryCtxRetain},
        {"cuDevicePrimaryCtxRelease_v2", &c->DevicePrimaryCtxRelease},
        {"cuCtxSetCurrent", &c->CtxSetCurrent},
        {"cuCtxSynchronize", &c->CtxSynchronize},
        {"cuMemGetInfo_v2", &c->MemGetInfo},
        {"cuMemAlloc_v2", &c->MemAlloc},
        {"cuMemFree_v2", &c->MemFree},
        {"cuMemGetAddressRange_v2", &c->MemGetAddressRange},
        {"cuMemcpyHtoD_v2", &c->MemcpyHtoD},
        {"cuMemcpyDtoH_v2", &c->MemcpyDtoH},
        {"cuMemcpyDtoD_v2", &c->MemcpyDtoD},
        {"cuMemsetD8_v2", &c->MemsetD8},
        {"cuModuleLoadData", &c->ModuleLoadData},
        {"cuModuleUnload", &c->ModuleUnload},
        {"cuModuleGetFunction", &c->ModuleGetFunction},
        {"cuLaunchKernel", &c->LaunchKernel},
        {"cuEventCreate", &c->EventCreate},
        {"cuEventDestroy_v2", &c->EventDestroy},
        {"cuEventRecord", &c->EventRecord},
        {"cuEventSynchronize", &c->EventSynchronize},
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
        if (load_sym(lib, syms[i].name, syms[i].slot)) {
            diag_set(reason, reason_len, "%s lacks %s (driver too old)", libname, syms[i].name);
            goto fail;
        }
    if (load_sym(lib, "cuMemcpy2D_v2", &c->Memcpy2D)) c->Memcpy2D = NULL;
    /* cuEventElapsedTime_v2 (12.8+) where the driver has it, the original otherwise */
    if (load_sym(lib, "cuEventElapsedTime_v2", &c->EventElapsedTime) &&
        load_sym(lib, "cuEventElapsedTime", &c->EventElapsedTime)) {
        diag_set(reason, reason_len, "%s lacks cuEventElapsedTime", libname);
        goto fail;
    }

    CUresult rc = c->Init(0);
    if (rc == CUDA_ERROR_STUB_LIBRARY) {
        diag_set(reason, reason_len, "the CUDA driver is a stub (cuInit returned %d)", (int)rc);
        goto fail;
    }
    if (rc == CUDA_ERROR_NO_DEVICE) {
        diag_set(reason, reason_len, "no CUDA device");
        goto fail;
    }
    if (rc != CUDA_SUCCESS) {
        cu_fail(d, rc, "cuInit", reason, reason_len);
        goto fail;
    }
    int count = 0;
    if (cu_fail(d, c->DeviceGetCount(&count), "cuDeviceGetCount", reason, reason_len)) goto fail;
    if (count == 0) {
        diag_set(reason, reason_len, "no CUDA device");
        goto fail;
    }
    if (ordinal < 0 || ordinal >= count) {
        diag_set(reason, reason_len, "no CUDA device %d (%d present)", ordinal, count);
        goto fail;
    }
    if (cu_fail(d, c->DeviceGet(&d->dev, ordinal), "cuDeviceGet", reason, reason_len)) goto fail;
    int major = 0, minor = 0;
    if (cu_fail(d, c->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev),
                "cuDeviceGetAttribute", reason, reason_len) ||
        cu_fail(d, c->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev),
                "cuDeviceGetAttribute", reason, reason_len) ||
        cu_fail(d, c->DeviceGetAttribute(&d->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev),
                "cuDeviceGetAttribute", reason, reason_len) ||
        cu_fail(d, c->DeviceGetName(d->name, (int)sizeof d->name, d->dev), "cuDeviceGetName", reason,
                reason_len) ||
        cu_fail(d, c->DriverGetVersion(&d->driver), "cuDriverGetVersion", reason, reason_len))
        goto fail;
    d->cc = major * 10 + minor;
    if (cu_fail(d, c->DevicePrimaryCtxRetain(&d->ctx, d->dev), "cuDevicePrimaryCtxRetain", reason, reason_len))
        goto fail;
    d->ctx_retained = 1;
    if (bind(d, reason, reason_len)) goto fail;
    return d;
fail:
    cuda_device_close(d);
    return NULL;
}

void cuda_device_close(cuda_device *d)
{
    if (!d) return;
    if (d->ctx_retained) d->cu.DevicePrimaryCtxRelease(d->dev);
    if (d->lib) dlclose(d->lib);
    free(d);
}

const char *cuda_device_name(const cuda_device *d) { return d->name; }
int cuda_device_cc(const cuda_device *d) { return d->cc; }
int cuda_device_driver_version(const cuda_device *d) { return d->driver; }
int cuda_device_sm_count(const cuda_device *d) { return d->sms; }

size_t cuda_device_live_bytes(const cuda_device *d, int *n_allocs)
{
    if (n_allocs) *n_allocs = atomic_load(&((cuda_device *)d)->live_allocs);
    return atomic_load(&((cuda_device *)d)->live_bytes);
}

int cuda_mem_info(cuda_device *d, size_t *free_bytes, size_t *total_bytes, char *err, size_t err_len)
{
    if (bind(d, err, err_len)) return -1;
    return CU(d, MemGetInfo, (free_bytes, total_bytes));
}

int cuda_mem_alloc(cuda_device *d, size_t bytes, cuda_ptr *out, char *err, size_t err_len)
{
    *out = 0;
    if (bind(d, err, err_len)) return -1;
    CUdeviceptr p = 0;
    if (CU(d, MemAlloc, (&p, bytes ? bytes : 1))) return -1;
    *out = (cuda_ptr)p;
    atomic_fetch_add(&d->live_bytes, bytes ? bytes : 1);
    atomic_fetch_add(&d->live_allocs, 1);
    return 0;
}

int cuda_mem_free(cuda_device *d, cuda_ptr p, char *err, size_t err_len)
{
    if (!p) return 0;
    if (bind(d, err, err_len)) return -1;
    CUdeviceptr base = 0;
    size_t size = 0;
    if (CU(d, MemGetAddressRange, (&base, &size, (CUdeviceptr)p))) return -1;
    if (CU(d, MemFree, ((CUdeviceptr)p))) return -1;
    atomic_fetch_sub(&d->live_bytes, size);
    atomic_fetch_sub(&d->live_allocs, 1);
    return 0;
}

int cuda_memcpy_htod(cuda_device *d, cuda_ptr dst, const void *src, size_t bytes, char *err, size_t err_len)
{
    if (!bytes) return 0;
    if (bind(d, err, err_len)) return -1;
    return CU(d, MemcpyHtoD, ((CUdeviceptr)dst, src, bytes));
}

int cuda_memcpy_dtoh(cuda_device *d, void *dst, cuda_ptr src, size_t bytes, char *err, size_t err_len)
{
    if (!bytes) return 0;
    if (bind(d, err, err_len)) return -1;
    return CU(d, MemcpyDtoH, (dst, (CUdeviceptr)src, bytes));
}

int cuda_memcpy_dtod(cuda_device *d, cuda_ptr dst, cuda_ptr src, size_t bytes, char *err, size_t err_len)
{
    if (!bytes) return 0;
    if (bind(d, err, err_len)) return -1;
    return CU(d, MemcpyDtoD, ((CUdeviceptr)dst, (CUdeviceptr)src, bytes));
}

int cuda_memcpy_dtod_2d(cuda_device *d, cuda_ptr dst, size_t dst_pitch, cuda_ptr src, size_t src_pitch,
                       size_t width, size_t height, char *err, size_t err_len)
{
    if (!width || !height) return 0;
    if (bind(d, err, err_len)) return -1;
    if (height == 1 || (dst_pitch == width && src_pitch == width))
        return CU(d, MemcpyDtoD, ((CUdeviceptr)dst, (CUdeviceptr)src, width * height));
    if (d->cu.Memcpy2D) {
        CUDA_MEMCPY2D m;
        memset(&m, 0, sizeof m);
        m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        m.srcDevice = (CUdeviceptr)src;
        m.srcPitch = src_pitch;
        m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        m.dstDevice = (CUdeviceptr)dst;
        m.dstPitch = dst_pitch;
        m.WidthInBytes = width;
        m.Height = height;
        return CU(d, Memcpy2D, (&m));
    }
    for (size_t r = 0; r < height; r++)
        if (CU(d, MemcpyDtoD, ((CUdeviceptr)(dst + r * dst_pitch), (CUdeviceptr)(src + r * src_pitch), width)))
            return -1;
    return 0;
}

int cuda_memset8(cuda_device *d, cuda_ptr dst, unsigned char value, size_t bytes, char *err, size_t err_len)
{
    if (!bytes) return 0;
    if (bind(d, err, err_len)) return -1;
    return CU(d, MemsetD8, ((CUdeviceptr)dst, value, bytes));
}

cuda_module *cuda_module_load(cuda_device *d, const void *image, char *err, size_t err_len)
{
    if (bind(d, err, err_len)) return NULL;
    cuda_module *m = calloc(1, sizeof *m);
    if (!m) {
        diag_set(err, err_len, "out of memory");
        return NULL;
    }
    m->d = d;
    if (CU(d, ModuleLoadData, (&m->mod, image))) {
        free(m);
        return NULL;
    }
    return m;
}

void cuda_module_unload(cuda_module *m)
{
    if (!m) return;
    if (m->d->cu.CtxSetCurrent(m->d->ctx) == CUDA_SUCCESS) m->d->cu.ModuleUnload(m->mod);
    free(m);
}

int cuda_module_function(cuda_module *m, const char *name, cuda_function *out, char *err, size_t err_len)
{
    CUfunction f = NULL;
    *out = NULL;
    if (CU(m->d, ModuleGetFunction, (&f, m->mod, name))) return -1;
    *out = (cuda_function)f;
    return 0;
}

int cuda_launch(cuda_device *d, cuda_function f, const unsigned grid[3], const unsigned block[3],
                void **args, char *err, size_t err_len)
{
    if (bind(d, err, err_len)) return -1;
    return CU(d, LaunchKernel, ((CUfunction)f, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0,
                                NULL, args, NULL));
}

int cuda_launch_struct(cuda_device *d, cuda_function f, const unsigned grid[3], const unsigned block[3],
                       const void *arg, size_t size, char *err, size_t err_len)
{
    (void)size; /* the driver knows the parameter's size from the kernel */
    void *args[1] = {(void *)arg};
    return cuda_launch(d, f, grid, block, args, err, err_len);
}

int cuda_synchronize(cuda_device *d, char *err, size_t err_len)
{
    if (bind(d, err, err_len)) return -1;
    return CU(d, CtxSynchronize, ());
}

cuda_event *cuda_event_create(cuda_device *d, char *err, size_t err_len)
{
    if (bind(d, err, err_len)) return NULL;
    cuda_event *e = calloc(1, sizeof *e);
    if (!e) {
        diag_set(err, err_len, "out of memory");
        return NULL;
    }
    e->d = d;
    if (CU(d, EventCreate, (&e->ev, CU_EVENT_DEFAULT))) {
        free(e);
        return NULL;
    }
    return e;
}

void cuda_event_destroy(cuda_event *e)
{
    if (!e) return;
    if (e->d->cu.CtxSetCurrent(e->d->ctx) == CUDA_SUCCESS) e->d->cu.EventDestroy(e->ev);
    free(e);
}

int cuda_event_record(cuda_event *e, char *err, size_t err_len)
{
    if (bind(e->d, err, err_len)) return -1;
    return CU(e->d, EventRecord, (e->ev, NULL));
}

int cuda_event_elapsed(cuda_event *start, cuda_event *end, float *ms, char *err, size_t err_len)
{
    cuda_device *d = end->d;
    *ms = 0;
    if (bind(d, err, err_len)) return -1;
    if (CU(d, EventSynchronize, (end->ev))) return -1;
    return CU(d, EventElapsedTime, (ms, start->ev, end->ev));
}
