/* rewrite.h — the one rewrite engine: patterns, rule sets, graph_rewrite.
 *
 * A rule is a pattern, written in a small text form, and a C function that
 * builds the replacement or declines (returns NULL):
 *
 *   static const Rule rules[] = {
 *     {"(ADD x (CONST 0))", rw_x},             // x+0 -> x
 *     {"(MUL:int x z=(CONST 0))", rw_z},       // x*0 -> 0 (ints)
 *     {"(SUB x x)", rw_zero},                  // x-x -> 0
 *   };
 *
 * Pattern grammar (docs/rewrite.md):
 *   pat  := BIND | '_' | [BIND '='] '(' OPS [':' CLASS] [VALUE] pat* ['...'] ')'
 *   OPS  := OP ('|' OP)* ['~']     '~': also try the two sources swapped
 *   BIND := one lower-case letter; the same letter twice must be one node
 *   CLASS:= int | sint | uint | float | bool | ptr | a dtype name (float32...)
 *   VALUE:= a CONST's value: 0, -1, 2.5, true, false (compared in its dtype)
 *   '...' after the sources: any further sources
 * Matching dispatches on the root op: a rule costs nothing for other ops.
 *
 * graph_rewrite rewrites bottom-up to a fixpoint, memoised on node id and
 * iterative (no recursion over the graph). */
#ifndef UJ_REWRITE_H
#define UJ_REWRITE_H

#include "uop/uop.h"

/* Nodes bound by a match, by letter: m->x is what 'x' matched. */
typedef union Binds {
  const UOp *slot[26];
  struct {
    const UOp *a, *b, *c, *d, *e, *f, *g, *h, *i, *j, *k, *l, *m, *n, *o, *p, *q,
        *r, *s, *t, *u, *v, *w, *x, *y, *z;
  };
} Binds;

typedef struct Rewriter {
  Ctx *ctx;
  const RuleSet *rules;
  void *user;         /* whatever the rule set's functions need */
  struct Walk *walk;  /* graph_rewrite's state (rewrite.c); NULL outside it */
} Rewriter;

/* Whether u has more than one user in the graph being rewritten (nodes that
 * stand for a shared node inherit the mark); such a node stays alive when
 * one user is rewritten away, which rules that weigh sizes must know.
 * false outside graph_rewrite. */
bool rewrite_is_shared(const Rewriter *rw, const UOp *u);

/* Returns the replacement of root, or NULL to decline. */
typedef const UOp *(*RuleFn)(Rewriter *rw, const UOp *root, const Binds *m);

typedef struct Rule {
  const char *pattern;
  RuleFn fn;
} Rule;

/* Compiles rules; NULL with the error set when a pattern is malformed. */
RuleSet *ruleset_new(Ctx *ctx, const Rule *rules, size_t n);
void ruleset_free(RuleSet *rs);
/* The first rule that matches u and does not decline, applied once;
 * u itself when none does. */
const UOp *ruleset_apply(Rewriter *rw, const UOp *u);
/* Rewrites the graph under root to a fixpoint; NULL with the error set
 * when out of memory or when the rules do not converge. */
const UOp *graph_rewrite(Ctx *ctx, const UOp *root, const RuleSet *rs, void *user);
/* graph_rewrite, then again where its result may not be a fixpoint: a
 * rule that weighs sizes saw nodes as shared (or not) by the input graph
 * (rewrite_is_shared), and rewriting changes who uses what (IDIV(4x + y, 4)
 * declined to copy 4x + y while MOD(4x + y, 4) used it too, until the MOD
 * became MOD(y, 4)). Each further walk rewrites only the nodes at or above
 * one whose sharing changed, the rest standing for themselves; it stops
 * when none changed (at most 16 walks). The result: rewriting it again
 * gives it back. */
const UOp *graph_rewrite_fixpoint(Ctx *ctx, const UOp *root, const RuleSet *rs, void *user);

/* Replaces nodes of the graph under root by identity: in source-first
 * order, each node u is rebuilt on its sources' results (`rebuilt`, u
 * itself when they are unchanged) and its result is what `replace`
 * returns for (u, rebuilt); return `rebuilt` to keep it. For decisions
 * that depend on a node's users (which rules do not see); rules are for
 * the rest. NULL with the error set when out of memory or when `replace`
 * returns NULL. */
typedef const UOp *(*ReplaceFn)(void *user, const UOp *u, const UOp *rebuilt);
const UOp *graph_substitute(Ctx *ctx, const UOp *root, ReplaceFn replace, void *user);

#endif
