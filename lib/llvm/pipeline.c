/* pipeline.c — one kernel through every pass (pipeline.h). This is the
 * one function that lists the compilation in order: pipeline_compile. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "llvm/pipeline.h"
#include "llvm/listing.h"
#include "codegen/offsets.h"
#include "codegen/transcendental.h"
#include "llvm/render.h"
#include "symbolic/symbolic.h"
#include "uop/spec.h"
#include "uop/text.h"

bool pipeline_name_ok(Ctx *ctx, const char *name) {
  size_t n = strlen(name);
  bool ok = n > 0 && n < 48 && !(name[0] >= '0' && name[0] <= '9');
  for (size_t i = 0; ok && i < n; i++)
    ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
         (name[i] >= '0' && name[i] <= '9') || name[i] == '_';
  if (!ok) ctx_set_error(ctx, "compile: kernel name '%s' is not [A-Za-z_][A-Za-z0-9_]* (at most 47)", name);
  return ok;
}

int pipeline_debug_level(void) {
  const char *v = getenv("UJ_DEBUG");
  return v ? atoi(v) : 0;
}

double pipeline_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

char *pipeline_ir_text(LLVMModuleRef mod) {
  char *s = LLVMPrintModuleToString(mod);
  char *copy = s ? strdup(s) : NULL;
  LLVMDisposeMessage(s);
  return copy;
}

/* The kernel as UJ_DEBUG names it: the user's name; for IR, with the
 * function's when that differs ("kernel (@kernel_0)"). */
static void debug_title(const PipelineRequest *req, bool ir, char *out, size_t size) {
  const char *shown = req->display_name ? req->display_name : req->name;
  if (ir && strcmp(shown, req->name) != 0) snprintf(out, size, "%s (@%s)", shown, req->name);
  else snprintf(out, size, "%s", shown);
}

static void debug_dump(const char *what, const char *title, const char *text) {
  fprintf(stderr, "UJ_DEBUG: %s of %s:\n%s%s", what, title, text ? text : "(none)\n",
          text && text[0] && text[strlen(text) - 1] == '\n' ? "" : "\n");
}

static void debug_uops(Ctx *ctx, const UOp *kernel, const PipelineRequest *req) {
  char title[160], *text = text_print(ctx, kernel);
  debug_title(req, false, title, sizeof title);
  debug_dump("UOps", title, text);
  free(text);
}

static void debug_ir(LLVMModuleRef mod, const char *what, const PipelineRequest *req) {
  char title[160], *text = pipeline_ir_text(mod);
  debug_title(req, true, title, sizeof title);
  debug_dump(what, title, text);
  free(text);
}

/* ---- the LLVM passes ----
 *
 * On the CPU: LLVM 19's default<O2> written out (`opt-19 -passes='default<O2>'
 * -print-pipeline-passes`) in two halves around one change, less the passes
 * that cannot act on a kernel's module (one entry function, the body it
 * always-inlines, intrinsics; no globals, other calls, coroutines, OpenMP,
 * profiles or switches): the attribute inference, IPSCCP, GlobalOpt,
 * GlobalDCE and the inliner's CGSCC walk around the function simplification
 * (after always-inline there is nothing left to inline), the coroutine,
 * OpenMP and profile passes. The function passes keep O2's order and
 * options.
 *
 * The change: O2's loop unrolling runs twice. First without its partial
 * kind (full and runtime unrolling as in O2); then each vector loop the
 * vectorizer made that is still a loop is marked llvm.loop.unroll.disable
 * (loops_keep_vectorized); then as in O2, which now partially unrolls the
 * scalar loops only. A vector loop's interleaving (4 vectors an iteration)
 * is its unrolling: O2 doubles it again when the trip count is a constant
 * (it already refuses to runtime-unroll it), which is twice the code for
 * codegen, a quarter of a small loop kernel's compile time, and measured
 * no faster. Scalar loops keep it: a strict float reduction (a matmul's
 * inner loop) runs ~10% slower without. On the kernel corpus and 1500
 * random kernels the machine code equals O2's, vector loops aside.
 *
 * NVPTX and AMDGPU run default<O2> itself: their target machines add passes
 * to it. */
