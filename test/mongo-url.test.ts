/**
 * MONGODB_URL: MongoDB connection strings are not WHATWG URLs (a replica set lists several
 * hosts), so config.ts and the adapter read them with src/adapters/mongo-url.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { MongoUrlError, parseMongoUrl } from '../src/adapters/mongo-url.js';

test('multi-host, SRV, credential, IPv6 and socket connection strings are accepted', () => {
  const ok: Array<[string, { srv: boolean; hosts: string[]; dbName: string | null }]> = [
    ['mongodb://h1,h2/db?replicaSet=rs0', { srv: false, hosts: ['h1', 'h2'], dbName: 'db' }],
    ['mongodb://mongo-0.mongo:27017,mongo-1.mongo:27017,mongo-2.mongo:27017/collab?replicaSet=rs0&w=majority', { srv: false, hosts: ['mongo-0.mongo:27017', 'mongo-1.mongo:27017', 'mongo-2.mongo:27017'], dbName: 'collab' }],
    ['mongodb://app:s%40cr%3At@db1,db2:27018/tenant?authSource=admin', { srv: false, hosts: ['db1', 'db2:27018'], dbName: 'tenant' }],
    ['mongodb+srv://app:pw@cluster0.example.net/collab?retryWrites=true', { srv: true, hosts: ['cluster0.example.net'], dbName: 'collab' }],
    ['mongodb://[::1]:27017,[fd00::2]:27018/?replicaSet=rs0', { srv: false, hosts: ['[::1]:27017', '[fd00::2]:27018'], dbName: null }],
    ['mongodb://%2Ftmp%2Fmongodb-27017.sock/collab', { srv: false, hosts: ['%2Ftmp%2Fmongodb-27017.sock'], dbName: 'collab' }],
    ['mongodb://localhost:27017', { srv: false, hosts: ['localhost:27017'], dbName: null }],
    ['mongodb://localhost:27017/?directConnection=true', { srv: false, hosts: ['localhost:27017'], dbName: null }],
  ];
  for (const [url, want] of ok) {
    assert.equal(parseMongoUrl(url), want, url);
    assert.is(loadConfig({ MONGODB_URL: url }).mongodbUrl, url, url);
  }
});

test('malformed connection strings stop the start, naming MONGODB_URL, never echoing the password', () => {
  const bad: Array<[string, RegExp]> = [
    ['postgres://x', /mongodb:\/\/ or mongodb\+srv:\/\//],
    ['not a url', /mongodb:\/\/ or mongodb\+srv:\/\//],
    ['mongodb://', /names no host/],
    ['mongodb://h1,,h2/db', /empty host/],
    ['mongodb://h1:0/db', /invalid port "0"/],
    ['mongodb://h1:99999/db', /invalid port/],
    ['mongodb://h1:port/db', /invalid port/],
    ['mongodb://bad host/db', /invalid host/],
    ['mongodb+srv://a.example.net,b.example.net/db', /exactly one host/],
    ['mongodb+srv://cluster0.example.net:27017/db', /takes no port/],
    ['mongodb://user:pa:ss@h1/db', /unescaped ':'/],
    ['mongodb://user:s3cr3t-pw@h1/a.b', /invalid database name/],
    ['mongodb://user:s3cr3t-pw@h1/%E0%A4%A', /percent-encoded database name/],
    ['mongodb://[fe80::1%25eth0]:27017/db', /invalid IPv6 host/],
  ];
  // What only the driver knows: its options and their values (config.ts asks it too).
  const driverOnly: Array<[string, RegExp]> = [
    ['mongodb://user:s3cr3t-pw@h1/db?replicaSet=rs0&noSuchOption=1', /driver refuses it: option nosuchoption is not supported/],
    ['mongodb://user:s3cr3t-pw@h1/db?serverSelectionTimeoutMS=soon', /driver refuses it/],
  ];
  for (const [url] of driverOnly) parseMongoUrl(url);
  for (const [url, message] of [...bad, ...driverOnly]) {
    if (!driverOnly.some(([u]) => u === url)) assert.throws(() => parseMongoUrl(url), (e: unknown) => e instanceof MongoUrlError, url);
    try {
      loadConfig({ MONGODB_URL: url });
      assert.unreachable(`${url} was accepted`);
    } catch (e) {
      assert.instance(e, ConfigError, url);
      assert.is((e as ConfigError).variable, 'MONGODB_URL');
      assert.match((e as Error).message, /^MONGODB_URL: /);
      assert.match((e as Error).message, message, url);
      assert.not.match((e as Error).message, /s3cr3t/, 'the password is not repeated');
    }
  }
});

test.run();
