/* text.h — the text form of the IR (docs/text-form.md): printer and parser.
 *
 * In: a graph root (print) or text (parse). Out: text that parses back to
 * the same interned graph, or the graph, or a message "where:line:col: ...".
 * Both are iterative: a graph a million nodes deep prints and parses. */
#ifndef UJ_TEXT_H
#define UJ_TEXT_H

#include "uop/uop.h"

/* The whole program under root, malloc'd; NULL (error set) on no memory. */
char *text_print(Ctx *ctx, const UOp *root);
/* One node for messages: sources to `depth` levels, deeper ones as "...";
 * always NUL-terminated, cut with "..." when buf is too small. */
void text_print_node(const UOp *u, int depth, char *buf, size_t size);
/* One node's head without its sources or parentheses: "ADD:float32",
 * "RANGE:int32 loop 0", "CONST:float32 1.5"; cut to size. */
void text_node_head(const UOp *u, char *buf, size_t size);
/* The graph under root as Graphviz DOT (dot.c), the graph named name;
 * malloc'd, NULL when out of memory (error set). */
char *text_dot(Ctx *ctx, const UOp *root, const char *name);
/* Sets ctx's error to "<prefix>: <message>\n  in <node>", the node in the
 * text form to 2 levels: how passes report a bad node. */
void text_node_error(Ctx *ctx, const UOp *u, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Whether a name can be written without quotes: [A-Za-z_][A-Za-z0-9_.]*. */
bool text_name_is_bare(const char *s, size_t len);
/* Parses a program; NULL with the error set on failure. */
const UOp *text_parse(Ctx *ctx, const char *text, const char *where);

#endif
