// `node bench/micro/spread.mjs`: what an object literal with a spread costs on this Node
// (docs/performance.md, third pass). On Node 20 (V8 11.3) each key added after a leading
// spread takes a slow path (about 1 us); overriding a key the object already has does not.
const r0 = () => ({ organizationId: 'o', documentId: 'd' });
const cases = {
  '{ ...r }': (r, d) => ({ ...r }),
  '{ ...r, a } (a new)': (r, d) => ({ ...r, a: d }),
  '{ ...r, a, b, c, e, f, g } (all new)': (r, d) => ({ ...r, a: d, b: d, c: d, e: d, f: d, g: d }),
  '{ ...r, documentId } (existing)': (r, d) => ({ ...r, documentId: d }),
  '{ a, b, ...r }': (r, d) => ({ a: d, b: d, ...r }),
  '{ a, ...(cond ? { b } : {}) }': (r, d) => ({ a: d, ...(d ? { b: d } : {}) }),
  'm = { ...r }; m.newKey = x': (r, d) => {
    const m = { ...r };
    m.newKey = d;
    return m;
  },
  'literal keys': (r, d) => ({ organizationId: r.organizationId, documentId: r.documentId, a: d, b: d, c: d, e: d, f: d, g: d }),
};
const N = 300_000;
for (let round = 0; round < 2; round++) {
  for (const [name, f] of Object.entries(cases)) {
    let n = 0;
    const t0 = performance.now();
    for (let i = 0; i < N; i++) n += Object.keys(f(r0(), 'x')).length;
    if (round === 1) console.log(`${name.padEnd(40)} ${(((performance.now() - t0) * 1000) / N).toFixed(3)} us  (${n})`);
  }
}
