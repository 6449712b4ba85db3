/* curve.h — the loss curve of a training run as an SVG picture.
 *
 * In: a log.tsv of train.c (a header line, then step, training loss,
 * validation loss or nan, learning rate, tab-separated). Out: an SVG
 * file: the training loss a step (a thin line), the validation loss where
 * it was measured (points joined by a line), axes with ticks, a legend. */
#ifndef GPT2_CURVE_H
#define GPT2_CURVE_H

#include <stdbool.h>
#include <stddef.h>

bool curve_svg(const char *log_path, const char *svg_path, char *err, size_t errlen);

#endif
