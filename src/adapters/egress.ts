/**
 * Where webhooks may go (docs/webhooks.md, Egress policy). A tenant chooses its webhook URLs;
 * without a policy, `http://127.1:8080/...` or `http://169.254.169.254/...` would make this
 * service POST into the operator's own network (its API, a database's HTTP port, the cloud
 * metadata service), and the delivery log's errors and durations would map that network.
 *
 * Two checks, one policy (`EgressPolicy`):
 *
 * - **At configuration time**, a URL whose host is an IP literal (in any spelling: the WHATWG
 *   URL parser turns `2130706433`, `127.1`, `0x7f000001`, `0177.0.0.1`, `%31%32%37.0.0.1` into
 *   `127.0.0.1`, and compresses IPv6) or a `localhost` name is refused when the policy refuses
 *   it (`literalRefusal`). Names are not resolved then: DNS answers change, and resolving on
 *   request would hand tenants a resolver of the operator's network.
 * - **At send time** (`postWebhook`), the host is resolved here, every address of the answer
 *   is checked, and the connection is made only to those checked addresses: the `lookup`
 *   given to http(s).request hands them back instead of asking DNS again. No second
 *   resolution, so no window for DNS rebinding (a name answering 8.8.8.8 to the check and
 *   127.0.0.1 to the connect). The Host header and TLS SNI stay the URL's hostname. If any
 *   address of the answer is refused the attempt is blocked, even if another is allowed: a
 *   name mixing public and private addresses is misconfigured or hostile, and "every address
 *   must pass" is the rule that is easiest to state and check.
 *
 * IPv6 spellings of IPv4 addresses are judged by the IPv4 address they carry: IPv4-mapped
 * `::ffff:127.0.0.1` (which is how a dual-stack socket reaches 127.0.0.1), IPv4-translated
 * `::ffff:0:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d` (the NAT64
 * gateway connects to a.b.c.d in its own network) and 6to4 `2002:aabb:ccdd::/48`.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { LookupAddress } from 'node:dns';

/** What an attempt records when the policy stops it: no address, no timing (no scanning). */
export const BLOCKED = 'blocked by the destination policy';

