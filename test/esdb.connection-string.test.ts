/**
 * EVENTSTORE_URL in the grammar the client reads: one host, a cluster's seeds, discovery,
 * credentials and options pass; what the client cannot read, or would misread, stops the start
 * with a message naming the variable. Checked against the client's own parser.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRequire } from 'node:module';
import { checkEventStoreUrl, describeEventStoreUrl } from '../src/adapters/esdb-connection-string.js';
import { ConfigError, loadConfig } from '../src/config/config.js';

// The client's own parser (internal to it: reached by path, here only).
const clientRequire = createRequire(createRequire(import.meta.url).resolve('@eventstore/db-client'));
const { parseConnectionString } = clientRequire('./Client/parseConnectionString.js') as {
  parseConnectionString(s: string): { dnsDiscover: boolean; hosts: Array<{ address: string; port: number }> };
};

const failsOn = (value: string, pattern: RegExp) => {
  try {
    loadConfig({ EVENTSTORE_URL: value });
  } catch (e) {
    assert.instance(e, ConfigError, value);
    assert.is((e as ConfigError).variable, 'EVENTSTORE_URL');
    assert.match((e as Error).message, pattern);
    assert.not.match((e as Error).message, /s3cr3t/, 'never the password');
    return;
  }
  assert.unreachable(`${value} was accepted`);
};

test('one host, several hosts (a cluster\'s seeds), discovery and credentials pass, read as the client reads them', () => {
  const accepted = [
    'esdb://localhost:2113?tls=false',
    'esdb://localhost',
    'esdb://eventstore:2113/?tls=false',
    'esdb://a.example:2113,b.example:2113,c.example:2113?tls=false',
    'esdb://a.example:2113,b.example:2113,c.example:2113/?nodePreference=leader&tls=true',
    'esdb://admin:changeit@10.0.0.1:2113,10.0.0.2:2113',
    'esdb://admin:s3cr3t%40x@node1:2113?tls=false&keepAliveInterval=-1&defaultDeadline=5000',
    'esdb+discover://cluster.example.com:2113?maxDiscoverAttempts=5&discoveryInterval=100&gossipTimeout=5',
    'esdb://my_eventstore:2113?connectionName=api-1&throwOnAppendFailure=true&node-preference=Follower',
  ];
  for (const url of accepted) {
    const ours = checkEventStoreUrl(url);
    assert.not.ok('problem' in ours, `${url}: ${'problem' in ours ? ours.problem : ''}`);
    const client = parseConnectionString(url);
    if (!('problem' in ours)) {
      assert.equal(ours.hosts, client.hosts, `${url}: the same hosts as the client`);
      assert.is(ours.discover, client.dnsDiscover, url);
    }
    assert.is(loadConfig({ EVENTSTORE_URL: url }).eventStoreUrl, url);
  }
  assert.is(describeEventStoreUrl('esdb://admin:s3cr3t@a:2113,b:2114?tls=false'), 'a:2113, b:2114');
});

test('refused at start, naming the variable: what the client cannot read, and what it would misread', () => {
  // The client refuses these too.
  for (const url of ['http://localhost:2113', 'esdb://', 'esdb://?tls=false', 'esdb://host:port', 'esdb://host:2113?tls=maybe', 'esdb://host?nodePreference=fastest']) {
    assert.throws(() => parseConnectionString(url), undefined, `the client refuses ${url}`);
  }
  failsOn('http://localhost:2113', /esdb:\/\/ or esdb\+discover:\/\//);
  failsOn('esdb://', /starting with esdb:\/\//);
  failsOn('esdb://?tls=false', /names no host/);
  failsOn('esdb://host:port', /host:port/);
  failsOn('esdb://host:2113?tls=maybe', /tls must be true or false/);
  failsOn('esdb://host?nodePreference=fastest', /nodePreference/);
  // The client would throw at the first connection.
  failsOn('kurrentdb://localhost:2113?tls=false', /kurrentdb:\/\/ is not read by the EventStoreDB client .* esdb:\/\//);
  failsOn('kurrentdb+discover://cluster:2113', /esdb\+discover:\/\//);
  failsOn('esdb://host:2113?tls=true&tlsCAFile=/nonexistent/ca.crt', /tlsCAFile names .* does not exist/);
  failsOn('esdb://host:2113?userCertFile=/nonexistent/u.crt', /go together/);
  // The client would go on, not as meant.
  failsOn('esdb://admin:s3cr3t@host:2113?tsl=false', /unknown option "tsl"/);
  failsOn('esdb://host:2113?tlsVerifyCert=false', /tlsVerifyCert=false has no effect/);
  failsOn('esdb://host:2113?throwOnAppendFailure=false', /throwOnAppendFailure=false is not supported/);
  failsOn('esdb://host:2113/collab', /"host:2113\/collab"/);
  failsOn('esdb://[::1]:2113', /IPv6/);
  failsOn('esdb://host:70000', /host:70000/);
  failsOn('esdb://a:2113,,b:2113', /""/);
});

test.run();
