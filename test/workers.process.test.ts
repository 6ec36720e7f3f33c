/**
 * `serve --workers 2` as a real process tree (src/cluster.ts): two API processes on one port
 * and a background process. A write answered by one API process is seen at once by a read on
 * a new connection, whichever process takes it; an API process killed with SIGKILL is started
 * again while the other keeps answering; SIGTERM on the primary ends every child (the API
 * processes before the background process) and exits 0.
 *
 * Which process answered: the app honours a client's `x-request-id` and logs each request
 * completed at info level with its pid (pino's own field), so the test names its requests and
 * looks them up in the log; the API has nothing added for this.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import net from 'node:net';
import { tempDir } from './support/app.js';
import { freePort, fresh, logLines, post, servedBy, startService, waitHealthy, type Service } from './support/process.js';
import { parseServeArgs } from '../src/server.js';
import { ConfigError } from '../src/config/config.js';
import { waiter } from './support/wait.js';

function childPids(s: Service, role: 'api' | 'worker'): number[] {
  return logLines(s).filter((l) => l.role === 'primary' && l.child === role && typeof l.childPid === 'number' && /^started/.test(l.msg)).map((l) => l.childPid);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** After a test, whatever happened: the primary and every child it forked are gone. */
async function killCluster(s: Service | null): Promise<void> {
  if (!s) return;
  if (s.child.exitCode === null && s.child.signalCode === null) {
    s.child.kill('SIGKILL');
    await s.exited;
  }
  for (const pid of [...childPids(s, 'api'), ...childPids(s, 'worker')]) if (alive(pid)) process.kill(pid, 'SIGKILL');
}

const until = waiter(20_000, 50);

test('--workers: integers 1..64 or auto; anything else, or with --role worker, is a ConfigError naming --workers', () => {
  assert.equal(parseServeArgs(['--workers', '2']), { role: 'all', workers: 2 });
  assert.equal(parseServeArgs(['--workers', '64', '--role', 'api']), { role: 'api', workers: 64 });
  assert.equal(parseServeArgs(['--role', 'all', '--workers', '1']), { role: 'all', workers: 1 });
  const auto = parseServeArgs(['--workers', 'auto']).workers!;
  assert.ok(Number.isInteger(auto) && auto >= 1 && auto <= 64, String(auto));
  assert.equal(parseServeArgs([]), { role: 'all' });
  for (const bad of [['--workers', '0'], ['--workers', '65'], ['--workers', '1.5'], ['--workers', 'two'], ['--workers=-1'], ['--workers', ''], ['--role', 'worker', '--workers', '2']]) {
    try {
      parseServeArgs(bad);
      assert.unreachable(bad.join(' '));
    } catch (e) {
      assert.instance(e, ConfigError, bad.join(' '));
      assert.match((e as Error).message, /^--workers: /, bad.join(' '));
    }
  }
});

test('serve --workers 0: exit 2, the message names --workers', async () => {
  const s = await startService({ DATA_DIR: tempDir('collab-workers-cfg-') }, 'src/server.ts', ['--workers', '0']);
  const { code } = await s.exited;
  assert.is(code, 2);
  assert.match(s.output(), /configuration error: --workers: must be an integer from 1 to 64 or auto/);
});

