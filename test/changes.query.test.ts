/**
 * queries/changes.ts on its own, over a read view whose rows grow between two reads of one
 * page (another process applying a batch meanwhile, as on PostgreSQL): a page with a `types`
 * filter reads each family at its own moment, and only the `bound` keeps it from serving a
 * later row of one family while an earlier row of another is not read yet (a gap).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ReadView } from '../src/ports/read-store.js';
import { changesPage } from '../queries/changes.js';
import { Pacer } from '../queries/cost.js';
import type { AuditEventDoc } from '../projections/audit.js';

const pos = (n: number) => String(n).padStart(4, '0');
const row = (n: number, family: 'document' | 'grant'): AuditEventDoc => ({
  _id: pos(n), position: pos(n), eventId: `e${n}`, stream: 's', category: family === 'grant' ? 'grants' : 'document', streamIds: [], revision: 0,
  type: family === 'grant' ? 'GrantAdded' : 'DocumentAdded', time: 0, actor: 'a', requestId: 'r', apiKey: 'k', family, data: {},
});

/** A read view over `rows`, which runs `between` after its first read (a batch applied by another process). */
function view(rows: AuditEventDoc[], between: () => void): ReadView {
  let reads = 0;
  const find = async (_c: string, filter: Record<string, unknown>, o: { after?: { value: unknown }; limit?: number }) => {
    const out = rows
      .filter((r) => r.apiKey === filter.apiKey && (filter.family === undefined || r.family === filter.family) && (!o.after || r.position > String(o.after.value)))
      .sort((a, b) => (a.position < b.position ? -1 : 1))
      .slice(0, o.limit);
    if (++reads === 1) between();
    return out;
  };
  return { find } as unknown as ReadView;
}

test('a filtered page read while rows are added serves nothing past its bound, and the next page gets the rest in order', async () => {
  const rows = [row(1, 'document'), row(2, 'grant'), row(3, 'document')];
  // While the page reads the documents, a batch adds a document (4) and a grant (5).
  const read = view(rows, () => rows.push(row(4, 'document'), row(5, 'grant')));
  const first = await changesPage(read, 'k', { after: '', bound: pos(3), pageSize: 10, families: ['document', 'grant'], pacer: new Pacer() });
  assert.equal(first.rows.map((r) => r.position), [pos(1), pos(2), pos(3)], 'not the grant at 5 without the document at 4');
  assert.is(first.next, pos(3), 'a short page goes on from its bound');
  const second = await changesPage(read, 'k', { after: first.next, bound: pos(5), pageSize: 10, families: ['document', 'grant'], pacer: new Pacer() });
  assert.equal(second.rows.map((r) => r.position), [pos(4), pos(5)]);
});

test('a full page goes on from its last row; nothing after `after` past the bound: an empty page that stays where it is', async () => {
  const rows = [1, 2, 3, 4, 5].map((n) => row(n, n % 2 ? 'document' : 'grant'));
  const read = view(rows, () => {});
  const full = await changesPage(read, 'k', { after: '', bound: pos(5), pageSize: 2, pacer: new Pacer() });
  assert.equal([full.rows.map((r) => r.position), full.next], [[pos(1), pos(2)], pos(2)]);
  const merged = await changesPage(read, 'k', { after: pos(2), bound: pos(5), pageSize: 2, families: ['grant', 'document'], pacer: new Pacer() });
  assert.equal([merged.rows.map((r) => r.position), merged.next], [[pos(3), pos(4)], pos(4)]);
  const ahead = await changesPage(read, 'k', { after: pos(7), bound: pos(5), pageSize: 2, pacer: new Pacer() });
  assert.equal([ahead.rows, ahead.next], [[], pos(7)]);
});

test.run();
