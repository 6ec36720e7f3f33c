/**
 * MongoDB connection strings, read without the driver (config.ts checks MONGODB_URL at start,
 * and the adapter takes the database name from it). They are not WHATWG URLs: a replica set is
 * written with several hosts, `mongodb://h1:27017,h2:27017/collab?replicaSet=rs0`, which
 * `new URL()` refuses. So the host list is split off first (as the driver's own parser does)
 * and only the rest, behind a placeholder host, goes through `new URL()`.
 *
 * Example: `mongodb://app:s%40cret@db1,db2:27018/tenant?replicaSet=rs0` gives
 * `{ srv: false, hosts: ['db1', 'db2:27018'], dbName: 'tenant' }`.
 */

export interface MongoUrl {
  srv: boolean;
  hosts: string[];
  /** The path's database name, decoded; null when the URL names none. */
  dbName: string | null;
}

export class MongoUrlError extends Error {
  override name = 'MongoUrlError';
}

// scheme :// [userinfo @] hosts rest — userinfo may not hold an unescaped '@', '/' or ':' beyond the first.
const SHAPE = /^(mongodb(?:\+srv)?):\/\/(?:([^@/?#]*)@)?([^/?#@]*)(.*)$/i;
const NAME_HOST = /^[A-Za-z0-9._-]{1,253}$/;
// No zone ids (`[fe80::1%25eth0]`): the driver refuses them.
const IPV6_HOST = /^\[[0-9A-Fa-f:.]{2,45}\]$/;
/** A Unix socket path, percent-encoded as the driver wants it: `%2Ftmp%2Fmongodb-27017.sock`. */
const SOCKET_HOST = /^%2F[A-Za-z0-9._~%-]+\.sock$/i;
// Characters that cannot appear unescaped in a database name (the driver's and MongoDB's rules).
const BAD_DB = /[/\\. "$*<>:|?\u0000]/;

function checkHost(host: string, srv: boolean): void {
  if (host === '') throw new MongoUrlError('has an empty host in its host list');
  if (SOCKET_HOST.test(host) && !srv) return;
  let name = host;
  let port: string | null = null;
  const v6 = /^(\[[^\]]*\])(?::(.*))?$/.exec(host);
  if (v6) {
    name = v6[1]!;
    port = v6[2] ?? null;
    if (!IPV6_HOST.test(name)) throw new MongoUrlError(`has an invalid IPv6 host ${JSON.stringify(name)}`);
  } else {
    const i = host.lastIndexOf(':');
    if (i >= 0) {
      name = host.slice(0, i);
      port = host.slice(i + 1);
    }
    if (!NAME_HOST.test(name)) throw new MongoUrlError(`has an invalid host ${JSON.stringify(name)}`);
  }
  if (port !== null) {
    if (srv) throw new MongoUrlError('is mongodb+srv:// and so takes no port (the SRV record gives it)');
    if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
      throw new MongoUrlError(`has an invalid port ${JSON.stringify(port)} (1-65535)`);
    }
  }
}

/** Parses a `mongodb://` or `mongodb+srv://` connection string; throws MongoUrlError naming the problem (never echoing credentials). */
export function parseMongoUrl(raw: string): MongoUrl {
  const m = SHAPE.exec(raw.trim());
  if (!m) throw new MongoUrlError('must be a mongodb:// or mongodb+srv:// connection string (mongodb://host:27017/collab?replicaSet=rs0)');
  const [, scheme, userinfo, hostList, rest] = m as unknown as [string, string, string | undefined, string, string];
  const srv = scheme.toLowerCase() === 'mongodb+srv';
  if (userinfo !== undefined) {
    if (userinfo === '' || userinfo.startsWith(':')) throw new MongoUrlError('has an empty user name before @');
    try {
      for (const part of userinfo.split(':')) decodeURIComponent(part);
    } catch {
      throw new MongoUrlError('has a badly percent-encoded user name or password');
    }
    if (userinfo.split(':').length > 2) throw new MongoUrlError("has an unescaped ':' in its password (write it as %3A)");
  }
  if (hostList === '') throw new MongoUrlError('names no host');
  const hosts = hostList.split(',');
  for (const h of hosts) checkHost(h, srv);
  if (srv && hosts.length !== 1) throw new MongoUrlError('is mongodb+srv:// and so names exactly one host (the SRV name)');
  if (rest !== '' && !rest.startsWith('/') && !rest.startsWith('?')) throw new MongoUrlError('must have "/" between the hosts and the database name');
  let pathname: string;
  try {
    pathname = new URL(`mongodb://placeholder${rest}`).pathname;
  } catch {
    throw new MongoUrlError('has an invalid path or query after the hosts');
  }
  let dbName: string | null = null;
  if (pathname !== '' && pathname !== '/') {
    try {
      dbName = decodeURIComponent(pathname.slice(1));
    } catch {
      throw new MongoUrlError('has a badly percent-encoded database name');
    }
    if (dbName.length > 63 || BAD_DB.test(dbName)) throw new MongoUrlError(`has an invalid database name ${JSON.stringify(dbName)}`);
  }
  return { srv, hosts, dbName };
}

/**
 * `text` (an error message) without the connection string's password, encoded or decoded:
 * the driver's messages may quote parts of the string.
 */
export function redactMongoPassword(text: string, raw: string): string {
  const m = SHAPE.exec(raw.trim());
  const password = m?.[2]?.includes(':') ? m[2].slice(m[2].indexOf(':') + 1) : '';
  if (!password) return text;
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // Left encoded: the encoded form is removed below anyway.
  }
  return text.split(password).join('***').split(decoded).join('***');
}
