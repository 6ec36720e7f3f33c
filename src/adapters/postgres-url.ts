/**
 * A POSTGRES_URL with several hosts, taken apart (no driver loaded: the configuration checks it
 * at start, and the embedded default must not load node-postgres). postgres-hosts.ts connects.
 */
export interface Hosts {
  /** One single-host URL per host, in the URL's order, without target_session_attrs. */
  urls: string[];
  /** Look for a host that is not in recovery. */
  primary: boolean;
}

const MULTI = /^(postgres(?:ql)?:\/\/)([^@/]*@)?([^/?#]*,[^/?#]*)(.*)$/i;

/** The hosts of a multi-host URL, or null for a URL of one host (node-postgres takes it as it is). */
export function hostsOf(url: string): Hosts | null {
  const m = MULTI.exec(url);
  if (!m) return null;
  const [, scheme, auth = '', list, rest] = m as unknown as [string, string, string | undefined, string, string];
  const [pathPart, query = ''] = rest.split(/\?(.*)/s, 2) as [string, string | undefined];
  const params = new URLSearchParams(query);
  const attrs = params.get('target_session_attrs') ?? 'primary';
  if (!['read-write', 'primary', 'any'].includes(attrs)) throw new Error(`target_session_attrs=${attrs} is not supported (read-write, primary or any)`);
  params.delete('target_session_attrs');
  const q = params.toString();
  const urls = list.split(',').map((hostPort) => {
    if (!hostPort) throw new Error('an empty host in the host list');
    return `${scheme}${auth}${hostPort}${pathPart}${q ? `?${q}` : ''}`;
  });
  return { urls, primary: attrs !== 'any' };
}

/** The URL node-postgres is given (the first host's for a multi-host URL). */
export const firstUrl = (url: string) => hostsOf(url)?.urls[0] ?? url;

