/**
 * An API key's allowed domains: the origins whose browser pages may call the user-token
 * routes with a user token (src/http/cors.ts). What an entry is, how it is written down and
 * which origins it admits; pure, shared by the workspace decider, the projection, the routes
 * and the CORS check.
 *
 * An entry is `host` or `host:port`, stored lower case as the hosted API stores them: the
 * scheme and a leading `www.` stripped (`"https://www.Example.com/"` is `example.com`).
 * `host` is one of
 * - a domain name of at least two labels (`example.com`, `app.example.com`), ASCII only
 *   (an internationalized name in its `xn--` form, as browsers send it in `Origin`);
 * - a wildcard `*.` before such a name (`*.example.com`): every subdomain, at any depth,
 *   not the name itself;
 * - `localhost` or an IPv4 address (`127.0.0.1`).
 * An entry without a port admits every port; with one, only that port (a browser leaves the
 * default port out of `Origin`: `example.com:443` admits `https://example.com`).
 *
 * Schemes: stored entries carry none (the hosted API's form), and an entry admits `https`
 * origins only, except on the loopback hosts `localhost` and `127.0.0.1`, which admit `http`
 * too (local development). So `http://example.com` is refused when added: it could never
 * match, and a page on plain http can be rewritten by anyone on its network path.
 *
 * `example.com` also admits `www.example.com`: the hosted API strips `www.` when it stores
 * an entry, so the two are one entry there.
 */

/** Entries per call of domains/add and domains/delete (the hosted API's documented maximum). */
export const MAX_DOMAINS_PER_CALL = 100;
/** Entries one API key holds (decided in the workspace decider). */
export const MAX_DOMAINS_PER_KEY = 100;
/** An entry as sent, before normalization (a URL with scheme, `www.`, port and a slash fits). */
export const MAX_DOMAIN_INPUT = 300;
/**
 * Labels of the name under a wildcard (`*.a.b.example.com` has 4). Bounds the lookups of
 * an unauthenticated preflight: an origin is checked against one wildcard per suffix of its
 * host up to this many labels, whatever the host's depth.
 */
export const MAX_WILDCARD_LABELS = 8;

/** The hosts that may use plain http. */
const LOOPBACK = new Set(['localhost', '127.0.0.1']);

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
const PORT = /^[1-9]\d{0,4}$/;

/** A domain name of at least two labels whose last label is not all digits (not an address). */
function isDomainName(host: string): boolean {
  if (host.length > 253) return false;
  const labels = host.split('.');
  return labels.length >= 2 && labels.every((l) => LABEL.test(l)) && !/^\d+$/.test(labels[labels.length - 1]!);
}

/** `example.com` for `www.example.com`; anything else as it is (`www.com` keeps its `www`). */
function stripWww(host: string): string {
  const rest = host.startsWith('www.') ? host.slice(4) : host;
  return rest !== host && isDomainName(rest) ? rest : host;
}

export type Normalized = { ok: true; entry: string } | { ok: false; reason: string };

/**
 * The stored form of one entry as a client sent it, or why it is not one. Example:
 * `"https://www.Example.com:8443/"` -> `example.com:8443`; `"http://example.com"` -> refused
 * (http is for the loopback hosts only); `"*.com"` -> refused (a wildcard needs a name of two
 * labels under it).
 */
