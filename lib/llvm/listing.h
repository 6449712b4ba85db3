/* listing.h — the list (codegen/linear.h) the pipeline renders for a
 * target, behind an interface without LLVM's headers (tests, tools).
 *
 * In: a kernel; the target kind by name ("cpu", "nvptx", "amdgpu") and
 * its arch (NULL: the default; the CPU is the host). Out: the list
 * pipeline_compile would render for it (the caller frees it with
 * linear_free); false with the error set. */
#ifndef UJ_LLVM_LISTING_H
#define UJ_LLVM_LISTING_H

#include "codegen/linear.h"

bool pipeline_listing(Ctx *ctx, const UOp *kernel, const char *kind, const char *arch, Linear *out);

#endif
