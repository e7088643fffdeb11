import test from 'ava';
import { renderChart, type ChartSpec } from '../src/common/svg-chart.js';

/** What a reader sees in the SVG: tick labels per axis, plotted polylines, the legend's box, the picture's height. */
function parse(svg: string) {
  const ticks = (cls: string) => [...svg.matchAll(new RegExp(`<text class="tick ${cls}" x="([\\d.-]+)" y="([\\d.-]+)"[^>]*>([^<]*)</text>`, 'g'))].map((m) => ({ x: Number(m[1]), y: Number(m[2]), label: m[3]! }));
  const paths = [...svg.matchAll(/<path class="series" d="([^"]*)"/g)].map((m) => [...m[1]!.matchAll(/[ML]([\d.-]+),([\d.-]+)/g)].map((p): [number, number] => [Number(p[1]), Number(p[2])]));
  const circles = [...svg.matchAll(/<circle cx="([\d.-]+)" cy="([\d.-]+)"/g)].map((m): [number, number] => [Number(m[1]), Number(m[2])]);
  const box = /<rect class="legend-box" x="([\d.-]+)" y="([\d.-]+)" width="([\d.-]+)" height="([\d.-]+)"/.exec(svg)!;
  return {
    x: ticks('x-tick'),
    y: ticks('y-tick'),
    yRight: ticks('y-right-tick'),
    paths,
    circles,
    legend: { x: Number(box[1]), y: Number(box[2]), width: Number(box[3]), height: Number(box[4]) },
    height: Number(/<svg [^>]*height="(\d+)"/.exec(svg)![1]),
  };
}

/** Every plotted pixel (segments sampled every half pixel, markers with their radius) that falls inside the legend's box. */
function pointsUnderLegend(svg: string): number {
  const { paths, circles, legend } = parse(svg);
  const under = (x: number, y: number, r = 0) => x + r >= legend.x && x - r <= legend.x + legend.width && y + r >= legend.y && y - r <= legend.y + legend.height;
  let hits = circles.filter(([x, y]) => under(x, y, 2.5)).length;
  for (const line of paths) {
    for (let i = 0; i + 1 < line.length; i++) {
      const [[x0, y0], [x1, y1]] = [line[i]!, line[i + 1]!];
      const steps = Math.max(1, Math.ceil(Math.hypot(x1 - x0, y1 - y0) * 2));
      for (let k = 0; k <= steps; k++) if (under(x0 + ((x1 - x0) * k) / steps, y0 + ((y1 - y0) * k) / steps)) hits++;
    }
  }
  return hits;
}

const range = (n: number, f: (i: number) => number): Array<[number, number]> => Array.from({ length: n }, (_, i) => [i + 1, f(i + 1)]);

test('svg chart - integer axes label integers only, even over two rounds', (t) => {
  for (const rounds of [2, 3, 7, 233]) {
    const svg = renderChart({ title: 't', xLabel: 'round', yLabel: 'reward', xAxis: { integer: true }, series: [{ label: 'reward', points: range(rounds, (i) => 10 * i) }] });
    const labels = parse(svg).x.map((tick) => tick.label);
    t.true(labels.length >= 2, `${rounds} rounds: ${labels.join(' ')}`);
    for (const label of labels) t.regex(label.replace(/,/g, ''), /^\d+$/, `${rounds} rounds: tick '${label}'`);
  }
  const fractional = parse(renderChart({ title: 't', xLabel: 'x', yLabel: 'y', series: [{ label: 's', points: range(2, (i) => i) }] })).x.map((tick) => tick.label);
  t.true(fractional.some((label) => label.includes('.')), 'without the option a short range gets fractional ticks, so the option is what makes them integers');
});

