/**
 * EVENTSTORE_URL, checked at start in the grammar @eventstore/db-client 6 parses (its
 * `parseConnectionString`), not as a WHATWG URL: `new URL()` refuses a cluster's seed list
 * (`esdb://a:2113,b:2113,c:2113`), and it accepts schemes the client does not read
 * (`kurrentdb://` passed the old check, then the client threw at the first connection).
 *
 *   esdb://[user:password@]host[:port][,host[:port]...][/][?key=value[&key=value...]]
 *   esdb+discover://...   (the first host is a DNS name to discover the cluster from)
 *
 * Stricter than the client where the client would go on with something the operator did not
 * mean: an unknown option (the client warns and ignores it), `tlsVerifyCert=false` (ignored by
 * this client, with a warning), `throwOnAppendFailure=false` (appends that lose a race would
 * report success: the adapter relies on the throw), a path after the hosts, IPv6 literals (the
 * client splits hosts on `:`), a missing certificate file (the client throws when it connects).
 * test/esdb.client.test.ts checks this against the client's own parser.
 */
import fs from 'node:fs';
import path from 'node:path';

const flat = (key: string) => key.trim().toLowerCase().replace(/[_-]/g, '');

type Kind = 'boolean' | 'integer' | 'text' | 'file' | 'nodePreference';
/** The client's options (flat-cased, as it matches them), with the smallest value it accepts. */
const OPTIONS: Record<string, { name: string; kind: Kind; min?: number }> = {
  tls: { name: 'tls', kind: 'boolean' },
  tlsverifycert: { name: 'tlsVerifyCert', kind: 'boolean' },
  tlscafile: { name: 'tlsCAFile', kind: 'file' },
  usercertfile: { name: 'userCertFile', kind: 'file' },
  userkeyfile: { name: 'userKeyFile', kind: 'file' },
  throwonappendfailure: { name: 'throwOnAppendFailure', kind: 'boolean' },
  connectionname: { name: 'connectionName', kind: 'text' },
  nodepreference: { name: 'nodePreference', kind: 'nodePreference' },
  maxdiscoverattempts: { name: 'maxDiscoverAttempts', kind: 'integer', min: 1 },
  discoveryinterval: { name: 'discoveryInterval', kind: 'integer', min: 0 },
  gossiptimeout: { name: 'gossipTimeout', kind: 'integer', min: 1 },
  defaultdeadline: { name: 'defaultDeadline', kind: 'integer', min: 1 },
  keepaliveinterval: { name: 'keepAliveInterval', kind: 'integer', min: -1 },
  keepalivetimeout: { name: 'keepAliveTimeout', kind: 'integer', min: -1 },
};
const NODE_PREFERENCES = ['leader', 'follower', 'random', 'readonlyreplica'];

const decodes = (s: string) => {
  try {
    decodeURIComponent(s);
    return true;
  } catch {
    return false;
  }
};

export interface EventStoreAddress {
  discover: boolean;
  hosts: Array<{ address: string; port: number }>;
}

/**
 * The hosts of a valid EVENTSTORE_URL, or the problem with it (a sentence naming the part at
 * fault; never the password).
 */