export class DestinationBlockedError extends Error {
  constructor() {
    super(BLOCKED);
    this.name = 'DestinationBlockedError';
  }
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a hostname to every address it has (the sender's DNS; tests inject their own). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dns.promises.lookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

interface Range {
  list: net.BlockList;
  what: string;
}

function range(address: string, prefix: number, type: 'ipv4' | 'ipv6', what: string): Range {
  const list = new net.BlockList();
  list.addSubnet(address, prefix, type);
  return { list, what };
}

/** IPv4 destinations refused by default (IANA special-purpose registry, the non-global ones). */
const REFUSED_V4: Range[] = [
  range('0.0.0.0', 8, 'ipv4', 'an unspecified ("this network") address'),
  range('10.0.0.0', 8, 'ipv4', 'a private address'),
  range('100.64.0.0', 10, 'ipv4', 'a shared (CGNAT) address'),
  range('127.0.0.0', 8, 'ipv4', 'a loopback address'),
  range('169.254.0.0', 16, 'ipv4', 'a link-local address'),
  range('172.16.0.0', 12, 'ipv4', 'a private address'),
  range('192.0.0.0', 24, 'ipv4', 'an IETF protocol assignment address'),
  range('192.0.2.0', 24, 'ipv4', 'a documentation address'),
  range('192.88.99.0', 24, 'ipv4', 'a 6to4 relay address'),
  range('192.168.0.0', 16, 'ipv4', 'a private address'),
  range('198.18.0.0', 15, 'ipv4', 'a benchmarking address'),
  range('198.51.100.0', 24, 'ipv4', 'a documentation address'),
  range('203.0.113.0', 24, 'ipv4', 'a documentation address'),
  range('224.0.0.0', 4, 'ipv4', 'a multicast address'),
  range('240.0.0.0', 4, 'ipv4', 'a reserved or broadcast address'),
];

/**
 * IPv6 destinations refused by default, before the IPv4 an address may carry is looked at.
 * Teredo (2001::/32) carries an obfuscated IPv4 client address and is refused whole.
 */
const REFUSED_V6: Range[] = [
  range('::', 128, 'ipv6', 'the unspecified address'),
  range('::1', 128, 'ipv6', 'a loopback address'),
  range('100::', 64, 'ipv6', 'a discard-only address'),
  range('2001::', 32, 'ipv6', 'a Teredo address'),
  range('2001:db8::', 32, 'ipv6', 'a documentation address'),
  range('64:ff9b:1::', 48, 'ipv6', 'a local-use NAT64 address'),
  range('fc00::', 7, 'ipv6', 'a unique-local address'),
  range('fe80::', 10, 'ipv6', 'a link-local address'),
  range('fec0::', 10, 'ipv6', 'a site-local address'),
  range('ff00::', 8, 'ipv6', 'a multicast address'),
];

/** What a `localhost` name stands for (RFC 6761): never asked of DNS, checked as both. */
const LOOPBACK_NAME_ADDRESSES: ResolvedAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

/** `localhost`, `LOCALHOST.`, `hooks.localhost`: names RFC 6761 reserves for loopback. */
function isLocalhostName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

/** A URL's hostname without IPv6 brackets: `[::1]` -> `::1`. */
function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/** The eight 16-bit words of an IPv6 address that net.isIP accepts (zone already removed). */
function words(ip: string): number[] {
  let s = ip;
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(':');
  if (s.indexOf('.', lastColon) !== -1) {
    const [a, b, c, d] = s.slice(lastColon + 1).split('.').map(Number) as [number, number, number, number];
    tail = [(a << 8) | b, (c << 8) | d];
    s = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = rest ? rest.split(':') : [];
  const fill = rest === undefined ? 0 : 8 - h.length - t.length;
  const w = [...h, ...Array<string>(fill).fill('0'), ...t].map((x) => parseInt(x, 16));
  if (tail.length) w.splice(6, 2, ...tail);
  return w;
}

const dotted = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/** The IPv4 address an IPv6 address carries, and how; null for a plain IPv6 address. */
export function embeddedIPv4(ip: string): { v4: string; form: string } | null {
  const w = words(ip);
  const zero = (from: number, to: number) => w.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && w[5] === 0xffff) return { v4: dotted(w[6]!, w[7]!), form: 'an IPv4-mapped' };
  if (zero(0, 4) && w[4] === 0xffff && w[5] === 0) return { v4: dotted(w[6]!, w[7]!), form: 'an IPv4-translated' };
  if (zero(0, 6)) return { v4: dotted(w[6]!, w[7]!), form: 'an IPv4-compatible' };
  if (w[0] === 0x64 && w[1] === 0xff9b && zero(2, 6)) return { v4: dotted(w[6]!, w[7]!), form: 'a NAT64' };
  if (w[0] === 0x2002) return { v4: dotted(w[1]!, w[2]!), form: 'a 6to4' };
  return null;
}

export interface EgressOptions {
  /** Addresses and CIDRs allowed although a refused range holds them (WEBHOOK_ALLOWED_CIDRS). */
  allowedCidrs?: readonly string[];
  /** Allow every destination: a fully internal deployment (WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate?: boolean;
}

/**
 * Parses one WEBHOOK_ALLOWED_CIDRS entry (`10.0.0.0/8`, `127.0.0.1`, `fd00::/8`, `::1`);
 * returns null when it is not one.
 */
export function parseCidr(entry: string): { address: string; prefix: number; type: 'ipv4' | 'ipv6' } | null {
  const m = /^([^/]+?)(?:\/(\d{1,3}))?$/.exec(entry.trim());
  if (!m) return null;
  const address = bareHost(m[1]!);
  const family = address.includes('%') ? 0 : net.isIP(address);
  if (family === 0) return null;
  const max = family === 4 ? 32 : 128;
  const prefix = m[2] === undefined ? max : Number(m[2]);
  if (prefix > max) return null;
  return { address, prefix, type: family === 4 ? 'ipv4' : 'ipv6' };
}

/** The policy WEBHOOK_ALLOWED_CIDRS and WEBHOOK_ALLOW_PRIVATE describe. */
export function egressPolicyOf(config: { webhookAllowedCidrs: string[]; webhookAllowPrivate: boolean }): EgressPolicy {
  return new EgressPolicy({ allowedCidrs: config.webhookAllowedCidrs, allowPrivate: config.webhookAllowPrivate });
}

export class EgressPolicy {
  private readonly allowed = new net.BlockList();
  private readonly allowAll: boolean;

  constructor(options: EgressOptions = {}) {
    this.allowAll = options.allowPrivate === true;
    for (const entry of options.allowedCidrs ?? []) {
      const c = parseCidr(entry);
      if (!c) throw new Error(`not an IP address or CIDR: ${JSON.stringify(entry)}`);
      this.allowed.addSubnet(c.address, c.prefix, c.type);
    }
  }

  /**
   * Null when `ip` may be connected to; otherwise what it is ("a loopback address", "an
   * IPv4-mapped form of 10.0.0.1, a private address"). Anything that is not an IP is refused.
   */
  refusal(ip: string): string | null {
    if (this.allowAll) return null;
    // A scoped address (fe80::1%eth0) is judged without its zone: it is link-local anyway.
    const address = ip.replace(/%.*$/, '');
    const family = net.isIP(address);
    if (family === 4) {
      if (this.allowed.check(address, 'ipv4')) return null;
      return REFUSED_V4.find((r) => r.list.check(address, 'ipv4'))?.what ?? null;
    }
    if (family !== 6) return 'not an IP address';
    if (this.allowed.check(address, 'ipv6')) return null;
    const own = REFUSED_V6.find((r) => r.list.check(address, 'ipv6'));
    if (own) return own.what;
    const carried = embeddedIPv4(address);
    if (!carried) return null;
    const inner = this.refusal(carried.v4);
    return inner ? `${carried.form} form of ${carried.v4}, ${inner}` : null;
  }

  /**
   * For configuration time: why `url`'s host is refused when it is an IP literal or a
   * `localhost` name, else null (a name is checked when it is resolved, at send time; a URL
   * that does not parse is left to the URL validation).
   */
  literalRefusal(url: string): string | null {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return null;
    }
    const host = bareHost(u.hostname);
    if (net.isIP(host)) {
      const why = this.refusal(host);
      return why ? `${host} is ${why}` : null;
    }
    if (isLocalhostName(host)) {
      for (const a of LOOPBACK_NAME_ADDRESSES) {
        const why = this.refusal(a.address);
        if (why) return `${host} is a loopback name (${a.address} is ${why})`;
      }
    }
    return null;
  }

  /** The addresses `host` (a URL's hostname) stands for, each checked; throws DestinationBlockedError. */
  async destinations(host: string, resolve: Resolver, signal: AbortSignal): Promise<ResolvedAddress[]> {
    const bare = bareHost(host);
    const family = net.isIP(bare);
    const addresses: ResolvedAddress[] = family
      ? [{ address: bare, family: family as 4 | 6 }]
      : isLocalhostName(bare)
        ? LOOPBACK_NAME_ADDRESSES
        : await abortable(resolve(bare), signal);
    if (addresses.length === 0) throw Object.assign(new Error(`no address for ${bare}`), { code: 'ENOTFOUND' });
    if (addresses.some((a) => this.refusal(a.address) !== null)) throw new DestinationBlockedError();
    return addresses;
  }
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * A `lookup` for http(s).request / net.connect that answers only with `addresses`, checked
 * beforehand: the socket connects to exactly what the policy allowed. Node asks with
 * `all: true` (it then tries each address in turn) or for one address, perhaps of one family.
 */
function pinnedLookup(hostname: string, addresses: readonly ResolvedAddress[]): net.LookupFunction {
  return ((name: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
    const family = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
    const list = addresses.filter((a) => family === 0 || a.family === family);
    process.nextTick(() => {
      // Only the checked host is ever looked up through this function.
      if (name !== hostname || list.length === 0) {
        callback(Object.assign(new Error(`no checked address for ${name}`), { code: 'ENOTFOUND' }));
      } else if (options.all) {
        callback(null, list.map((a): LookupAddress => ({ address: a.address, family: a.family })));
      } else {
        callback(null, list[0]!.address, list[0]!.family);
      }
    });
  }) as unknown as net.LookupFunction;
}

export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Aborts the attempt: resolution, connection and waiting for the answer. */
  signal: AbortSignal;
}

/**
 * POSTs `body` to `url` if the policy allows every address the host stands for; resolves to
 * the answer's status once its headers arrive (the body is discarded, redirects are not
 * followed: a 3xx is just a status). Throws DestinationBlockedError when the policy refuses,
 * or the resolution or connection error (`code` ENOTFOUND, ECONNREFUSED...) otherwise.
 * Every attempt uses a new connection to addresses checked for it (no pooled socket).
 */
export async function postWebhook(req: WebhookRequest, policy: EgressPolicy, resolve: Resolver): Promise<number> {
  const u = new URL(req.url);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`unsupported protocol ${u.protocol}`);
  // http.request would turn URL credentials into an Authorization header of their own.
  if (u.username || u.password) throw new Error('the URL includes credentials; not sent');
  const addresses = await policy.destinations(u.hostname, resolve, req.signal);
  const client = u.protocol === 'https:' ? https : http;
  return new Promise<number>((done, fail) => {
    const r = client.request(
      u,
      {
        method: 'POST',
        headers: { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) },
        agent: false,
        lookup: pinnedLookup(bareHost(u.hostname), addresses),
        signal: req.signal,
      },
      (res) => {
        done(res.statusCode ?? 0);
        res.destroy();
      },
    );
    r.on('error', fail);
    r.end(req.body);
  });
}