test('serve --workers 1 on a port already taken: the API process cannot listen, so the primary stops everything and exits 1', async () => {
  const dir = tempDir('collab-workers-busy-');
  const port = await freePort();
  const holder = net.createServer();
  await new Promise<void>((r) => holder.listen(port, '127.0.0.1', r));
  try {
    const s = await startService({ DATA_DIR: dir, PORT: String(port), LOG_LEVEL: 'info' }, 'src/server.ts', ['--workers', '1']);
    const { code } = await s.exited;
    assert.is(code, 1, s.output());
    assert.match(s.output(), /child failed while starting; stopping/);
    for (const pid of [...childPids(s, 'api'), ...childPids(s, 'worker')]) assert.not.ok(alive(pid), `child ${pid} left running`);
  } finally {
    holder.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('serve --role api --workers 1: API processes only; a separate --role worker process applies the projections its writes wait for', async () => {
  const dir = tempDir('collab-workers-api-');
  const procs: Service[] = [];
  try {
    const worker = await startService({ DATA_DIR: dir }, 'src/server.ts', ['--role', 'worker']);
    procs.push(worker);
    await waitHealthy(worker);
    const s = await startService({ DATA_DIR: dir, LOG_LEVEL: 'info' }, 'src/server.ts', ['--role', 'api', '--workers', '1']);
    procs.push(s);
    await waitHealthy(s);
    assert.is(childPids(s, 'api').length, 1);
    assert.is(childPids(s, 'worker').length, 0, 'no background process forked');
    const ws = await post(s, '/v2/workspace/create', { ownerEmail: 'api-only@example.com' });
    assert.is(ws.status, 200, JSON.stringify(ws.body));
    const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
    const h = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };
    const w = await post(s, '/v2/organizations/documents/add', { organizationId: 'o', createOrganization: true, documents: [{ documentId: 'd' }] }, h);
    assert.is(w.status, 200, JSON.stringify(w.body));
    const r = await post(s, '/v2/organizations/documents/get', { organizationId: 'o' }, h);
    assert.equal(r.body.result.data.map((d: { id: string }) => d.id), ['d']);
    assert.not.match(s.output(), /read models lag behind this write/);
    for (const p of [s, worker]) {
      p.child.kill('SIGTERM');
      assert.is((await p.exited).code, 0, p.output());
    }
  } finally {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('serve --workers 2: read-your-writes across API processes, answers from both, a killed child restarted, SIGTERM ends them all with 0', async () => {
  const dir = tempDir('collab-workers-');
  let s: Service | null = null;
  try {
    s = await startService({ DATA_DIR: dir, LOG_LEVEL: 'info' }, 'src/server.ts', ['--workers', '2']);
    await until('the primary to report every child serving', () => /serving with 2 API processes/.test(s!.output()) || s!.child.exitCode !== null);
    await waitHealthy(s);
    const apis = childPids(s, 'api');
    const [background] = childPids(s, 'worker');
    assert.is(apis.length, 2);
    assert.ok(background, 'a background process was started');

    const ws = await post(s, '/v2/workspace/create', { ownerEmail: 'workers@example.com' });
    assert.is(ws.status, 200);
    const [apiKey, key] = Object.entries(ws.body.result.data.apiKeyList)[0] as [string, { authToken: string }];
    const h = { 'x-service-api-key': apiKey, 'x-service-auth-token': key.authToken };

    // Every round writes a new organization on one connection and reads it back at once on
    // another: whichever API process answers the read must see the write.
    const ROUNDS = 30;
    const ids: string[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const w = await fresh(s, '/v2/organizations/documents/add', { organizationId: `o${i}`, createOrganization: true, documents: [{ documentId: 'd' }] }, h, `w${i}-ryw`);
      assert.is(w.status, 200, JSON.stringify(w.body));
      assert.is(w.body.result.data.d.success, true, JSON.stringify(w.body));
      const r = await fresh(s, '/v2/organizations/documents/get', { organizationId: `o${i}` }, h, `r${i}-ryw`);
      assert.is(r.status, 200, `round ${i}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.result.data.map((d: { id: string }) => d.id), ['d'], `round ${i}`);
      ids.push(`w${i}-ryw`, `r${i}-ryw`);
    }
    const pids = await servedBy(s, ids);
    assert.is(pids.size, ids.length, 'every request is in the log');
    const distinct = new Set(pids.values());
    assert.is(distinct.size, 2, `answered by ${[...distinct].join(', ')}`);
    for (const pid of distinct) assert.ok(apis.includes(pid), `${pid} is an API process`);
    const crossed = Array.from({ length: ROUNDS }, (_, i) => pids.get(`w${i}-ryw`) !== pids.get(`r${i}-ryw`)).filter(Boolean).length;
    assert.ok(crossed > 0, 'some reads were answered by the other process than their write');

    // SIGKILL one API process: the other keeps answering, and the slot gets a new process.
    const victim = apis[0]!;
    process.kill(victim, 'SIGKILL');
    await until('the primary to see the child die', () => logLines(s!).some((l) => l.childPid === victim && l.msg === 'child exited unexpectedly; restarting'));
    assert.not.ok(alive(victim));
    for (let i = 0; i < 10; i++) {
      const r = await fresh(s, '/v2/organizations/documents/get', { organizationId: 'o0' }, h, `k${i}-after-kill`);
      assert.is(r.status, 200, JSON.stringify(r.body));
    }
    await until('a third API process', () => childPids(s!, 'api').length === 3);
    const replacement = childPids(s, 'api')[2]!;
    let n = 0;
    await until('the new API process to answer', async () => {
      const id = `n${n++}-new`;
      const r = await fresh(s!, '/v2/organizations/documents/get', { organizationId: `o${ROUNDS - 1}` }, h, id);
      assert.is(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.result.data.map((d: { id: string }) => d.id), ['d']);
      return (await servedBy(s!, [id])).get(id) === replacement;
    });

    // SIGTERM with writes in flight: the API processes stop first and the background process
    // after them, so every write they took is shown by the projections and answered, none left
    // waiting for its read-your-writes timeout. Writers keep opening connections until the
    // service refuses them: a connection not yet handed to an API process when they closed is
    // reset or refused, as with a single process closing its listening socket.
    const answers: number[] = [];
    const refused: string[] = [];
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; i < 10_000; i++) {
        try {
          const r = await fresh(s!, '/v2/organizations/documents/add', { organizationId: `t${w}-${i}`, createOrganization: true, documents: [{ documentId: 'd' }] }, h, `t${w}-${i}-term`);
          answers.push(r.status);
          if (r.status !== 200) return;
        } catch (e) {
          refused.push((e as NodeJS.ErrnoException).code ?? (e as Error).message);
          return;
        }
      }
    });
    await until('writes under way', () => answers.length >= 8);
    s.child.kill('SIGTERM');
    await Promise.all(writers);
    for (const status of answers) assert.ok(status === 200 || status === 503, String(status));
    for (const code of refused) assert.ok(['ECONNRESET', 'ECONNREFUSED'].includes(code) || /socket hang up/.test(code), code);
    const exit = await s.exited;
    assert.not.match(s.output(), /read models lag behind this write/);
    assert.is(exit.code, 0, s.output().slice(-3000));
    for (const pid of [...childPids(s, 'api'), ...childPids(s, 'worker')]) assert.not.ok(alive(pid), `child ${pid} left running`);
    assert.is(logLines(s).filter((l) => l.role === 'primary' && l.msg === 'child exited' && l.code === 0).length, 3, 'three children exited cleanly');
  } finally {
    await killCluster(s);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('serve --workers 2: the limits hold for the service as a whole (each API process enforces half), sign-up\'s here', async () => {
  const dir = tempDir('collab-workers-limits-');
  let s: Service | null = null;
  try {
    // A burst of 4 sign-ups for the service; the rate so slow nothing refills during the test.
    s = await startService({ DATA_DIR: dir, LOG_LEVEL: 'info', SIGNUP_RATE_PER_MINUTE: '1', SIGNUP_BURST: '4' }, 'src/server.ts', ['--workers', '2']);
    await until('the primary to report every child serving', () => /serving with 2 API processes/.test(s!.output()) || s!.child.exitCode !== null);
    await waitHealthy(s);
    const ids = Array.from({ length: 12 }, (_, i) => `s${i}-signup`);
    const statuses: number[] = [];
    for (const id of ids) statuses.push((await fresh(s, '/v2/workspace/create', { ownerEmail: `${id}@example.com` }, {}, id)).status);
    const pids = await servedBy(s, ids);
    assert.is(new Set(pids.values()).size, 2, 'both API processes took sign-ups');
    const created = statuses.filter((x) => x === 200).length;
    assert.is(created + statuses.filter((x) => x === 429).length, ids.length, JSON.stringify(statuses));
    // Each process's own burst is 2: at most 4 in all (each process alone would have let 4 through, 8 in all).
    assert.ok(created <= 4 && created >= 2, `${created} sign-ups through a service-wide burst of 4: ${JSON.stringify(statuses)}`);
    s.child.kill('SIGTERM');
    assert.is((await s.exited).code, 0, s.output().slice(-3000));
  } finally {
    await killCluster(s);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
