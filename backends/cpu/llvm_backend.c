/* llvm_backend.c — the CPU back end's LLVM glue (see llvm_backend.h): the ORC LLJIT and the host
 * target, llvm_compile (a kernel's IR text -> parsed, verified, optimised IR -> object bytes) and
 * llvm_load / llvm_unload. The IR text comes from llvm_gen_ir (llvm_ir.c and the files beside it,
 * sharing llvm_internal.h with this one).
 *
 *   kernel ──llvm_gen_ir──► LLVM IR text ──LLVMParseIRInContext──► module ──verify──►
 *          default<O3> (host TargetMachine) ──► optimised IR text, object bytes ──llvm_load──► fn
 *
 * Why text: the LLVM 14 C API cannot set fast-math flags, access groups or loop metadata are
 * clumsy to build through it, and the text is the readable copy the cache keeps anyway. Parsing
 * a kernel's text costs well under a millisecond.
 *
 * Measured (2-core AMD EPYC VM, LLVM 14, host CPU "generic" + AVX-512 features): a 2D two-field
 * reaction-diffusion stage compiles in ~16 ms (target machine 0.1, IR text 0.05, parse+verify 0.3,
 * default<O3> 5.5, object emission 10.5); its x loop runs 8 doubles (16 floats) per iteration,
 * in place too, at or above a hand-written -O3 -march=native C loop. */

#include "llvm_internal.h"
#include "diag.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Support.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h>

/* ---- small helpers ----------------------------------------------------------------------- */

/* Takes the message out of an LLVMErrorRef (consuming it). */
static void seterr_llvm(char *err, size_t err_len, const char *what, LLVMErrorRef e)
{
    char *msg = LLVMGetErrorMessage(e);
    diag_set(err, err_len, "%s: %s", what, msg ? msg : "(no message)");
    LLVMDisposeErrorMessage(msg);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int symbol_ok(const char *s)
{
    if (!s || !*s || strlen(s) > 200) return 0;
    for (; *s; s++)
        if (*s < 0x20 || *s > 0x7e || *s == '"' || *s == '\\') return 0;
    return 1;
}

/* ---- the JIT ----------------------------------------------------------------------------- */

struct llvm_loaded {
    struct llvm_loaded *next;
    char *symbol;
    int refs;
    kir_cpu_fn fn;
    LLVMOrcResourceTrackerRef rt;
};

struct llvm_jit {
    LLVMOrcLLJITRef lljit;
    LLVMTargetRef target;
    char *triple, *cpu, *features, *target_text;
    void *libmvec;               /* dlopen handle, NULL when absent */
    vecmath vm;
    pthread_mutex_t lock;        /* guards `loaded` and adds/removes in the JIT */
    llvm_loaded *loaded;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_failed;

static void init_llvm(void)
{
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) init_failed = 1;
    /* Large kernels are generated at CodeGenLevelNone, whose default instruction selector is
       FastISel: this keeps SelectionDAG there (both faster code and linear time). No effect on
       the other levels, which always select with SelectionDAG. Process-wide, set once.
       Loop strength reduction (code generation's LSR) takes most of a stage kernel's code
       generation (73 of llc's 95 ms on a 2D reaction-diffusion stage), and without it the
       2048² step ran 4-12 % slower (docs/performance.md, "Compile time, round three"). So code
       generation never runs it (-disable-lsr); the final tier runs the same pass as an IR pass
       at the end of the pipeline (LSR_PASSES: the same machine code as llc's own LSR, checked
       by diffing llc's assembly), the quick tier leaves it out (llvm_options.lsr). */
    const char *argv[3] = {"pdejit", "-fast-isel=false", "-disable-lsr"};
    LLVMParseCommandLineOptions(3, argv, NULL);
}

const char *llvm_version_string(void) { return LLVM_VERSION_STRING; }

const char *llvm_jit_target(const llvm_jit *jit) { return jit->target_text; }
const char *llvm_jit_vecmath(const llvm_jit *jit) { return jit->vm.name; }

llvm_jit *llvm_jit_create(char *err, size_t err_len)
{
    pthread_once(&init_once, init_llvm);
    if (init_failed) {
        diag_set(err, err_len, "LLVM: no native target in this build");
        return NULL;
    }
    llvm_jit *jit = calloc(1, sizeof *jit);
    if (!jit) {
        diag_set(err, err_len, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&jit->lock, NULL);

    char *triple = LLVMGetDefaultTargetTriple(), *cpu = LLVMGetHostCPUName(),
         *features = LLVMGetHostCPUFeatures();
    jit->triple = xstrdup(triple);
    jit->cpu = xstrdup(cpu);
    jit->features = xstrdup(features);
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    if (!jit->triple || !jit->cpu || !jit->features) {
        diag_set(err, err_len, "out of memory");
        goto fail;
    }
    size_t len = strlen(jit->triple) + strlen(jit->cpu) + strlen(jit->features) + 3;
    jit->target_text = malloc(len);
    if (!jit->target_text) {
        diag_set(err, err_len, "out of memory");
        goto fail;
    }
    snprintf(jit->target_text, len, "%s %s %s", jit->triple, jit->cpu, jit->features);
    /* libmvec: its symbols must resolve in the process for the JIT's symbol search */
    jit->libmvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (jit->libmvec) {
        if (strstr(jit->features, "+avx512f")) jit->vm = (vecmath){{{'e', 8, 16}, {'d', 4, 8}}, 2, "libmvec-avx512"};
        else if (strstr(jit->features, "+avx2")) jit->vm = (vecmath){{{'d', 4, 8}, {'b', 2, 4}}, 2, "libmvec-avx2"};
        else jit->vm = (vecmath){{{'b', 2, 4}}, 1, "libmvec-sse"};
    } else {
        snprintf(jit->vm.name, sizeof jit->vm.name, "none");
    }

    char *msg = NULL;
    if (LLVMGetTargetFromTriple(jit->triple, &jit->target, &msg)) {
        diag_set(err, err_len, "LLVM target %s: %s", jit->triple, msg ? msg : "");
        LLVMDisposeMessage(msg);
        goto fail;
    }

    LLVMErrorRef e = LLVMOrcCreateLLJIT(&jit->lljit, NULL);
    if (e) {
        jit->lljit = NULL;
        seterr_llvm(err, err_len, "LLVM ORC LLJIT", e);
        goto fail;
    }
    LLVMOrcDefinitionGeneratorRef gen;
    e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(jit->lljit), NULL, NULL);
    if (e) {
        seterr_llvm(err, err_len, "LLVM ORC process symbols", e);
        goto fail;
    }
    LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit->lljit), gen);
    return jit;