export function checkEventStoreUrl(raw: string, cwd = process.cwd()): EventStoreAddress | { problem: string } {
  const s = raw.trim().replace(/\/+$/, '');
  const scheme = /^([^:/?#@]+):\/\//.exec(s)?.[1];
  if (scheme === undefined) return { problem: 'must be a connection string starting with esdb:// or esdb+discover://' };
  if (/^(kurrentdb|kdb|kurrent)(\+discover)?$/i.test(scheme)) {
    return {
      problem: `${scheme}:// is not read by the EventStoreDB client this service uses (@eventstore/db-client 6, which parses only esdb:// and esdb+discover://): write the same address with esdb:// (esdb+discover:// for ${scheme}+discover://)`,
    };
  }
  if (scheme !== 'esdb' && scheme !== 'esdb+discover') return { problem: `must use esdb:// or esdb+discover://, got ${scheme}://` };
  let rest = s.slice(scheme.length + 3);

  // Credentials, as the client reads them: everything up to the first `:` is the user, up to
  // the next `@` the password.
  const credentials = /^([^:]+):([^@]+)@/.exec(rest);
  if (credentials) {
    if (!decodes(credentials[1]!) || !decodes(credentials[2]!)) return { problem: 'has a user name or password with a broken %-escape' };
    rest = rest.slice(credentials[0].length);
  }

  const q = rest.indexOf('?');
  const hostPart = (q === -1 ? rest : rest.slice(0, q)).replace(/\/$/, '');
  const query = q === -1 ? '' : rest.slice(q + 1);
  if (hostPart === '') return { problem: 'names no host (esdb://host:2113)' };
  const hosts: EventStoreAddress['hosts'] = [];
  for (const entry of hostPart.split(',')) {
    const m = /^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?::(\d{1,5}))?$/.exec(entry.trim());
    const port = m?.[2] === undefined ? 2113 : Number(m[2]);
    if (!m || port < 1 || port > 65535) {
      return { problem: `has ${JSON.stringify(entry)} where a host or host:port is expected (hosts are separated by commas; a path or an IPv6 literal is not understood by the client)` };
    }
    hosts.push({ address: m[1]!, port });
  }

  const values = new Map<string, string>();
  if (q !== -1) {
    for (const pair of query.split('&')) {
      const eq = pair.indexOf('=');
      const key = eq <= 0 ? '' : pair.slice(0, eq);
      const value = eq <= 0 ? '' : pair.slice(eq + 1).trim();
      if (key === '' || value === '' || value.includes('?')) return { problem: `has ${JSON.stringify(pair)} where key=value is expected after ?` };
      const option = OPTIONS[flat(key)];
      if (!option) {
        return { problem: `has the unknown option ${JSON.stringify(key)} (known: ${Object.values(OPTIONS).map((o) => o.name).join(', ')})` };
      }
      const bad = (expected: string) => ({ problem: `option ${option.name} must be ${expected}, got ${JSON.stringify(value)}` });
      switch (option.kind) {
        case 'boolean':
          if (value !== 'true' && value !== 'false') return bad('true or false');
          break;
        case 'integer':
          if (!/^-?\d{1,9}$/.test(value) || Number(value) < option.min!) return bad(`a whole number of at least ${option.min}`);
          break;
        case 'nodePreference':
          if (!NODE_PREFERENCES.includes(flat(value))) return bad('leader, follower, random or readOnlyReplica');
          break;
        case 'file':
        case 'text':
          if (!decodes(value)) return bad('%-escaped text');
          break;
      }
      values.set(option.name, value);
    }
  }
  if (values.get('throwOnAppendFailure') === 'false') {
    return { problem: 'option throwOnAppendFailure=false is not supported: the service relies on an append that lost a race failing' };
  }
  if (values.get('tlsVerifyCert') === 'false') {
    return { problem: 'option tlsVerifyCert=false has no effect in this client (it verifies anyway): give the CA certificate with tlsCAFile' };
  }
  if (values.has('userCertFile') !== values.has('userKeyFile')) return { problem: 'options userCertFile and userKeyFile go together' };
  const files = ['userCertFile', 'userKeyFile', ...(values.get('tls') === 'false' ? [] : ['tlsCAFile'])];
  for (const name of files) {
    const v = values.get(name);
    if (v === undefined) continue;
    const file = path.resolve(cwd, decodeURIComponent(v));
    if (!fs.existsSync(file)) return { problem: `option ${name} names ${JSON.stringify(file)}, which does not exist` };
  }
  return { discover: scheme === 'esdb+discover', hosts };
}

/** `host:port, host:port`: for logs and test names (no credentials). */
export function describeEventStoreUrl(raw: string): string {
  const r = checkEventStoreUrl(raw);
  return 'problem' in r ? '(invalid EVENTSTORE_URL)' : r.hosts.map((h) => `${h.address}:${h.port}`).join(', ');
}
