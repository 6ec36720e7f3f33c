/**
 * Several hosts in one POSTGRES_URL, as libpq writes them, for failover by URL:
 *
 *   postgres://collab:pw@db1:5432,db2:5432/collab?target_session_attrs=read-write
 *
 * node-postgres takes one host and refuses this URL. Here each new connection goes to the host
 * that is the primary now: the hosts are asked in order (the last one found first), each with a
 * short-lived probe (`SELECT pg_is_in_recovery()`), and the connection is checked again once
 * made (a host may have become a standby since). After a promotion the old primary's
 * connections break, the pools open new ones, and those reach the promoted standby: the same
 * running process goes on without a restart (test/postgres.failover.test.ts).
 *
 * `target_session_attrs`: `read-write` or `primary` (the default here, since the service
 * writes) look for a primary; `any` takes the first host that answers. Other libpq values are
 * refused at start (config.ts).
 */
import pg from 'pg';
import { hostsOf, type Hosts } from './postgres-url.js';

export { firstUrl } from './postgres-url.js';

/** How long a probe of one host may take, ms. */
const PROBE_TIMEOUT_MS = 3000;

/**
 * A node-postgres Client class for `url`: pg.Client itself for one host; for several, one whose
 * connect() goes to the current primary (see the top). Pools take it as their `Client`.
 */
export function clientClassFor(url: string): typeof pg.Client {
  const parsed = hostsOf(url);
  if (!parsed) return pg.Client;
  const hosts: Hosts = parsed;
  let preferred = 0;
  /** `preferred` was just connected to and checked: new connections go there without a probe. */
  let known = false;
  let finding: Promise<number> | null = null;

  const probe = async (i: number): Promise<boolean> => {
    const c = new pg.Client({ connectionString: hosts.urls[i]!, connectionTimeoutMillis: PROBE_TIMEOUT_MS, application_name: 'collab-probe' });
    c.on('error', () => undefined);
    try {
      await c.connect();
      if (!hosts.primary) return true;
      const r = await c.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r');
      return r.rows[0]?.r === false;
    } catch {
      return false;
    } finally {
      void c.end().catch(() => undefined);
    }
  };
  /** The host to connect to: the last one found, else the first in order that qualifies. Shared by concurrent connects. */
  const find = (): Promise<number> =>
    known
      ? Promise.resolve(preferred)
      : (finding ??= (async () => {
      try {
        for (let k = 0; k < hosts.urls.length; k++) {
          const i = (preferred + k) % hosts.urls.length;
          if (await probe(i)) return (preferred = i);
        }
        throw Object.assign(new Error(`no ${hosts.primary ? 'primary' : 'server'} among the ${hosts.urls.length} hosts of POSTGRES_URL answered`), { code: '08001' });
      } finally {
        finding = null;
      }
    })());

  class FailoverClient extends pg.Client {
    override connect(): Promise<this>;
    override connect(callback: (err: Error) => void): void;
    override connect(callback?: (err: Error) => void): Promise<this> | void {
      const done = (async () => {
        const i = await find();
        const target = new URL(hosts.urls[i]!);
        const self = this as unknown as { host: string; port: number; connectionParameters: { host: string; port: number } };
        self.host = self.connectionParameters.host = decodeURIComponent(target.hostname.replace(/^\[|\]$/g, ''));
        self.port = self.connectionParameters.port = Number(target.port || 5432);
        try {
          await super.connect();
        } catch (error) {
          // The host went away (a primary stopped): the next connect looks for another.
          known = false;
          throw error;
        }
        if (hosts.primary) {
          // Promoted or demoted between the probe and now: look again next time.
          const r = await this.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r');
          if (r.rows[0]?.r !== false) {
            known = false;
            preferred = (i + 1) % hosts.urls.length;
            await this.end().catch(() => undefined);
            throw Object.assign(new Error(`host ${target.host} of POSTGRES_URL is in recovery (a standby), not the primary`), { code: '25006' });
          }
        }
        known = true;
        return this;
      })();
      if (!callback) return done;
      done.then(() => callback(undefined as unknown as Error), (error: Error) => callback(error));
    }
  }
  return FailoverClient as unknown as typeof pg.Client;
}
