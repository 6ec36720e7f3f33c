#!/usr/bin/env node
/**
 * Where a service's CPU went under load, from the V8 profile `npm run bench` writes when
 * BENCH_PROFILE_DIR is set (docs/performance.md, "What limits each target"):
 *
 *   BENCH_PROFILE_DIR=/tmp/prof npm run bench -- --scenario=perm1
 *   node bench/profile-summary.mjs /tmp/prof/CPU.*.cpuprofile            # busy stretches
 *   node bench/profile-summary.mjs /tmp/prof/CPU.*.cpuprofile 41 49.5    # self time in 41..49.5 s
 *
 * Without a window it prints how busy each half second was, so the load's stretch (after the
 * seeding, before shutdown) can be picked. With one, it prints self time by area (ours per
 * directory, Fastify, better-sqlite3, Node core, V8 builtins such as the socket writes) and
 * the top functions.
 */
import fs from 'node:fs';

const [file, fromArg, toArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile-summary.mjs <file.cpuprofile> [fromSeconds toSeconds]\n');
  process.exit(2);
}
const p = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
let t = p.startTime;
const times = p.timeDeltas.map((d) => (t += d));
const idle = new Set(p.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));

if (fromArg === undefined) {
  const bins = new Map();
  for (let i = 0; i < p.samples.length; i++) {
    const b = Math.floor((times[i] - p.startTime) / 5e5);
    const o = bins.get(b) ?? [0, 0];
    o[0]++;
    if (!idle.has(p.samples[i])) o[1]++;
    bins.set(b, o);
  }
  console.log('busy % per half second (seconds from the start):');
  console.log([...bins].map(([b, [n, busy]]) => `${b / 2}s:${Math.round((100 * busy) / n)}`).join(' '));
  process.exit(0);
}

const from = p.startTime + Number(fromArg) * 1e6;
const until = p.startTime + Number(toArg) * 1e6;
const self = new Map();
let total = 0;
for (let i = 0; i < p.samples.length; i++) {
  if (times[i] < from || times[i] >= until) continue;
  const dt = (times[i + 1] ?? times[i]) - times[i];
  self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + dt);
  total += dt;
}

function area(url, fn) {
  if (!url) return fn.startsWith('(') ? fn : 'V8/native (socket writes, JSON, crypto)';
  if (url.includes('/node_modules/')) {
    const dep = url.split('/node_modules/').pop().split('/');
    const name = dep[0].startsWith('@') ? `${dep[0]}/${dep[1]}` : dep[0];
    if (['fastify', 'find-my-way', 'avvio', 'light-my-request', 'fast-json-stringify'].includes(name) || name.startsWith('@fastify/')) return 'fastify';
    return name;
  }
  if (url.startsWith('node:')) return 'node core';
  const m = url.match(/\/(?:dist\/)?(src\/http|src\/runtime|src\/adapters|queries|projections|commands|src)\//);
  return m ? `ours: ${m[1]}/` : url;
}

const fns = new Map();
const areas = new Map();
for (const [id, dt] of self) {
  const { functionName, url, lineNumber } = byId.get(id).callFrame;
  const where = url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(dist\/)?(?=src\/|queries\/|projections\/|commands\/)/, '');
  const k = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
  fns.set(k, (fns.get(k) ?? 0) + dt);
  const a = area(url, functionName);
  areas.set(a, (areas.get(a) ?? 0) + dt);
}
const pct = (x) => `${((100 * x) / total).toFixed(1).padStart(5)}%`;
console.log(`self time from ${fromArg}s to ${toArg}s (${(total / 1e6).toFixed(2)} s sampled)`);
console.log('-- by area');
for (const [k, v] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(pct(v), k);
console.log('-- top functions');
for (const [k, v] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(pct(v), k);
