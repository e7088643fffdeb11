#!/usr/bin/env node
/**
 * Summarises V8 .cpuprofile files (from `node --cpu-prof`): per profile, the
 * functions with the most self time, and self time grouped by file (package
 * path shortened). With `--per N`, times are also given per N units (e.g. the
 * environment steps of an RL run) in microseconds.
 *
 *   node scripts/cpuprofile-summary.mjs [--top 25] [--per 6000] [--files 20] DIR|FILE...
 *
 * Each argument is a .cpuprofile file or a folder of them; every profile is
 * summarised on its own, then all together.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';

const argv = process.argv.slice(2);
function flag(name, fallback) {
  const i = argv.indexOf(name);
  if (i < 0) return fallback;
  const value = argv[i + 1];
  argv.splice(i, 2);
  return Number(value);
}
const top = flag('--top', 25);
const per = flag('--per', 0);
const fileRows = flag('--files', 20);
const callersIndex = argv.indexOf('--callers');
/** With `--callers NAME`: the call paths (4 frames up, node: internals left out) that spend the self time of functions named NAME. */
const callersOf = callersIndex >= 0 ? argv.splice(callersIndex, 2)[1] : undefined;

const files = argv.flatMap((a) => (statSync(a).isDirectory() ? readdirSync(a).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(a, f)) : [a]));
if (files.length === 0) {
  console.error('usage: cpuprofile-summary.mjs [--top N] [--per UNITS] [--files N] DIR|FILE...');
  process.exit(2);
}

/** A short name for a script URL: the package and path under it, or the node: module. */
function shortFile(url) {
  if (!url) return '(native)';
  const m = /packages\/([^/]+)\/(?:dist\/)?(.*)$/.exec(url) ?? /node_modules\/(.*)$/.exec(url);
  if (m) return m[2] ? `${m[1]}/${m[2]}` : m[1];
  return url.replace(/^file:\/\//, '');
}

/** Self microseconds per node id, from the samples and their time deltas. */
function selfTimes(profile) {
  const self = new Map();
  const { samples = [], timeDeltas = [] } = profile;
  for (let i = 0; i < samples.length; i++) {
    // A sample's time is the delta to the next sample.
    const dt = timeDeltas[i + 1] ?? 0;
    self.set(samples[i], (self.get(samples[i]) ?? 0) + dt);
  }
  return self;
}

/** Self time of `callersOf`, by the four frames outside node: internals that called it. */
function callerPaths(profiles) {
  const paths = new Map();
  for (const profile of profiles) {
    const self = selfTimes(profile);
    const parent = new Map();
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    for (const n of profile.nodes) {
      if (n.callFrame.functionName !== callersOf) continue;
      const frames = [];
      for (let id = parent.get(n.id); id !== undefined && frames.length < 4; id = parent.get(id)) {
        if (byId.get(id).callFrame.url.startsWith('node:')) continue;
        const cf = byId.get(id).callFrame;
        frames.push(`${cf.functionName || '(anon)'}@${shortFile(cf.url).split('/').pop()}:${cf.lineNumber + 1}`);
      }
      const key = frames.join(' < ');
      paths.set(key, (paths.get(key) ?? 0) + (self.get(n.id) ?? 0));
    }
  }
  return paths;
}

function summarise(profiles, label) {
  const byFunction = new Map();
  const byFile = new Map();
  let total = 0;
  for (const profile of profiles) {
    const self = selfTimes(profile);
    for (const node of profile.nodes) {
      const us = self.get(node.id) ?? 0;
      if (us === 0) continue;
      const cf = node.callFrame;
      const file = shortFile(cf.url);
      const name = `${cf.functionName || '(anonymous)'}  ${file}:${cf.lineNumber + 1}`;
      byFunction.set(name, (byFunction.get(name) ?? 0) + us);
      byFile.set(file, (byFile.get(file) ?? 0) + us);
      total += us;
    }
  }
  const fmt = (us) => `${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%${per ? ` ${(us / per).toFixed(1).padStart(7)} us/unit` : ''}`;
  console.log(`\n== ${label}: ${(total / 1000).toFixed(0)} ms sampled${per ? `, ${(total / per).toFixed(1)} us per unit` : ''}`);
  console.log('-- self time by function');
  for (const [name, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${fmt(us)}  ${name}`);
  if (callersOf) {
    console.log(`-- call paths into ${callersOf}`);
    for (const [path, us] of [...callerPaths(profiles)].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${fmt(us)}  ${path}`);
  }
  console.log('-- self time by file');
  for (const [file, us] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, fileRows)) console.log(`${fmt(us)}  ${file}`);
}

const profiles = files.map((f) => ({ f, p: JSON.parse(readFileSync(f, 'utf8')) }));
for (const { f, p } of profiles) summarise([p], basename(f));
if (profiles.length > 1) summarise(profiles.map(({ p }) => p), `all ${profiles.length} profiles`);
