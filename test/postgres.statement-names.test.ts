/**
 * Prepared statement names mean one text everywhere. Behind a pooler in transaction mode a
 * server connection serves every client of the pooler: this process's threads (each with its
 * own copy of the read store's module), other processes, other releases. node-postgres sends
 * only Bind for a name it has parsed once on its connection, so a name that stood for another
 * text on the server connection it lands on ran that text with these values (a per-module
 * counter did: "bind message supplies 7 parameters, but prepared statement "collab_0"
 * requires 2", test/postgres.pooler.test.ts; with equal counts, silently the wrong statement).
 * Two copies of the module, as two threads have, must name each text alike whatever order
 * they meet the texts in.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

const s = suite('PostgreSQL prepared statement names');

s('two copies of the read store module name the same text alike, and different texts apart', async () => {
  const url = new URL('../src/adapters/postgres-read-store.ts', import.meta.url).href;
  const first = (await import(url)) as typeof import('../src/adapters/postgres-read-store.js');
  const second = (await import(`${url}?copy=2`)) as typeof import('../src/adapters/postgres-read-store.js');
  assert.is.not(first, second, 'two module instances, as two threads load');
  const a = 'SELECT doc FROM rm_test_a WHERE id = $1';
  const b = 'SELECT doc FROM rm_test_b WHERE id = ANY($1::text[]) AND k = $2';
  // Met in opposite orders, as two threads meet them.
  const nameA1 = first.statement(true, a, ['x']).name;
  const nameB1 = first.statement(true, b, [[], 'k']).name;
  const nameB2 = second.statement(true, b, [[], 'k']).name;
  const nameA2 = second.statement(true, a, ['x']).name;
  assert.ok(nameA1 && nameB1, 'named when prepared');
  assert.is(nameB2, nameB1);
  assert.is(nameA2, nameA1);
  assert.is.not(nameA1, nameB1);
  assert.ok(nameA1!.length <= 63, 'within PostgreSQL identifier length');
  assert.is(first.statement(false, a, ['x']).name, undefined, 'unnamed when not prepared');
});

s.run();
