/**
 * Where a chart's legend goes: in a corner (or the middle of a side) of the
 * plot area that the data leave empty, found by testing the legend's box against every plotted
 * segment and point, or else below the plot, outside it. Never over the data.
 * @module
 */

/** A rectangle in SVG pixels. */
export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** A plotted polyline in SVG pixels (one point is a marker). */
export type Polyline = Array<[number, number]>;

const PAD = 8;

function inside([x, y]: [number, number], b: Box): boolean {
  return x >= b.x && x <= b.x + b.width && y >= b.y && y <= b.y + b.height;
}

/** Whether segment p–q crosses segment a–b (touching counts). */
function crosses(p: [number, number], q: [number, number], a: [number, number], b: [number, number]): boolean {
  const side = (o: [number, number], s: [number, number], t: [number, number]) => Math.sign((s[0] - o[0]) * (t[1] - o[1]) - (s[1] - o[1]) * (t[0] - o[0]));
  const d1 = side(a, b, p);
  const d2 = side(a, b, q);
  const d3 = side(p, q, a);
  const d4 = side(p, q, b);
  if (d1 !== d2 && d3 !== d4) return true;
  const onSegment = (o: [number, number], s: [number, number], t: [number, number]) =>
    side(o, s, t) === 0 && Math.min(o[0], s[0]) <= t[0] && t[0] <= Math.max(o[0], s[0]) && Math.min(o[1], s[1]) <= t[1] && t[1] <= Math.max(o[1], s[1]);
  return onSegment(a, b, p) || onSegment(a, b, q) || onSegment(p, q, a) || onSegment(p, q, b);
}

/** Whether any segment or point of `lines` touches `box` (grown by `margin` pixels, the markers' radius and some air). */
export function hitsBox(lines: Polyline[], box: Box, margin = 4): boolean {
  const b = { x: box.x - margin, y: box.y - margin, width: box.width + 2 * margin, height: box.height + 2 * margin };
  const corners: Array<[number, number]> = [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]];
  for (const line of lines) {
    for (let i = 0; i < line.length; i++) {
      const p = line[i]!;
      if (inside(p, b)) return true;
      const q = line[i + 1];
      if (q && corners.some((c, k) => crosses(p, q, c, corners[(k + 1) % 4]!))) return true;
    }
  }
  return false;
}

/**
 * Places a legend of `size` in `plot`: the first corner (top left, top
 * right, bottom right, bottom left), then middle of a side, whose box no
 * plotted line touches; `undefined` when all are taken, so the caller puts
 * it outside.
 */
export function legendCorner(plot: Box, size: { width: number; height: number }, lines: Polyline[]): Box | undefined {
  if (size.width + 2 * PAD > plot.width || size.height + 2 * PAD > plot.height) return undefined;
  const left = plot.x + PAD;
  const right = plot.x + plot.width - PAD - size.width;
  const top = plot.y + PAD;
  const bottom = plot.y + plot.height - PAD - size.height;
  const middle = plot.y + (plot.height - size.height) / 2;
  const centre = plot.x + (plot.width - size.width) / 2;
  const candidates: Box[] = [
    { x: left, y: top, ...size },
    { x: right, y: top, ...size },
    { x: right, y: bottom, ...size },
    { x: left, y: bottom, ...size },
    // Then the middles of the sides: a curve that rises fast and then flattens leaves the middle right empty.
    { x: right, y: middle, ...size },
    { x: left, y: middle, ...size },
    { x: centre, y: bottom, ...size },
    { x: centre, y: top, ...size },
  ];
  return candidates.find((box) => !hitsBox(lines, box));
}
