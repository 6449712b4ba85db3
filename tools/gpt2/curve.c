/* curve.c — a training log drawn as an SVG line chart (curve.h). */
#include "curve.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WIDTH = 800, HEIGHT = 480, LEFT = 70, RIGHT = 20, TOP = 40, BOTTOM = 50 };

typedef struct Series {
  double *step, *train, *val;
  size_t n;
} Series;

static void series_free(Series *s) { free(s->step), free(s->train), free(s->val); }

static bool series_read(const char *path, Series *s, char *err, size_t errlen) {
  *s = (Series){0};
  FILE *f = fopen(path, "r");
  if (!f) return snprintf(err, errlen, "%s: %s", path, strerror(errno)), false;
  char line[256];
  size_t cap = 0;
  bool ok = true;
  while (ok && fgets(line, sizeof line, f)) {
    double step, train, val;
    if (sscanf(line, "%lf %lf %lf", &step, &train, &val) != 3) continue; /* the header */
    if (s->n == cap) {
      cap = cap ? 2 * cap : 256;
      double *a = realloc(s->step, cap * sizeof *a);
      if (a) s->step = a;
      double *b = realloc(s->train, cap * sizeof *b);
      if (b) s->train = b;
      double *c = realloc(s->val, cap * sizeof *c);
      if (c) s->val = c;
      ok = a && b && c;
    }
    if (ok) s->step[s->n] = step, s->train[s->n] = train, s->val[s->n++] = val;
  }
  fclose(f);
  if (!ok) snprintf(err, errlen, "out of memory");
  else if (!s->n) ok = false, snprintf(err, errlen, "%s: no steps to draw", path);
  if (!ok) series_free(s);
  return ok;
}

/* A round tick spacing that puts about `want` ticks over span. */
static double tick_step(double span, int want) {
  double raw = span / want, p = pow(10, floor(log10(raw))), m = raw / p;
  return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

typedef struct Frame {
  double x0, x1, y0, y1;
} Frame;
static double px(const Frame *f, double x) { return LEFT + (x - f->x0) / (f->x1 - f->x0) * (WIDTH - LEFT - RIGHT); }
static double py(const Frame *f, double y) { return HEIGHT - BOTTOM - (y - f->y0) / (f->y1 - f->y0) * (HEIGHT - TOP - BOTTOM); }

static void axes(FILE *o, const Frame *f) {
  fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", LEFT, TOP, WIDTH - LEFT - RIGHT,
          HEIGHT - TOP - BOTTOM);
  double dx = tick_step(f->x1 - f->x0, 8), dy = tick_step(f->y1 - f->y0, 6);
  for (double x = ceil(f->x0 / dx) * dx; x <= f->x1 + 1e-9; x += dx)
    fprintf(o, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
            px(f, x), TOP, px(f, x), HEIGHT - BOTTOM, px(f, x), HEIGHT - BOTTOM + 18, x);
  for (double y = ceil(f->y0 / dy) * dy; y <= f->y1 + 1e-9; y += dy)
    fprintf(o, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", LEFT,
            py(f, y), WIDTH - RIGHT, py(f, y), LEFT - 6, py(f, y) + 4, y);
  fprintf(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n", (LEFT + WIDTH - RIGHT) / 2, HEIGHT - 12);
  fprintf(o, "<text x=\"16\" y=\"%d\" transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">loss (nats a token)</text>\n", (TOP + HEIGHT - BOTTOM) / 2,
          (TOP + HEIGHT - BOTTOM) / 2);
}

static void polyline(FILE *o, const Frame *f, const Series *s, const double *v, const char *style) {
  fprintf(o, "<polyline fill=\"none\" %s points=\"", style);
  for (size_t i = 0; i < s->n; i++)
    if (isfinite(v[i])) fprintf(o, "%.1f,%.1f ", px(f, s->step[i]), py(f, v[i]));
  fprintf(o, "\"/>\n");
}

bool curve_svg(const char *log_path, const char *svg_path, char *err, size_t errlen) {
  Series s;
  if (!series_read(log_path, &s, err, errlen)) return false;
  Frame f = {s.step[0], s.step[s.n - 1], INFINITY, -INFINITY};
  for (size_t i = 0; i < s.n; i++)
    for (int k = 0; k < 2; k++) {
      double v = k ? s.val[i] : s.train[i];
      if (isfinite(v)) f.y0 = fmin(f.y0, v), f.y1 = fmax(f.y1, v);
    }
  if (!(f.y1 >= f.y0)) f.y0 = 0, f.y1 = 1;
  double pad = (f.y1 - f.y0) * 0.05 + 1e-3;
  f.y0 = fmax(0, f.y0 - pad), f.y1 += pad;
  if (f.x1 <= f.x0) f.x1 = f.x0 + 1;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", svg_path);
  FILE *o = fopen(tmp, "w");
  if (!o) return series_free(&s), snprintf(err, errlen, "%s: %s", tmp, strerror(errno)), false;
  fprintf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", WIDTH, HEIGHT);
  fprintf(o, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fprintf(o, "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">GPT-2 training loss (uopjit)</text>\n", WIDTH / 2);
  axes(o, &f);
  polyline(o, &f, &s, s.train, "stroke=\"#4a7bd0\" stroke-width=\"1\" opacity=\"0.8\"");
  polyline(o, &f, &s, s.val, "stroke=\"#d0504a\" stroke-width=\"2\"");
  for (size_t i = 0; i < s.n; i++)
    if (isfinite(s.val[i])) fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#d0504a\"/>\n", px(&f, s.step[i]), py(&f, s.val[i]));
  fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#4a7bd0\"/><text x=\"%d\" y=\"%d\">training</text>\n", WIDTH - 190, TOP + 16,
          WIDTH - 170, TOP + 16, WIDTH - 164, TOP + 20);
  fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#d0504a\" stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">validation</text>\n",
          WIDTH - 190, TOP + 34, WIDTH - 170, TOP + 34, WIDTH - 164, TOP + 38);
  fprintf(o, "</svg>\n");
  bool ok = fclose(o) == 0;
  if (ok && rename(tmp, svg_path) != 0) ok = false;
  if (!ok) snprintf(err, errlen, "%s: cannot write: %s", svg_path, strerror(errno)), remove(tmp);
  series_free(&s);
  return ok;
}
