/**
 * One global order that never skips, on a real PostgreSQL server (issue 23): writer processes
 * append as fast as they can while followers in this process read the log "after the last
 * position seen", as the projection runner does. Every acknowledged event must reach every
 * follower exactly once, and every follower must see the same order as a final full read.
 *
 * A log ordered by an identity column alone fails this: numbers are taken at insert, commits
 * land in another order, and a follower that has read 8 never goes back for 7 (see
 * src/adapters/postgres-event-store.ts).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { PostgresEventStore } from '../src/adapters/postgres-event-store.js';
import { LOG_START } from '../src/ports/event-store.js';
import { freshDatabase } from './support/postgres.js';
import { ROOT } from './support/process.js';

const WRITERS = 3;
const PER_WRITER = Number(process.env.PG_ORDER_EVENTS ?? 1500);

function writer(url: string, id: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/support/pg-writer.ts'), url, String(id), String(PER_WRITER)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`writer ${id} exited ${code}: ${err}`));
      resolve((JSON.parse(out.trim()) as { acked: string[] }).acked);
    });
  });
}

test(`${WRITERS} writer processes appending at full speed, two followers reading as they go: every event seen once, in one order`, async () => {
  const url = await freshDatabase('order');
  const followers = [new PostgresEventStore(url), new PostgresEventStore(url)];
  const seen: string[][] = followers.map(() => []);
  const positions: string[][] = followers.map(() => []);
  let writing = true;
  const follow = async (i: number) => {
    let after = LOG_START;
    let idleAfterDone = 0;
    // Small pages, read as fast as possible: the follower runs right behind the writers.
    while (writing || idleAfterDone < 2) {
      const page = await followers[i]!.readAll({ after, maxCount: 1 + 37 * i });
      for (const e of page) {
        assert.ok(e.position > after, `follower ${i}: position ${e.position} not after ${after}`);
        after = e.position;
        seen[i]!.push(e.id);
        positions[i]!.push(e.position);
      }
      if (!writing && page.length === 0) idleAfterDone++;
    }
  };
  const running = followers.map((_, i) => follow(i));
  let acked: string[];
  try {
    acked = (await Promise.all(Array.from({ length: WRITERS }, (_, i) => writer(url, i)))).flat();
  } finally {
    writing = false;
  }
  await Promise.all(running);
  const all = await followers[0]!.readAll();
  assert.is(all.length, WRITERS * PER_WRITER, 'the log holds every acknowledged event');
  assert.equal(new Set(all.map((e) => e.id)), new Set(acked));
  for (let i = 0; i < followers.length; i++) {
    assert.is(new Set(seen[i]).size, seen[i]!.length, `follower ${i} saw an event twice`);
    const missed = acked.filter((id) => !seen[i]!.includes(id));
    assert.is(missed.length, 0, `follower ${i} passed over ${missed.length} events that committed behind it`);
    assert.equal(seen[i], all.map((e) => e.id), `follower ${i} saw another order than the final read`);
  }
  await Promise.all(followers.map((f) => f.close()));
});

test.run();
