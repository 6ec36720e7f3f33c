/**
 * The MongoDB read store against a fake mongod on loopback (test/support/fake-mongod.ts): the
 * real driver, the real wire protocol, no server. It proves what the adapter does with the
 * driver (reconnecting, mapping errors, ending a checkpoint conflict at once, what it sends);
 * what MongoDB does with the data is the port contract's job against a real server
 * (test/read-store.mongo.test.ts, whenever MONGODB_URL is set).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRequire } from 'node:module';
import { MongoNetworkError, MongoNetworkTimeoutError, MongoOperationTimeoutError, MongoServerError, MongoServerSelectionError, MongoTopologyClosedError, MongoWriteConcernError } from 'mongodb';
import { MongoReadStore, translateMongoError } from '../src/adapters/mongo-read-store.js';
import { StoreUnavailableError } from '../src/adapters/unavailable.js';
import { CheckpointConflictError } from '../src/ports/read-store.js';
import { loadConfig } from '../src/config/config.js';
import { FakeMongod, closedPort, errorReply } from './support/fake-mongod.js';
import { rejects } from './support/assert.js';

/** Settles `p`, or fails the test once `ms` have passed (a correctness deadline, not a speed check). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer!: NodeJS.Timeout;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not settled within ${ms} ms`)), ms);
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

async function withFake<T>(fn: (f: FakeMongod) => Promise<T>, options?: ConstructorParameters<typeof FakeMongod>[0]): Promise<T> {
  const f = await FakeMongod.start(options);
  try {
    return await fn(f);
  } finally {
    await f.close();
  }
}

async function withStore<T>(url: string, fn: (s: MongoReadStore) => Promise<T>, options?: ConstructorParameters<typeof MongoReadStore>[1]): Promise<T> {
  const s = new MongoReadStore(url, options);
  try {
    return await fn(s);
  } finally {
    await s.close();
  }
}

const FAST = 'serverSelectionTimeoutMS=2000';

test('a failed first connection is recovered: the next call connects again', async () => {
  const port = await closedPort();
  const store = new MongoReadStore(`mongodb://127.0.0.1:${port}/collab?replicaSet=rs0&serverSelectionTimeoutMS=300`);
  let fake: FakeMongod | null = null;
  try {
    assert.instance(await rejects(store.get('things', 'a')), StoreUnavailableError, 'nothing listens yet: 503');
    assert.instance(await rejects(store.transaction((tx) => tx.upsert('things', { _id: 'a' }))), StoreUnavailableError);
    fake = new FakeMongod();
    await fake.listen(port);
    fake.collection('collab', 'rm_things').set('"a"', { _id: 'a', v: 1 });
    // Driver 7 keeps the closed topology of a failed connect: without a new client this
    // would be MongoTopologyClosedError on every call, for ever.
    assert.equal(await store.get('things', 'a'), { _id: 'a', v: 1 });
    await store.transaction((tx) => tx.upsert('things', { _id: 'b', v: 2 }));
    assert.equal(fake.collection('collab', 'rm_things').get('"b"'), { _id: 'b', v: 2 });
  } finally {
    await store.close();
    await fake?.close();
  }
});

test('concurrent calls during a failed connect all get 503, and share one attempt', async () => {
  const port = await closedPort();
  await withStore(`mongodb://127.0.0.1:${port}/collab?serverSelectionTimeoutMS=300`, async (store) => {
    const all = await Promise.allSettled([store.get('t', 'a'), store.count('t', {}), store.getCheckpoint('x')]);
    for (const r of all) {
      assert.is(r.status, 'rejected');
      assert.instance((r as PromiseRejectedResult).reason, StoreUnavailableError);
    }
  });
});

test('creating a checkpoint that exists ends at once in CheckpointConflictError (E11000 aborts the transaction)', async () => {
  await withFake(async (f) => {
    f.collection('collab', 'checkpoints').set('"webhooks"', { _id: 'webhooks', position: '0007', version: 1 });
    await withStore(f.url('collab', FAST), async (store) => {
      let calls = 0;
      const e = await within(
        rejects(
          store.transaction(async (tx) => {
            calls++;
            await tx.upsert('deliveries', { _id: 'd1' });
            await tx.setCheckpoint('webhooks', '0009', null);
          }),
        ),
        5000,
        'the conflicting transaction',
      );
      assert.instance(e, CheckpointConflictError);
      assert.is((e as CheckpointConflictError).actual, '0007', 'the winner is read outside the dead transaction');
      assert.is(calls, 1, 'withTransaction did not run the callback again');
      // Nothing ran in the aborted transaction after the duplicate key but the abort itself.
      const dup = f.commands.findIndex((c) => c.name === 'insert' && c.body.insert === 'checkpoints');
      const later = f.commands.slice(dup + 1).filter((c) => c.txn && c.txn === f.commands[dup]!.txn);
      assert.equal(later.map((c) => c.name), ['abortTransaction']);
      // The store's transaction queue is free again.
      await store.transaction((tx) => tx.setCheckpoint('webhooks', '0010', '0007'));
      assert.is(await store.getCheckpoint('webhooks'), '0010');
    });
  });
});

test('a compare-and-set to the same value still changes the stored document (so it takes the write lock)', async () => {
  await withFake(async (f) => {
    const cps = f.collection('collab', 'checkpoints');
    cps.set('"documents"', { _id: 'documents', position: '0005' });
    await withStore(f.url('collab', FAST), async (store) => {
      const before = JSON.stringify(cps.get('"documents"'));
      await store.transaction((tx) => tx.setCheckpoint('documents', '0005', '0005'));
      const after = cps.get('"documents"')!;
      assert.is(after.position, '0005');
      assert.is.not(JSON.stringify(after), before, 'the update is not a no-op');
      const again = JSON.stringify(after);
      await store.transaction((tx) => tx.setCheckpoint('documents', '0005', '0005'));
      assert.is.not(JSON.stringify(cps.get('"documents"')), again, 'every compare-and-set writes');
      // A new checkpoint and a move write the same field, so the shape stays one.
      await store.transaction((tx) => tx.setCheckpoint('fresh', '0001', null));
      await store.transaction((tx) => tx.setCheckpoint('fresh', '0002', '0001'));
      assert.is(cps.get('"fresh"')!.position, '0002');
      assert.is(await store.getCheckpoint('fresh'), '0002');
    });
  });
});

const UNAVAILABLE_CODES: Array<[number, string]> = [
  [91, 'ShutdownInProgress'],
  [189, 'PrimarySteppedDown'],
  [10107, 'NotWritablePrimary'],
  [11600, 'InterruptedAtShutdown'],
  [13436, 'NotPrimaryOrSecondary'],
  [11602, 'InterruptedDueToReplStateChange'],
  [13435, 'NotPrimaryNoSecondaryOk'],
  [10058, 'LegacyNotPrimary'],
  [6, 'HostUnreachable'],
  [7, 'HostNotFound'],
  [89, 'NetworkTimeout'],
  [9001, 'SocketException'],
  [262, 'ExceededTimeLimit'],
  [50, 'MaxTimeMSExpired'],
  [134, 'ReadConcernMajorityNotAvailableYet'],
];

test('failover, shutdown and timeout codes from the server answer 503 UNAVAILABLE', async () => {
  await withFake(async (f) => {
    let code: [number, string] = UNAVAILABLE_CODES[0]!;
    f.hooks.push((c) => (c.name === 'find' ? { reply: errorReply(code[0], code[1]) } : undefined));
    for (const c of UNAVAILABLE_CODES) {
      code = c;
      // A store per code: a state-change error marks the server unknown until the monitor looks again.
      await withStore(f.url('collab', `${FAST}&retryReads=false`), async (store) => {
        const e = await rejects(store.get('things', 'a'));
        assert.instance(e, StoreUnavailableError, `${c[1]} (${c[0]})`);
        assert.is((e as StoreUnavailableError).httpStatus, 503);
      });
    }
  });
});

test('errors about the request, not the store, are not turned into 503', async () => {
  await withFake(async (f) => {
    let code: [number, string] = [2, 'BadValue'];
    f.hooks.push((c) => (c.name === 'find' ? { reply: errorReply(code[0], code[1]) } : undefined));
    for (const c of [[2, 'BadValue'], [10334, 'BSONObjectTooLarge'], [13, 'Unauthorized']] as Array<[number, string]>) {
      code = c;
      await withStore(f.url('collab', FAST), async (store) => {
        const e = await rejects(store.get('things', 'a'));
        assert.not.instance(e, StoreUnavailableError, c[1]);
        assert.instance(e, MongoServerError);
        assert.is((e as MongoServerError).code, c[0]);
      });
    }
  });
});

test('a failover error ending a transaction answers 503', async () => {
  await withFake(async (f) => {
    f.hooks.push((c) => (c.name === 'update' && c.txn ? { reply: errorReply(91, 'ShutdownInProgress') } : undefined));
    await withStore(f.url('collab', FAST), async (store) => {
      assert.instance(await rejects(store.transaction((tx) => tx.upsert('things', { _id: 'a' }))), StoreUnavailableError);
    });
  });
});

test('a wait-queue timeout (every connection busy) answers 503', async () => {
  await withFake(async (f) => {
    f.hooks.push((c) => (c.name === 'find' && c.body.filter?._id === 'slow' ? { delayMs: 1500 } : undefined));
    await withStore(f.url('collab', `${FAST}&maxPoolSize=1&waitQueueTimeoutMS=200`), async (store) => {
      assert.is(await store.get('things', 'warm'), null, 'connected, one connection in the pool');
      const slow = store.get('things', 'slow');
      // The slow read holds the only connection before the second one asks for it.
      while (!f.named('find').some((c) => c.body.filter?._id === 'slow')) await new Promise((r) => setTimeout(r, 5));
      const e = await rejects(store.get('things', 'queued'));
      assert.instance(e, StoreUnavailableError);
      assert.is(((e as StoreUnavailableError).cause as Error).name, 'MongoWaitQueueTimeoutError');
      assert.is(await slow, null);
    });
  });
});

test('a socket timeout and a dropped connection answer 503', async () => {
  await withFake(async (f) => {
    f.hooks.push((c) => (c.name === 'find' && c.body.filter?._id === 'slow' ? { delayMs: 2000 } : undefined));
    f.hooks.push((c) => (c.name === 'find' && c.body.filter?._id === 'drop' ? { close: true } : undefined));
    await withStore(f.url('collab', `${FAST}&socketTimeoutMS=200&retryReads=false`), async (store) => {
      const e = await rejects(store.get('things', 'slow'));
      assert.instance(e, StoreUnavailableError);
      assert.instance((e as StoreUnavailableError).cause, MongoNetworkTimeoutError);
    });
    await withStore(f.url('collab', `${FAST}&retryReads=false`), async (store) => {
      const e = await rejects(store.get('things', 'drop'));
      assert.instance(e, StoreUnavailableError);
      assert.instance((e as StoreUnavailableError).cause, MongoNetworkError);
    });
  });
});

test('driver errors that say the store is out of reach map to 503; others pass through', () => {
  // The pool's errors are not exported by the driver; these are its own classes.
  const cmap = createRequire(import.meta.url)('mongodb/lib/cmap/errors.js');
  const pool = { address: '127.0.0.1:27017', serverError: new MongoNetworkError('reset') };
  const unavailable: unknown[] = [
    new cmap.PoolClearedError(pool),
    new cmap.PoolClearedOnNetworkError(pool),
    new cmap.WaitQueueTimeoutError('Timed out while checking out a connection from connection pool', pool.address),
    new cmap.PoolClosedError(pool),
    new MongoOperationTimeoutError('Timed out during operation'),
    new MongoServerSelectionError('Server selection timed out', { type: 'Unknown' } as never),
    new MongoTopologyClosedError(),
    new MongoNetworkTimeoutError('timed out'),
    new MongoServerError({ code: 10107, errmsg: 'not primary' }),
    new MongoServerError({ code: 112, errmsg: 'WriteConflict', errorLabels: ['TransientTransactionError'] }),
    new MongoWriteConcernError({ writeConcernError: { code: 91, errmsg: 'shutting down' } } as never),
  ];
  for (const e of unavailable) assert.instance(translateMongoError(e), StoreUnavailableError, (e as Error).name);
  const passed: unknown[] = [
    new MongoServerError({ code: 11000, errmsg: 'E11000 duplicate key' }),
    new MongoServerError({ code: 2, errmsg: 'BadValue' }),
    new Error('a bug'),
    new CheckpointConflictError('p', '1', '2'),
  ];
  for (const e of passed) assert.is(translateMongoError(e), e, String(e));
});

test('inside a transaction a dropped connection stays retryable: withTransaction runs it again', async () => {
  await withFake(async (f) => {
    let dropped = false;
    f.hooks.push((c) => (c.name === 'update' && c.txn && !dropped ? ((dropped = true), { close: true }) : undefined));
    await withStore(f.url('collab', FAST), async (store) => {
      let calls = 0;
      await store.transaction(async (tx) => {
        calls++;
        await tx.upsert('things', { _id: 'a', attempt: calls });
      });
      assert.ok(dropped);
      assert.is(calls, 2);
      assert.equal(f.collection('collab', 'rm_things').get('"a"'), { _id: 'a', attempt: 2 });
    });
  });
});

test('inside a transaction a failover error labelled transient is retried, not answered 503', async () => {
  await withFake(async (f) => {
    let failed = false;
    f.hooks.push((c) =>
      c.name === 'update' && c.txn && !failed ? ((failed = true), { reply: errorReply(10107, 'NotWritablePrimary', ['TransientTransactionError']) }) : undefined,
    );
    await withStore(f.url('collab', FAST), async (store) => {
      let calls = 0;
      let seen: unknown = null;
      await store.transaction(async (tx) => {
        calls++;
        try {
          await tx.upsert('things', { _id: 'a' });
        } catch (error) {
          // The callback sees the typed error; withTransaction still sees the driver's labels.
          seen = error;
          throw error;
        }
      });
      assert.is(calls, 2);
      assert.instance(seen, StoreUnavailableError);
    });
  });
});

test('multi-host URLs: accepted by the configuration, the database taken from the path', async () => {
  const dead = await closedPort();
  await withFake(
    async (f) => {
      const url = `mongodb://127.0.0.1:${dead},${f.address}/tenantdb?replicaSet=rs0&${FAST}`;
      assert.is(loadConfig({ MONGODB_URL: url }).mongodbUrl, url);
      await withStore(url, async (store) => {
        assert.is(await store.get('things', 'a'), null);
        assert.is(f.named('find')[0]!.db, 'tenantdb');
      });
      const noDb = `mongodb://127.0.0.1:${dead},${f.address}/?replicaSet=rs0&${FAST}`;
      await withStore(noDb, async (store) => {
        await store.get('things', 'b');
        assert.is(f.named('find').at(-1)!.db, 'collab', 'no database in the URL: collab');
      });
    },
    { members: [`127.0.0.1:${dead}`] },
  );
});

test('TTL collections get their TTL index on the first ensureIndexes, whatever it lists', async () => {
  await withFake(async (f) => {
    await withStore(
      f.url('collab', FAST),
      async (store) => {
        await store.ensureIndexes([{ collection: 'things', fields: ['tenant'] }]);
        for (const c of ['presence', 'idempotency_keys']) {
          const ix = f.indexes.get(`collab.rm_${c}`) ?? [];
          assert.ok(
            ix.some((i) => JSON.stringify(i.key) === '{"_ttl":1}' && i.expireAfterSeconds === 0),
            `${c}: ${JSON.stringify(ix)}`,
          );
        }
        await store.transaction((tx) => tx.upsert('idempotency_keys', { _id: 'k', expiresAt: 1_700_000_000_000 }));
        const d = f.collection('collab', 'rm_idempotency_keys').get('"k"')!;
        assert.instance(d._ttl, Date);
        assert.is((d._ttl as Date).getTime(), 1_700_000_000_000);
      },
      { ttlCollections: ['presence', 'idempotency_keys'] },
    );
  });
});

test('undefined is never stored as null, and never widens a query', async () => {
  await withFake(async (f) => {
    const things = f.collection('collab', 'rm_things');
    things.set('"keep"', { _id: 'keep', tenant: 'A', a: 1 });
    await withStore(f.url('collab', FAST), async (store) => {
      await store.transaction((tx) => tx.upsert('things', { _id: 'u', tenant: 'A', gone: undefined, list: [1, undefined], nested: { x: undefined } }));
      assert.equal(things.get('"u"'), { _id: 'u', tenant: 'A', list: [1, null], nested: {} }, 'as JSON.stringify (the embedded store) stores it');
      await store.transaction((tx) => tx.patch('things', 'keep', { a: undefined, b: 2 }));
      assert.equal(things.get('"keep"'), { _id: 'keep', tenant: 'A', b: 2 }, 'patching undefined removes the field, as in the embedded store');
      // An undefined value must not drop the condition (that would match every document).
      assert.equal(await store.find('things', { tenant: undefined as never }), []);
      assert.is(await store.get('things', undefined as never), null);
      assert.equal(await store.getMany('things', [undefined as never]), []);
      assert.not.ok(await store.transaction((tx) => tx.delete('things', undefined as never)));
      assert.not.ok(await store.transaction((tx) => tx.patch('things', undefined as never, { a: 1 })));
      assert.is(await store.transaction((tx) => tx.deleteMany('things', { tenant: undefined as never })), 0);
      await rejects(store.transaction((tx) => tx.upsert('things', { _id: undefined as never, tenant: 'X' })), /_id/);
      assert.is(things.size, 2, 'nothing deleted or replaced');
      assert.equal(things.get('"keep"'), { _id: 'keep', tenant: 'A', b: 2 });
    });
  });
});

test('a standalone server: no transactions, checkpoint conflicts still typed', async () => {
  await withFake(
    async (f) => {
      f.collection('collab', 'checkpoints').set('"p"', { _id: 'p', position: '0003' });
      await withStore(f.url('collab', FAST), async (store) => {
        const e = await rejects(store.transaction((tx) => tx.setCheckpoint('p', '0004', null)));
        assert.instance(e, CheckpointConflictError);
        assert.is((e as CheckpointConflictError).actual, '0003');
        await store.transaction((tx) => tx.setCheckpoint('p', '0004', '0003'));
        assert.is(await store.getCheckpoint('p'), '0004');
        assert.not.ok(f.commands.some((c) => c.txn), 'no transaction was started');
      });
    },
    { replicaSet: null },
  );
});

test.run();