fail:
    llvm_jit_destroy(jit);
    return NULL;
}

void llvm_jit_destroy(llvm_jit *jit)
{
    if (!jit) return;
    for (llvm_loaded *l = jit->loaded, *next; l; l = next) {
        next = l->next;
        if (jit->lljit) {
            LLVMErrorRef e = LLVMOrcResourceTrackerRemove(l->rt);
            if (e) LLVMConsumeError(e);
        }
        LLVMOrcReleaseResourceTracker(l->rt);
        free(l->symbol);
        free(l);
    }
    if (jit->lljit) {
        LLVMErrorRef e = LLVMOrcDisposeLLJIT(jit->lljit);
        if (e) LLVMConsumeError(e);
    }
    pthread_mutex_destroy(&jit->lock);
    free(jit->triple);
    free(jit->cpu);
    free(jit->features);
    if (jit->libmvec) dlclose(jit->libmvec);
    free(jit->target_text);
    free(jit);
}

/* ---- compile ------------------------------------------------------------------------------ */

/* What code generation's addIRPasses runs for LSR (LLVM 14), as new-pass-manager IR passes. */
#define LSR_PASSES "function(loop(canon-freeze,loop-reduce))"

int llvm_has_tiers(const kir_kernel *k, const llvm_options *opt)
{
    llvm_options strict = {0, 0, 0, 0};
    return k && !(llvm_count_ops(k) > llvm_large_ops(opt ? opt : &strict) && k->kind != KIR_REDUCE);
}

/* The host TargetMachine at `level` (one per call: code generation mutates its options). */
static LLVMTargetMachineRef make_tm(llvm_jit *jit, LLVMCodeGenOptLevel level)
{
    return LLVMCreateTargetMachine(jit->target, jit->triple, jit->cpu, jit->features, level, LLVMRelocPIC,
                                   LLVMCodeModelDefault);
}

/* mod's object file into *object (malloc'd), *object_len. Returns 0, or -1 with a message. */
static int emit_object(LLVMTargetMachineRef tm, LLVMModuleRef mod, void **object, size_t *object_len, char *err,
                       size_t err_len)
{
    char *msg = NULL;
    LLVMMemoryBufferRef out = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &out)) {
        diag_set(err, err_len, "LLVM object emission: %s", msg ? msg : "");
        if (msg) LLVMDisposeMessage(msg);
        return -1;
    }
    size_t n = LLVMGetBufferSize(out);
    *object = malloc(n ? n : 1);
    if (*object) memcpy(*object, LLVMGetBufferStart(out), n);
    else diag_set(err, err_len, "out of memory");
    if (object_len) *object_len = *object ? n : 0;
    LLVMDisposeMemoryBuffer(out);
    return *object ? 0 : -1;
}

