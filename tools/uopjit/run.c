/* run.c — `uopjit run`: one kernel compiled for this CPU and run once.
 *
 * In: the kernel (FILE, -c TEXT or stdin) and the run options: a buffer
 * per PARAM slot (--arg SLOT=V,V,... | zeros:N | file:PATH, in the PARAM's
 * dtype), a value per DEFINE_VAR (--var NAME=INT), what to show afterwards
 * (--print SLOT, --save SLOT=FILE). Out: the buffers asked for, one line
 * each, "SLOT=V,V,..." (what --arg reads back), to stdout or -o FILE; by
 * default every buffer the kernel stores to.
 *
 * The steps, in order; each reports and stops the run when it fails:
 *   run_load       read, parse, check, uj_compile; the kernel's signature
 *   run_bind_args  a buffer for every slot, checked against the PARAM
 *   run_bind_vars  a value in [min, max] for every variable
 *   run_check_outs --print and --save name slots of the kernel
 *   run_check_bounds  every ungated access lies inside its buffer
 *   run_execute    uj_run
 *   run_write      print and save
 * Buffers are 64-byte aligned and zero-padded to a multiple of 64 bytes. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

typedef struct Buffer {
  const char *spec;    /* the --arg value ("0=1,2,3"), NULL when not given */
  unsigned char *data; /* aligned_alloc'd */
  size_t count, bytes; /* elements (of the pointee), bytes in use */
} Buffer;

typedef struct Run {
  const Options *o;
  const RunOptions *ro;
  uj_ctx *ctx;
  char *text;
  const char *where;
  const uj_uop *root;
  uj_program *program;
  Sig sig;
  Buffer *bufs;    /* by slot, sig.nparams */
  int64_t *values; /* by variable, sig.nvars */
  bool *given;     /* by variable */
} Run;

/* ---- small parsers ---- */

/* s[0..len) as a slot number (decimal digits only). */
static bool parse_slot(const char *s, size_t len, size_t *slot) {
  if (len == 0 || len > 9 || strspn(s, "0123456789") < len) return false;
  *slot = (size_t)strtoul(s, NULL, 10);
  return true;
}

/* A decimal integer, all of s, within int64. */
static bool parse_int(const char *s, int64_t *v) {
  bool sign = (s[0] == '-' || s[0] == '+') && s[1] >= '0' && s[1] <= '9';
  if (!sign && !(s[0] >= '0' && s[0] <= '9')) return false;
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (*end || errno) return false;
  *v = x;
  return true;
}

/* "0, 2, 5": the slots the kernel has. */
static const char *slot_list(const Sig *sig, char *buf, size_t size) {
  size_t len = 0;
  for (size_t i = 0; i < sig->nparams && len < size; i++)
    if (sig->params[i].used)
      len += (size_t)snprintf(buf + len, size - len, "%s%zu", len ? ", " : "", i);
  return len ? buf : "none";
}