test('svg chart - category axes tick exactly the values plotted, evenly spaced', (t) => {
  const svg = renderChart({ title: 't', xLabel: 'micro-batches', yLabel: 'samples / s', xAxis: { categories: true }, series: [{ label: 's', points: [[1, 3833], [2, 4396], [4, 4063], [8, 3795]] }] });
  const { x } = parse(svg);
  t.deepEqual(x.map((tick) => tick.label), ['1', '2', '4', '8']);
  const gaps = x.slice(1).map((tick, i) => tick.x - x[i]!.x);
  for (const gap of gaps) t.true(Math.abs(gap - gaps[0]!) < 0.2, `gaps ${gaps.join(', ')}`);
});

test('svg chart - a count or throughput axis starts at zero (no 3.7e3 baseline)', (t) => {
  const svg = renderChart({ title: 't', xLabel: 'x', yLabel: 'samples / s', yRightLabel: 'clients', series: [{ label: 'rate', points: [[1, 3700], [2, 4400], [3, 4100]] }, { label: 'clients', points: [[1, 3], [2, 2], [3, 3]], right: true }] });
  const { y, yRight } = parse(svg);
  t.is(y[0]!.label, '0', `left ticks ${y.map((tick) => tick.label).join(' ')}`);
  t.is(yRight[0]!.label, '0', `right ticks ${yRight.map((tick) => tick.label).join(' ')}`);
  const marked = parse(renderChart({ title: 't', xLabel: 'x', yLabel: 'y', yAxis: { min: 3000 }, series: [{ label: 'rate', points: [[1, 3700], [2, 4400]] }] }));
  t.is(marked.y[0]!.label, '3,000', 'an axis asked to start elsewhere starts there');
});

test('svg chart - an accuracy axis runs to 100 %, so 93.3 % does not look like the top', (t) => {
  const svg = renderChart({ title: 't', xLabel: 'epoch', yLabel: 'loss', yRightLabel: 'accuracy', yRightAxis: { percent: true }, series: [{ label: 'loss', points: range(5, (i) => 1 / i) }, { label: 'accuracy', points: range(5, (i) => 0.933 * (i / 5)), right: true }] });
  const { yRight, circles } = parse(svg);
  t.deepEqual(yRight.map((tick) => tick.label), ['0 %', '20 %', '40 %', '60 %', '80 %', '100 %']);
  const top = yRight[yRight.length - 1]!.y - 4;
  const best = Math.min(...circles.slice(5).map(([, y]) => y));
  t.true(best - top > 10, `93.3 % is drawn at y=${best}, clearly below the 100 % gridline at y=${top}`);
});

test('svg chart - the legend goes to a corner the data leave empty', (t) => {
  // A loss curve falling from the top left: the usual top-left legend would sit on it.
  const falling: ChartSpec = { title: 't', xLabel: 'epoch', yLabel: 'loss', series: [{ label: 'train loss', points: range(60, (i) => 5 / i) }, { label: 'test loss', points: range(60, (i) => 5.5 / i) }] };
  t.is(pointsUnderLegend(renderChart(falling)), 0);
  t.is(parse(renderChart(falling)).height, 420, 'an empty corner was found: the picture keeps its size');
  // A rising curve (RL rewards, accuracy): the top left is free, the top right is not.
  const rising: ChartSpec = { title: 't', xLabel: 'round', yLabel: 'reward', xAxis: { integer: true }, series: [{ label: 'reward', points: range(200, (i) => Math.min(500, i * 3)) }, { label: 'threshold 475', points: [[1, 475], [200, 475]] }] };
  t.is(pointsUnderLegend(renderChart(rising)), 0);
});

test('svg chart - with every corner taken the legend goes below the plot, outside it', (t) => {
  // Noise over the whole plot area: no corner is free.
  let seed = 7;
  const noise = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  const spec: ChartSpec = { title: 't', xLabel: 'x', yLabel: 'y', series: [{ label: 'noise', points: range(400, () => noise()) }] };
  const svg = renderChart(spec);
  const { legend, height, x } = parse(svg);
  t.is(pointsUnderLegend(svg), 0);
  t.true(legend.y > x[0]!.y, 'below the x axis and its labels');
  t.true(height >= legend.y + legend.height, 'the picture grew to hold it');
});