int llvm_compile(llvm_jit *jit, const kir_kernel *k, const llvm_options *opt, const char *symbol,
                 void **object, size_t *object_len, char **ir_text, llvm_times *times,
                 char *err, size_t err_len)
{
    double t0 = now_ms(), t_ir = 0, t_opt = 0, t_print = 0, t_cg = 0;
    llvm_options strict = {0, 0, 0, 0};
    if (!opt) opt = &strict;
    if (object) *object = NULL;
    if (object_len) *object_len = 0;
    if (ir_text) *ir_text = NULL;
    if (!jit || !k) {
        diag_set(err, err_len, "llvm_compile: no JIT or no kernel");
        return -1;
    }
    if (k->kind == KIR_BC || k->kind == KIR_PARAMS) {
        diag_set(err, err_len, "kernel %s: the LLVM back end compiles kernels that run over cells, not %s kernels",
                 k->name, kir_kind_name(k->kind));
        return -1;
    }
    if (k->dim < 1 || k->dim > 3) {
        diag_set(err, err_len, "kernel %s: dimension %d", k->name, k->dim);
        return -1;
    }
    if (!symbol_ok(symbol)) {
        diag_set(err, err_len, "kernel %s: bad symbol name", k->name);
        return -1;
    }
    char verr[256];
    if (kir_verify(k, verr, sizeof verr)) {
        diag_set(err, err_len, "kernel %s: %s", k->name, verr);
        return -1;
    }
    for (int i = 0; i < k->n_outputs && k->kind != KIR_REDUCE; i++)
        if (k->outputs[i].slot < 0 || k->outputs[i].slot > 1000) {
            diag_set(err, err_len, "kernel %s: output %d writes slot %d", k->name, i, k->outputs[i].slot);
            return -1;
        }

    int rc = -1;
    char *msg = NULL;
    sbuf text = {0};
    LLVMContextRef ctx = NULL;
    LLVMModuleRef mod = NULL;
    LLVMPassBuilderOptionsRef pbo = NULL;
    /* A large kernel (split into segments by llvm_gen_ir) gets the lighter pipeline and code
       generation (see LARGE_PIPELINE). */
    const int large = llvm_count_ops(k) > llvm_large_ops(opt) && k->kind != KIR_REDUCE;
    /* A TargetMachine per call: codegen mutates its options, so one shared TM would need a lock. */
    LLVMTargetMachineRef tm = make_tm(jit, large ? LLVMCodeGenLevelNone : LLVMCodeGenLevelAggressive);
    if (!tm) {
        diag_set(err, err_len, "LLVM: cannot create a target machine for %s", jit->triple);
        return -1;
    }
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    char *dl = LLVMCopyStringRepOfTargetData(td);
    LLVMDisposeTargetData(td);
    int g = llvm_gen_ir(k, opt, symbol, jit->triple, dl, jit->cpu, jit->features, jit->libmvec ? &jit->vm : NULL, &text,
                   err, err_len);
    LLVMDisposeMessage(dl);
    if (g) goto done;

    ctx = LLVMContextCreate();
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange(text.s, text.n, "pdejit", 1);
    if (LLVMParseIRInContext(ctx, mb, &mod, &msg)) { /* takes mb */
        diag_set(err, err_len, "kernel %s: generated LLVM IR does not parse (a back-end bug): %s",
               k->name, msg ? msg : "");
        mod = NULL;
        goto done;
    }
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        diag_set(err, err_len, "kernel %s: generated LLVM IR is invalid (a back-end bug): %s", k->name,
               msg ? msg : "");
        goto done;
    }
    LLVMDisposeMessage(msg);
    msg = NULL;
    t_ir = now_ms();

    pbo = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(pbo, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(pbo, 1);
    LLVMPassBuilderOptionsSetLoopInterleaving(pbo, 1);
    /* the quick tier unrolls no loops: a third less compile time, no slower a step (the vector
       loop is interleaved all the same); unrolling never reorders arithmetic: the same bits */
    LLVMPassBuilderOptionsSetLoopUnrolling(pbo, opt->lsr);
    LLVMErrorRef e = LLVMRunPasses(mod, large ? LARGE_PIPELINE : "default<O3>", tm, pbo);
    if (e) {
        seterr_llvm(err, err_len, large ? "LLVM " LARGE_PIPELINE : "LLVM default<O3>", e);
        goto done;
    }
    t_opt = now_ms();
    if (ir_text) {
        char *s = LLVMPrintModuleToString(mod);
        *ir_text = s ? xstrdup(s) : NULL;
        LLVMDisposeMessage(s);
        if (!*ir_text) {
            diag_set(err, err_len, "out of memory");
            goto done;
        }
    }
    t_print = now_ms();
    if (object) {
        /* the final tier: LSR after the IR is printed, where code generation ran it (emit --llvm
           shows the IR before LSR, as it always did) */
        if (opt->lsr && !large && (e = LLVMRunPasses(mod, LSR_PASSES, tm, pbo))) {
            seterr_llvm(err, err_len, "LLVM " LSR_PASSES, e);
            goto done;
        }
        if (emit_object(tm, mod, object, object_len, err, err_len)) goto done;
        t_cg = now_ms();
    }
    rc = 0;
done:
    if (rc && ir_text && *ir_text) {
        free(*ir_text);
        *ir_text = NULL;
    }
    if (rc && object && *object) {
        free(*object);
        *object = NULL;
    }
    if (msg) LLVMDisposeMessage(msg);
    if (pbo) LLVMDisposePassBuilderOptions(pbo);
    if (mod) LLVMDisposeModule(mod);
    if (ctx) LLVMContextDispose(ctx);
    LLVMDisposeTargetMachine(tm);
    free(text.s);
    if (times) {
        double t1 = now_ms();
        *times = (llvm_times){.total = t1 - t0};
        if (rc == 0) {
            times->ir = t_ir - t0 + (t_print - t_opt); /* the text made, and the optimised text printed */
            times->opt = t_opt - t_ir;
            times->codegen = object ? t_cg - t_print : 0;
        }
    }
    return rc;
}

