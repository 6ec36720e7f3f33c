/** `collab projections status`'s table: its columns line up whatever the store's positions look like. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { formatStatus, type Status } from '../src/ops/rebuild.js';

/** Where each column of a table line starts: the index after every run of two or more spaces. */
const starts = (line: string) => [0, ...[...line.matchAll(/ {2,}/g)].map((m) => m.index! + m[0].length)];

const status = (checkpoint: string, holder: string): Status => ({
  generation: 0,
  previous: null,
  switchedAt: null,
  head: checkpoint,
  projections: [
    { name: 'documents', checkpoint, lag: 0, lagCapped: false },
    { name: 'history.groupGrants', checkpoint: '', lag: 12, lagCapped: false },
  ],
  webhooks: { name: 'webhooks', checkpoint, lag: 10_000, lagCapped: true },
  leases: [
    { name: 'projections', holder, expiresAt: 0, held: true },
    { name: 'webhooks', holder: 'h', expiresAt: 0, held: false },
  ],
  parked: 0,
  heldBack: null,
});

for (const [store, position, holder] of [
  ['SQLite (20 digits)', '00000000000000000027', 'host-1:4242'],
  ['PostgreSQL (39 digits)', '000000000000000000000000000000000001234', `${'a-very-long-host-name-'.repeat(3)}:4242`],
] as const) {
  test(`the columns line up: ${store}`, () => {
    const lines = formatStatus(status(position, holder)).split('\n');
    const table = lines.slice(lines.findIndex((l) => l.startsWith('projection')), lines.findIndex((l) => l.startsWith('webhooks')) + 1);
    assert.is(table.length, 4, lines.join('\n'));
    for (const line of table) assert.equal(starts(line), starts(table[0]!), `\n${table.join('\n')}`);
    assert.ok(table[1]!.includes(position), 'the whole position is shown');
    assert.ok(table[3]!.endsWith('>10000'), 'a capped lag');
    const leases = lines.slice(lines.findIndex((l) => l.startsWith('lease')));
    assert.is(leases.length, 3);
    for (const line of leases) assert.is(starts(line).length, 3, line);
    assert.is(starts(leases[1]!)[2], starts(leases[0]!)[2], `\n${leases.join('\n')}`);
    assert.ok(leases[2]!.endsWith('(free)'));
  });
}

test('events held back by an open transaction: how many, since when, and the session to end', () => {
  const now = 1_000_000;
  const held = formatStatus({ ...status('00000000000000000027', 'h'), heldBack: { events: 3, capped: false, oldestTime: now - 42_000, blocker: { pid: 4711, application: 'psql', state: 'idle in transaction', database: 'collab', openSeconds: 50 } } }, now);
  const line = held.split('\n').find((l) => l.startsWith('held back:'));
  assert.ok(line, held);
  for (const part of ['3 events', '42 s ago', 'pid 4711', '"psql"', 'idle in transaction', 'open 50 s', 'pg_terminate_backend']) assert.ok(line!.includes(part), `${part} in ${line}`);
  const unseen = formatStatus({ ...status('00000000000000000027', 'h'), heldBack: { events: 10_000, capped: true, oldestTime: now, blocker: null } }, now);
  assert.match(unseen, /held back: over 10000 events .* pg_read_all_stats/);
  assert.not.match(formatStatus(status('00000000000000000027', 'h'), now), /held back/);
});

test.run();