#define UJ_SIMPLIFYCFG "simplifycfg<switch-range-to-icmp>"
#define UJ_INSTCOMBINE "instcombine<no-verify-fixpoint>"
static const char cpu_passes_simplify_vectorize[] =
    /* O2's early cleanup of each function, then the body into the entry */
    "function<eager-inv>(simplifycfg,sroa,early-cse,mem2reg," UJ_INSTCOMBINE "," UJ_SIMPLIFYCFG
    "),always-inline,"
    /* O2's function simplification */
    "function<eager-inv>(sroa,early-cse<memssa>,jump-threading,correlated-propagation,"
    UJ_SIMPLIFYCFG "," UJ_INSTCOMBINE ",aggressive-instcombine,tailcallelim," UJ_SIMPLIFYCFG ","
    "reassociate,constraint-elimination,"
    "loop-mssa(loop-instsimplify,loop-simplifycfg,licm<no-allowspeculation>,"
    "loop-rotate<header-duplication;no-prepare-for-lto>,licm,"
    "simple-loop-unswitch<no-nontrivial;trivial>),"
    UJ_SIMPLIFYCFG "," UJ_INSTCOMBINE ","
    "loop(loop-idiom,indvars,simple-loop-unswitch<no-nontrivial;trivial>,loop-deletion,"
    "loop-unroll-full),"
    "sroa,vector-combine,mldst-motion<no-split-footer-bb>,gvn,sccp,bdce," UJ_INSTCOMBINE ","
    "jump-threading,correlated-propagation,adce,memcpyopt,dse,loop-mssa(licm),"
    "simplifycfg<switch-range-to-icmp;hoist-common-insts;sink-common-insts>," UJ_INSTCOMBINE ","
    /* O2's optimization, to its loop unrolling less the partial kind */
    "float2int,loop(loop-rotate<header-duplication;no-prepare-for-lto>,loop-deletion),"
    "loop-vectorize,infer-alignment,loop-load-elim," UJ_INSTCOMBINE ","
    "simplifycfg<forward-switch-cond;switch-range-to-icmp;switch-to-lookup;no-keep-loops;"
    "hoist-common-insts;sink-common-insts>,"
    "slp-vectorizer,vector-combine," UJ_INSTCOMBINE ",loop-unroll<O2;no-partial>)";
static const char cpu_passes_finish[] =
    "function<eager-inv>(loop-unroll<O2>,sroa<preserve-cfg>,infer-alignment," UJ_INSTCOMBINE ","
    "loop-mssa(licm),instsimplify,div-rem-pairs,tailcallelim,"
    "simplifycfg<switch-range-to-icmp;speculate-unpredictables>)";

static bool run_passes(Ctx *ctx, LLVMModuleRef mod, const char *passes, LLVMTargetMachineRef tm) {
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(opts, 1); /* default<O2> vectorizes when told; */
  LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);  /* a written pipeline names its passes */
  LLVMErrorRef err = LLVMRunPasses(mod, passes, tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (!err) return true;
  char *msg = LLVMGetErrorMessage(err);
  ctx_set_error(ctx, "LLVM passes failed: %s", msg);
  LLVMDisposeErrorMessage(msg);
  return false;
}

/* The operands of an MDNode (as values), malloc'd; *n their count. */
static LLVMValueRef *md_operands(LLVMValueRef node, unsigned *n) {
  *n = LLVMGetMDNodeNumOperands(node);
  LLVMValueRef *ops = malloc((*n ? *n : 1) * sizeof *ops);
  if (ops) LLVMGetMDNodeOperands(node, ops);
  return ops;
}

/* True when loop ID `id` holds the property !{!"name", ...}. */
static bool loop_id_has(LLVMValueRef id, const char *name) {
  unsigned n, m;
  LLVMValueRef *ops = md_operands(id, &n);
  bool found = false;
  for (unsigned i = 1; ops && i < n && !found; i++) { /* operand 0 is the ID itself */
    LLVMValueRef *prop = ops[i] && LLVMIsAMDNode(ops[i]) ? md_operands(ops[i], &m) : NULL;
    unsigned len = 0;
    const char *s = prop && m > 0 && prop[0] ? LLVMGetMDString(prop[0], &len) : NULL;
    found = s && len == strlen(name) && memcmp(s, name, len) == 0;
    free(prop);
  }
  free(ops);
  return found;
}