export function normalizeDomain(input: string): Normalized {
  let s = input.trim().toLowerCase();
  if (s.length === 0) return { ok: false, reason: 'is empty' };
  let scheme: string | undefined;
  const m = /^([a-z][a-z0-9+.-]*):\/\//.exec(s);
  if (m) {
    scheme = m[1];
    if (scheme !== 'http' && scheme !== 'https') return { ok: false, reason: `has the scheme ${scheme}://; only https:// (and http:// for localhost) can be a browser page's origin` };
    s = s.slice(m[0].length);
  }
  if (s.endsWith('/')) s = s.slice(0, -1);
  if (/[^a-z0-9.*:-]/.test(s)) {
    return { ok: false, reason: 'must be a domain such as example.com, *.example.com or localhost:3000 (ASCII letters, digits, dots and hyphens; no path, query, user or IPv6 address; an internationalized name in its xn-- form)' };
  }
  const colon = s.indexOf(':');
  const host = colon < 0 ? s : s.slice(0, colon);
  const port = colon < 0 ? undefined : s.slice(colon + 1);
  if (port !== undefined && (!PORT.test(port) || Number(port) > 65535)) return { ok: false, reason: 'has a port that is not a number from 1 to 65535' };
  let stored: string;
  if (host.startsWith('*.')) {
    if (!isDomainName(host.slice(2))) return { ok: false, reason: 'must name a domain of at least two labels after "*." (such as *.example.com)' };
    if (host.split('.').length - 1 > MAX_WILDCARD_LABELS) return { ok: false, reason: `has more than ${MAX_WILDCARD_LABELS} labels after "*."` };
    stored = host;
  } else if (host.includes('*')) {
    return { ok: false, reason: 'may use * only as its whole first label (*.example.com)' };
  } else if (host === 'localhost' || IPV4.test(host)) {
    stored = host;
  } else if (isDomainName(host)) {
    stored = stripWww(host);
  } else {
    return { ok: false, reason: 'is not a domain name of at least two labels (each 1 to 63 letters, digits or inner hyphens; 253 characters in all), localhost or an IPv4 address' };
  }
  if (scheme === 'http' && !LOOPBACK.has(host)) {
    return { ok: false, reason: 'uses http://, which is admitted only for localhost and 127.0.0.1: a page of any other host must be served over https' };
  }
  return { ok: true, entry: port !== undefined ? `${stored}:${port}` : stored };
}

/**
 * What an entry to remove is compared with: the normalized form when it is a valid entry,
 * otherwise the input trimmed and lower-cased, so entries stored before validation existed
 * (apikey/create took any string) can still be removed as they are listed.
 */
export function domainToRemove(input: string): string {
  const n = normalizeDomain(input);
  return n.ok ? n.entry : input.trim().toLowerCase();
}

/**
 * The stored entries that would admit a page of `origin` (the `Origin` header as a browser
 * sends it: `scheme://host[:port]`), or null when it is no origin an entry can admit (`null`,
 * another scheme, an IPv6 host, plain http beyond the loopback hosts). An origin is admitted
 * when one of these is stored: a lookup per candidate, never a scan of the list; at most
 * 2 x (2 + MAX_WILDCARD_LABELS - 1) of them.
 * Example: `https://a.b.example.com` -> `a.b.example.com`, `a.b.example.com:443`,
 * `*.b.example.com`, `*.b.example.com:443`, `*.example.com`, `*.example.com:443`.
 */
export function originCandidates(origin: string): string[] | null {
  const m = /^(https?):\/\/([a-z0-9.-]{1,253})(?::([1-9]\d{0,4}))?$/.exec(origin);
  if (!m) return null;
  const [, scheme, host, explicitPort] = m as unknown as [string, string, string, string | undefined];
  if (scheme === 'http' && !LOOPBACK.has(host)) return null;
  const port = explicitPort ?? (scheme === 'https' ? '443' : '80');
  const hosts = [host];
  if (host.startsWith('www.') && stripWww(host) !== host) hosts.push(stripWww(host));
  if (isDomainName(host)) {
    const labels = host.split('.');
    for (let i = Math.max(1, labels.length - MAX_WILDCARD_LABELS); labels.length - i >= 2; i++) hosts.push(`*.${labels.slice(i).join('.')}`);
  } else if (host !== 'localhost' && !IPV4.test(host)) {
    return null;
  }
  return hosts.flatMap((h) => [h, `${h}:${port}`]);
}
