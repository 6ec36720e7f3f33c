// `node bench/micro/evict.mjs`: a Map used as a bounded cache (50,000 entries), evicting the
// oldest entry per insert with `keys().next()` versus an eighth of the entries in one walk
// (src/shared/evict.ts). Deleted entries stay as holes that every new walk skips again.
const MAX = 50_000;
const N = 400_000;
function run(name, evict) {
  const m = new Map();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const k = `k${i}`;
    m.delete(k);
    m.set(k, i);
    if (m.size > MAX) evict(m);
  }
  console.log(`${name.padEnd(28)} ${(((performance.now() - t0) * 1000) / N).toFixed(2)} us per insert`);
}
run('one by one (keys().next())', (m) => m.delete(m.keys().next().value));
run('an eighth per walk', (m) => {
  let n = m.size - MAX + (MAX >> 3);
  for (const k of m.keys()) {
    m.delete(k);
    if (--n <= 0) break;
  }
});