/* A new loop ID: the properties of `id` and !{!"llvm.loop.unroll.disable"}.
 * Operand 0 refers to the node itself (a temporary replaced by it), which
 * makes it distinct, as loop IDs are. NULL when out of memory. */
static LLVMValueRef loop_id_no_unroll(LLVMContextRef lc, LLVMValueRef id) {
  unsigned n;
  LLVMValueRef *ops = md_operands(id, &n);
  LLVMMetadataRef *mds = ops ? malloc((n + 1) * sizeof *mds) : NULL;
  LLVMValueRef out = NULL;
  bool ok = mds && n > 0;
  for (unsigned i = 1; ok && i < n; i++) ok = ops[i] != NULL;
  if (ok) {
    LLVMMetadataRef self = LLVMTemporaryMDNode(lc, NULL, 0);
    const char *disable = "llvm.loop.unroll.disable";
    LLVMMetadataRef flag = LLVMMDStringInContext2(lc, disable, strlen(disable));
    mds[0] = self;
    for (unsigned i = 1; i < n; i++) mds[i] = LLVMValueAsMetadata(ops[i]);
    mds[n] = LLVMMDNodeInContext2(lc, &flag, 1);
    LLVMMetadataRef node = LLVMMDNodeInContext2(lc, mds, n + 1);
    LLVMMetadataReplaceAllUsesWith(self, node); /* and frees self */
    out = LLVMMetadataAsValue(lc, node);
  }
  free(mds);
  free(ops);
  return out;
}

static bool block_has_vectors(LLVMBasicBlockRef bb) {
  for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in))
    if (LLVMGetTypeKind(LLVMTypeOf(in)) == LLVMVectorTypeKind) return true;
  return false;
}

/* Marks each vector loop the loop vectorizer made llvm.loop.unroll.disable
 * (see above): a latch branch whose loop ID says llvm.loop.isvectorized, in
 * a block computing vectors. The scalar remainder loops carry the same
 * property but no vectors: O2 still unrolls them (fully, their trip count
 * being below the vector width times the interleaving). */
static void loops_keep_vectorized(LLVMModuleRef mod) {
  LLVMContextRef lc = LLVMGetModuleContext(mod);
  unsigned loop_kind = LLVMGetMDKindIDInContext(lc, "llvm.loop", strlen("llvm.loop"));
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
      LLVMValueRef br = LLVMGetBasicBlockTerminator(bb);
      LLVMValueRef id = br ? LLVMGetMetadata(br, loop_kind) : NULL;
      if (!id || !loop_id_has(id, "llvm.loop.isvectorized") || !block_has_vectors(bb)) continue;
      LLVMValueRef marked = loop_id_no_unroll(lc, id);
      if (marked) LLVMSetMetadata(br, loop_kind, marked);
    }
  }
}

/* The LLVM passes of the target (above). */
static bool optimize(Ctx *ctx, LLVMModuleRef mod, const PipelineRequest *req) {
  if (req->target->kind != TARGET_CPU) return run_passes(ctx, mod, "default<O2>", req->tm);
  if (!run_passes(ctx, mod, cpu_passes_simplify_vectorize, req->tm)) return false;
  loops_keep_vectorized(mod);
  return run_passes(ctx, mod, cpu_passes_finish, req->tm);
}

/* The graph-level passes: what the renderer takes is simplified and has
 * only ops the target computes; *online: its running maxima (found
 * before the lowering, their rescales lowered with it). */
static const UOp *lower_kernel(Ctx *ctx, const UOp *kernel, const Target *t, OnlineMax **online, size_t *nonline) {
  const UOp *k = symbolic_simplify(ctx, kernel);
  if (k) k = offsets_split(ctx, k);
  if (k && !online_find(ctx, k, online, nonline)) return NULL;
  unsigned lower = TARGET_ALL_FLOATS & ~target_hooks[t->kind].libm_scalars;
  for (size_t i = 0; k && lower && i < *nonline; i++)
    if (!((*online)[i].rescale = transcendental_lower(ctx, (*online)[i].rescale, lower))) k = NULL;
  if (k && lower) k = transcendental_lower(ctx, k, lower);
  return k;
}