/* ---- load / unload ------------------------------------------------------------------------ */

int llvm_load(llvm_jit *jit, const void *object, size_t len, const char *symbol, kir_cpu_fn *fn,
              llvm_loaded **handle, char *err, size_t err_len)
{
    if (fn) *fn = NULL;
    if (handle) *handle = NULL;
    if (!jit || !object || !len || !fn || !handle || !symbol_ok(symbol)) {
        diag_set(err, err_len, "llvm_load: bad arguments");
        return -1;
    }
    pthread_mutex_lock(&jit->lock);
    for (llvm_loaded *l = jit->loaded; l; l = l->next)
        if (!strcmp(l->symbol, symbol)) {
            l->refs++;
            *fn = l->fn;
            *handle = l;
            pthread_mutex_unlock(&jit->lock);
            return 0;
        }
    int rc = -1;
    llvm_loaded *l = calloc(1, sizeof *l);
    if (!l || !(l->symbol = xstrdup(symbol))) {
        diag_set(err, err_len, "out of memory");
        goto fail;
    }
    l->rt = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(jit->lljit));
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(object, len, symbol);
    LLVMErrorRef e = LLVMOrcLLJITAddObjectFileWithRT(jit->lljit, l->rt, mb); /* takes mb */
    if (e) {
        seterr_llvm(err, err_len, "loading kernel object", e);
        goto fail;
    }
    LLVMOrcJITTargetAddress addr = 0;
    e = LLVMOrcLLJITLookup(jit->lljit, &addr, symbol);
    if (e || !addr) {
        if (e) seterr_llvm(err, err_len, "looking up the kernel", e);
        else diag_set(err, err_len, "looking up the kernel: %s has address 0", symbol);
        goto fail;
    }
    l->fn = (kir_cpu_fn)(uintptr_t)addr;
    l->refs = 1;
    l->next = jit->loaded;
    jit->loaded = l;
    *fn = l->fn;
    *handle = l;
    rc = 0;
fail:
    if (rc && l) {
        if (l->rt) {
            LLVMErrorRef e2 = LLVMOrcResourceTrackerRemove(l->rt);
            if (e2) LLVMConsumeError(e2);
            LLVMOrcReleaseResourceTracker(l->rt);
        }
        free(l->symbol);
        free(l);
    }
    pthread_mutex_unlock(&jit->lock);
    return rc;
}

void llvm_unload(llvm_jit *jit, llvm_loaded *handle)
{
    if (!jit || !handle) return;
    pthread_mutex_lock(&jit->lock);
    for (llvm_loaded **p = &jit->loaded; *p; p = &(*p)->next) {
        if (*p != handle) continue;
        if (--handle->refs == 0) {
            *p = handle->next;
            LLVMErrorRef e = LLVMOrcResourceTrackerRemove(handle->rt);
            if (e) LLVMConsumeError(e);
            LLVMOrcReleaseResourceTracker(handle->rt);
            free(handle->symbol);
            free(handle);
        }
        break;
    }
    pthread_mutex_unlock(&jit->lock);
}