/* "n, m": the kernel's variables. */
static const char *var_list(const Sig *sig, char *buf, size_t size) {
  size_t len = 0;
  for (size_t i = 0; i < sig->nvars && len < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", sig->vars[i].name);
  return len ? buf : "none";
}

/* The slot named by s[0..len) (a --arg, --print or --save), reported
 * under label when there is no such PARAM. */
static bool kernel_slot(const Run *r, const char *s, size_t len, const char *label, size_t *slot) {
  char list[200];
  if (!parse_slot(s, len, slot)) {
    report("%s: '%.*s' is not a PARAM slot number", label, (int)len, s);
    return false;
  }
  if (*slot >= r->sig.nparams || !r->sig.params[*slot].used) {
    report("%s: the kernel has no PARAM %zu (its PARAMs: %s)", label, *slot,
           slot_list(&r->sig, list, sizeof list));
    return false;
  }
  return true;
}

/* ---- run_load ---- */

static bool run_load(Run *r) {
  if (!(r->text = io_read_input(r->o, &r->where))) return false;
  if (!(r->ctx = uj_ctx_new())) return report("out of memory"), false;
  if (!(r->root = uj_parse(r->ctx, r->text, r->where)))
    return report("%s", uj_error(r->ctx)), false;
  if (uj_check(r->ctx, r->root) != UJ_OK || !(r->program = uj_compile(r->ctx, r->root, NULL))) {
    report("%s: %s", r->where, uj_error(r->ctx));
    return false;
  }
  if (!sig_read(r->program, &r->sig)) return false;
  r->bufs = calloc(r->sig.nparams ? r->sig.nparams : 1, sizeof *r->bufs);
  r->values = calloc(r->sig.nvars ? r->sig.nvars : 1, sizeof *r->values);
  r->given = calloc(r->sig.nvars ? r->sig.nvars : 1, sizeof *r->given);
  if (!r->bufs || !r->values || !r->given) return report("out of memory"), false;
  return true;
}

/* ---- run_bind_args ---- */

static bool buffer_alloc(Buffer *b, size_t count, size_t esize, const char *label) {
  size_t padded = count > (SIZE_MAX - 64) / esize ? 0 : (count * esize + 64) / 64 * 64;
  if (padded && (b->data = aligned_alloc(64, padded))) memset(b->data, 0, padded);
  if (!b->data) report("%s: cannot allocate %zu elements", label, count);
  b->count = count, b->bytes = count * esize;
  return b->data != NULL;
}

/* zeros:N */
static bool buffer_zeros(Buffer *b, const char *n, size_t esize, const char *label) {
  int64_t count;
  if (!parse_int(n, &count) || count < 0) return report("%s: '%s' is not a count", label, n), false;
  return buffer_alloc(b, (size_t)count, esize, label);
}

/* file:PATH */
static bool buffer_file(Buffer *b, const char *path, uj_dtype elem, size_t esize,
                        const char *label) {
  size_t len;
  char name[32], why[80], *data = io_read_file(path, &len);
  if (!data) return report("%s: cannot read '%s': %s", label, path, io_read_error(why, sizeof why)), false;
  bool ok = len % esize == 0;
  if (!ok)
    report("%s: %zu bytes is not a whole number of %s elements (%zu bytes each)", label, len,
           uj_dtype_name(elem, name, sizeof name), esize);
  if (ok && (ok = buffer_alloc(b, len / esize, esize, label))) memcpy(b->data, data, len);
  free(data);
  return ok;
}

/* V,V,...: CONST literals of the scalar, lanes to an element. */
static bool buffer_values(const Run *r, Buffer *b, const char *list, uj_dtype elem,
                          const char *label) {
  size_t n = *list ? 1 : 0, size = value_size((uj_scalar)elem.scalar);
  char token[80], why[200];
  for (const char *p = list; *p; p++) n += *p == ',';
  if (n % elem.lanes) {
    report("%s: an element of %s is %u values: give a multiple of %u values, not %zu", label,
           uj_dtype_name(elem, token, sizeof token), elem.lanes, elem.lanes, n);
    return false;
  }
  if (!buffer_alloc(b, n / elem.lanes, size * elem.lanes, label)) return false;
  for (size_t i = 0; i < n; i++, list += strcspn(list, ",") + 1) {
    size_t len = strcspn(list, ",");
    bool fits = len < sizeof token;
    if (fits) memcpy(token, list, len), token[len] = '\0';
    else snprintf(why, sizeof why, "'%.20s...' is not a value", list);
    if (!fits ||
        !value_parse(r->ctx, (uj_scalar)elem.scalar, token, b->data + i * size, why, sizeof why)) {
      report("%s: value %zu: %s", label, i + 1, why);
      return false;
    }
  }
  return true;
}

/* One --arg SLOT=SPEC. */
static bool bind_arg(Run *r, const char *arg) {
  char label[64], name[32];
  size_t slot, eq = strcspn(arg, "=");
  io_label("--arg", arg, label, sizeof label);
  if (!arg[eq])
    return report("%s: expected SLOT=V,V,..., SLOT=zeros:N or SLOT=file:PATH", label), false;
  if (!kernel_slot(r, arg, eq, label, &slot)) return false;
  Buffer *b = &r->bufs[slot];
  if (b->spec) return report("%s: PARAM %zu is given twice", label, slot), false;
  b->spec = arg;
  uj_dtype dt = r->sig.params[slot].dtype, elem = uj_dtype_vec((uj_scalar)dt.scalar, dt.lanes);
  size_t esize = value_size((uj_scalar)dt.scalar) * dt.lanes;
  const char *spec = arg + eq + 1;
  bool ok = !strncmp(spec, "zeros:", 6)  ? buffer_zeros(b, spec + 6, esize, label)
            : !strncmp(spec, "file:", 5) ? buffer_file(b, spec + 5, elem, esize, label)
                                         : buffer_values(r, b, spec, elem, label);
  if (ok && dt.space == UJ_AS_NONE && b->count != 1) {
    report("%s: PARAM %zu is a %s value, not a buffer: give exactly %u value%s, not %zu", label,
           slot, uj_dtype_name(dt, name, sizeof name), dt.lanes, dt.lanes > 1 ? "s" : "",
           b->count * dt.lanes);
    return false;
  }
  return ok;
}

static bool run_bind_args(Run *r) {
  char name[32];
  for (size_t i = 0; i < r->ro->args.n; i++)
    if (!bind_arg(r, r->ro->args.items[i])) return false;
  for (size_t s = 0; s < r->sig.nparams; s++) {
    if (r->sig.params[s].used && !r->bufs[s].spec) {
      report("PARAM %zu (%s) has no buffer: give --arg %zu=...", s,
             uj_dtype_name(r->sig.params[s].dtype, name, sizeof name), s);
      return false;
    }
  }
  return true;
}

/* ---- run_bind_vars ---- */

static bool bind_var(Run *r, const char *arg) {
  char label[64], name[64], list[200];
  size_t eq = strcspn(arg, "=");
  int64_t v;
  io_label("--var", arg, label, sizeof label);
  if (!arg[eq] || eq >= sizeof name) return report("%s: expected NAME=INT", label), false;
  snprintf(name, sizeof name, "%.*s", (int)eq, arg);
  long i = sig_var(&r->sig, name);
  if (i < 0) {
    report("%s: the kernel has no variable '%s' (its variables: %s)", label, name,
           var_list(&r->sig, list, sizeof list));
    return false;
  }
  const SigVar *sv = &r->sig.vars[i];
  if (r->given[i]) return report("%s: %s is given twice", label, name), false;
  if (!parse_int(arg + eq + 1, &v))
    return report("%s: '%s' is not an integer", label, arg + eq + 1), false;
  if (v < sv->min || v > sv->max) {
    report("%s: %s must be in [%lld, %lld]", label, name, (long long)sv->min, (long long)sv->max);
    return false;
  }
  r->values[i] = v, r->given[i] = true;
  return true;
}

static bool run_bind_vars(Run *r) {
  for (size_t i = 0; i < r->ro->vars.n; i++)
    if (!bind_var(r, r->ro->vars.items[i])) return false;
  for (size_t i = 0; i < r->sig.nvars; i++) {
    const SigVar *v = &r->sig.vars[i];
    if (!r->given[i]) {
      report("variable %s has no value: give --var %s=INT (in [%lld, %lld])", v->name, v->name,
             (long long)v->min, (long long)v->max);
      return false;
    }
  }
  return true;
}

/* ---- run_check_outs, run_check_bounds ---- */

static bool run_check_outs(const Run *r) {
  char label[64];
  size_t slot;
  for (size_t i = 0; i < r->ro->prints.n; i++) {
    const char *p = r->ro->prints.items[i];
    if (!kernel_slot(r, p, strlen(p), io_label("--print", p, label, sizeof label), &slot))
      return false;
  }
  for (size_t i = 0; i < r->ro->saves.n; i++) {
    const char *s = r->ro->saves.items[i];
    size_t eq = strcspn(s, "=");
    io_label("--save", s, label, sizeof label);
    if (!s[eq] || !s[eq + 1]) return report("%s: expected SLOT=FILE", label), false;
    if (!kernel_slot(r, s, eq, label, &slot)) return false;
  }
  return true;
}

/* Whether the accesses a to slot s fit its buffer; reported when not. */
static bool bounds_fit(const Run *r, size_t s, const SigAccess *a) {
  char label[64], name[32];
  const Buffer *b = &r->bufs[s];
  uj_dtype dt = r->sig.params[s].dtype;
  bool fits = !a->unknown && (!a->any || (a->lo >= 0 && (uint64_t)a->hi < b->count));
  if (fits || !b->spec) return true;
  io_label("--arg", b->spec, label, sizeof label);
  uj_dtype_name(uj_dtype_vec((uj_scalar)dt.scalar, dt.lanes), name, sizeof name);
  if (a->unknown)
    report("%s: cannot tell which elements of PARAM %zu the kernel accesses (an index without "
           "bounds; --no-bounds-check skips this check)",
           label, s);
  else
    report("%s: PARAM %zu holds %zu %s elements, but the kernel may access elements %lld to %lld "
           "(--no-bounds-check skips this check)",
           label, s, b->count, name, (long long)a->lo, (long long)a->hi);
  return false;
}

static bool run_check_bounds(const Run *r) {
  SigAccess *acc = calloc(r->sig.nparams ? r->sig.nparams : 1, sizeof *acc);
  bool ok = acc && sig_accesses(r->ctx, r->root, &r->sig, r->values, acc);
  if (!acc) report("out of memory");
  for (size_t s = 0; ok && s < r->sig.nparams; s++) ok = bounds_fit(r, s, &acc[s]);
  free(acc);
  return ok;
}

/* ---- run_execute, run_write ---- */

static bool run_execute(const Run *r) {
  size_t nparams = uj_program_nparams(r->program), nvars = uj_program_nvars(r->program);
  size_t nargs = nparams > r->sig.nparams ? nparams : r->sig.nparams;
  void **args = calloc(nargs ? nargs : 1, sizeof *args);
  int64_t *vars = calloc(nvars ? nvars : 1, sizeof *vars);
  bool ok = args && vars;
  if (!ok) report("out of memory");
  for (size_t s = 0; ok && s < r->sig.nparams; s++) args[s] = r->bufs[s].data;
  for (size_t i = 0; ok && i < nvars; i++) { /* the program's order: by name */
    long k = sig_var(&r->sig, uj_program_var_name(r->program, i));
    if (k < 0)
      report("internal error: the compiled kernel takes a variable the graph lacks"), ok = false;
    else vars[i] = r->values[k];
  }
  if (ok && uj_run(r->program, args, nargs, vars, nvars) != UJ_OK) {
    report("%s: %s", r->where, uj_error(r->ctx));
    ok = false;
  }
  free(args);
  free(vars);
  return ok;
}

/* "SLOT=V,V,...\n" for buffer slot. */
static bool print_buffer(const Run *r, size_t slot, FILE *f) {
  uj_dtype dt = r->sig.params[slot].dtype;
  const Buffer *b = &r->bufs[slot];
  return fprintf(f, "%zu=", slot) > 0 &&
         value_print(r->ctx, (uj_scalar)dt.scalar, b->data, b->count * dt.lanes, f) &&
         fputc('\n', f) != EOF;
}

/* Saves first, then prints: a failed save leaves stdout empty. */
static bool run_write(const Run *r) {
  char *text = NULL;
  size_t len = 0, slot;
  bool ok = true, all = !r->ro->prints.n && !r->ro->saves.n;
  for (size_t i = 0; ok && i < r->ro->saves.n; i++) { /* slots were checked */
    const char *s = r->ro->saves.items[i];
    size_t eq = strcspn(s, "=");
    ok = parse_slot(s, eq, &slot) &&
         io_write_output(s + eq + 1, (const char *)r->bufs[slot].data, r->bufs[slot].bytes, true);
  }
  FILE *f = ok ? open_memstream(&text, &len) : NULL;
  bool printed = f != NULL;
  for (size_t i = 0; printed && i < r->ro->prints.n; i++)
    printed = parse_slot(r->ro->prints.items[i], strlen(r->ro->prints.items[i]), &slot) &&
              print_buffer(r, slot, f);
  for (size_t s = 0; printed && all && s < r->sig.nparams; s++)
    if (r->sig.params[s].stored) printed = print_buffer(r, s, f);
  if (f && fclose(f) != 0) printed = false;
  if (ok && !printed) report("cannot print the results: out of memory");
  if (printed && (len || r->o->out)) printed = io_write_output(r->o->out, text, len, true);
  free(text);
  return ok && printed;
}

static void run_free(Run *r) {
  for (size_t s = 0; r->bufs && s < r->sig.nparams; s++) free(r->bufs[s].data);
  free(r->bufs);
  free(r->values);
  free(r->given);
  sig_free(&r->sig);
  uj_program_free(r->program); /* before its context */
  uj_ctx_free(r->ctx);
  free(r->text);
}

int run_main(const Options *o) {
  Run r = {.o = o, .ro = &o->run_opts};
  bool ok = run_load(&r) && run_bind_args(&r) && run_bind_vars(&r) && run_check_outs(&r) &&
            (!r.ro->bounds_check || run_check_bounds(&r)) && run_execute(&r) && run_write(&r);
  run_free(&r);
  return ok ? 0 : 1;
}