bool pipeline_linearize(Ctx *ctx, const UOp *kernel, const PipelineRequest *req, KernelSig *sig, Linear *out) {
  if (!uop_in_ctx(ctx, kernel)) {
    ctx_set_error(ctx, "compile: the kernel is not a node of this context");
    return false;
  }
  /* the signature is the kernel's as given: what the simplifier drops
   * stays a parameter, so the host passes what it sees in its graph */
  if (!spec_check_graph(ctx, kernel) || !kernel_sig_build(ctx, kernel, sig)) return false;
  OnlineMax *online = NULL;
  size_t nonline = 0;
  const UOp *k = lower_kernel(ctx, kernel, req->target, &online, &nonline);
  if (k && pipeline_debug_level() >= 2) debug_uops(ctx, k, req);
  /* a CPU kernel runs in parts (the CPU target's split: codegen/parts.h) */
  const UOp *split = k && !target_hooks[req->target->kind].grid ? kernel_parallel_range(k) : NULL;
  sig->parallel = split != NULL;
  bool ok = k && linearize(ctx, k, online, nonline, split, out);
  free(online);
  if (!ok) kernel_sig_free(sig);
  return ok;
}

LLVMModuleRef pipeline_compile(Ctx *ctx, const UOp *kernel, LLVMContextRef lc, const PipelineRequest *req,
                               KernelSig *sig) {
  int debug = pipeline_debug_level();
  Linear list;
  if (!pipeline_linearize(ctx, kernel, req, sig, &list)) return NULL;
  /* the target's data layout from the start: allocas take its address
   * space, and the passes see it rather than LLVM's default */
  LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(req->tm);
  LLVMModuleRef mod = render_kernel(ctx, lc, req->target, layout, &list, sig, req->name);
  LLVMDisposeTargetData(layout);
  linear_free(&list);
  if (mod && debug >= 3) debug_ir(mod, "LLVM IR", req);
  if (mod && req->ir_before) *req->ir_before = pipeline_ir_text(mod);
  if (mod && req->optimize && !optimize(ctx, mod, req)) LLVMDisposeModule(mod), mod = NULL;
  if (mod && req->optimize && debug >= 4) debug_ir(mod, "optimized LLVM IR", req);
  if (!mod) kernel_sig_free(sig);
  return mod;
}

bool pipeline_emit(Ctx *ctx, LLVMModuleRef mod, LLVMTargetMachineRef tm, LLVMCodeGenFileType kind,
                   char **out, size_t *len) {
  LLVMModuleRef clone = LLVMCloneModule(mod);
  LLVMMemoryBufferRef buf = NULL;
  char *msg = NULL;
  bool failed = LLVMTargetMachineEmitToMemoryBuffer(tm, clone, kind, &msg, &buf);
  LLVMDisposeModule(clone);
  if (failed) {
    ctx_set_error(ctx, "LLVM code generation failed: %s", msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return false;
  }
  size_t n = LLVMGetBufferSize(buf);
  *out = malloc(n + 1);
  if (*out) memcpy(*out, LLVMGetBufferStart(buf), n), (*out)[n] = 0;
  LLVMDisposeMemoryBuffer(buf);
  if (!*out) return ctx_set_error(ctx, "emit: out of memory"), false;
  if (len) *len = n;
  return true;
}

bool pipeline_listing(Ctx *ctx, const UOp *kernel, const char *kind, const char *arch, Linear *out) {
  int k = 0;
  while (k < TARGET_COUNT && strcmp(target_kind_names[k], kind)) k++;
  if (k == TARGET_COUNT) return ctx_set_error(ctx, "listing: no target kind '%s' (cpu, nvptx, amdgpu)", kind), false;
  Target t;
  KernelSig sig;
  PipelineRequest req = {.target = &t, .name = "listing"};
  if (!target_init(ctx, (TargetKind)k, arch, &t) || !pipeline_linearize(ctx, kernel, &req, &sig, out)) return false;
  kernel_sig_free(&sig);
  return true;
}
