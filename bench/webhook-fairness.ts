/**
 * The `webhooks` scenario of bench/run.ts (issue 33, finding 1): a victim workspace's classic
 * webhook delay, from its write's request to the delivery's arrival at a receiver on
 * loopback, first alone (the baseline), then while another workspace has every advanced
 * endpoint a key may have (50) pointing at a tarpit (accepts the connection, never answers)
 * and six writes queued 300 deliveries there. Both in the same run, on the same service, so
 * the ratio says what the attack costs the victim on whatever machine runs it.
 *
 * The service must allow loopback destinations (WEBHOOK_ALLOWED_CIDRS=127.0.0.1/32).
 */
import http from 'node:http';
import net from 'node:net';

interface Delays {
  samples: number;
  p50: number;
  p99: number;
  max: number;
}

export interface FairnessFigures {
  baseline: Delays;
  attacked: Delays;
  /** Connections the tarpit held while the victim was measured under attack (at most one workspace's share when fair). */
  tarpitConnections: number;
  /** Tarpit connections the deliverer closed (a timeout) before the measurement ended. */
  tarpitDropped: number;
}

/** The advanced endpoints a key may have (commands/advanced-webhooks.ts MAX_ENDPOINTS_PER_KEY). */
const ENDPOINTS = 50;
const ATTACK_WRITES = 6;

function delays(ms: number[]): Delays {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))]!);
  return { samples: s.length, p50: at(0.5), p99: at(0.99), max: Math.round(s[s.length - 1]!) };
}

async function listen(server: net.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

export async function webhookFairness(url: string, samples: number): Promise<FairnessFigures> {
  // The receiver: answers 200 at once; each arrival settles the wait for its organization id.
  const waiting = new Map<string, (at: number) => void>();
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const at = performance.now();
      res.writeHead(200).end('ok');
      const id = /"organizationId":"(victim-\d+)"/.exec(body)?.[1];
      if (id) waiting.get(id)?.(at);
    });
  });
  const sockets = new Set<net.Socket>();
  let dropped = 0;
  const tarpit = net.createServer((s) => {
    sockets.add(s);
    s.on('data', () => {});
    s.on('close', () => {
      sockets.delete(s);
      dropped++;
    });
  });
  const receiverUrl = await listen(receiver);
  const tarpitUrl = await listen(tarpit);

  const call = async (route: string, data: unknown, headers: Record<string, string> = {}) => {
    const r = await fetch(`${url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ data }) });
    const body = (await r.json()) as any;
    if (r.status !== 200) throw new Error(`${route} -> ${r.status} ${JSON.stringify(body).slice(0, 300)}`);
    return body.result;
  };
  const workspace = async (email: string) => {
    const ws = (await call('/v2/workspace/create', { ownerEmail: email })).data;
    const [apiKey, k] = Object.entries(ws.apiKeyList)[0] as [string, { authToken: string }];
    return { 'x-service-api-key': apiKey, 'x-service-auth-token': k.authToken };
  };

  try {
    const victim = await workspace('victim@example.com');
    await call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: `${receiverUrl}/raw` } }, victim);
    let seq = 0;
    const measure = async (n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) {
        const id = `victim-${++seq}`;
        const arrived = new Promise<number>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`the victim's delivery ${id} did not arrive within 120 s`)), 120_000);
          waiting.set(id, (at) => {
            clearTimeout(timer);
            resolve(at);
          });
        });
        const start = performance.now();
        await call('/v2/organizations/add', { organizations: [{ organizationId: id, organizationName: id }] }, victim);
        out.push((await arrived) - start);
        waiting.delete(id);
      }
      return out;
    };
    // Unmeasured: the first writes and deliveries run cold (JIT, connection setup, caches),
    // and would make the baseline look worse than the service's steady state.
    await measure(samples);
    const baseline = await measure(samples);

    const attacker = await workspace('attacker@example.com');
    await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true }, attacker);
    for (let i = 0; i < ENDPOINTS; i++) await call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${tarpitUrl}/hook-${i}` }, attacker);
    for (let i = 0; i < ATTACK_WRITES; i++) {
      await call('/v2/organizations/add', { organizations: [{ organizationId: `attack-${i}`, organizationName: 'x' }] }, attacker);
    }
    // Under way once the tarpit holds connections and has stopped gaining them (the sender
    // has handed it every slot it will get): no new connection for a while.
    let held = 0;
    for (let quietFor = 0, waited = 0; quietFor < 500; waited += 50) {
      if (waited > 30_000) throw new Error(`the tarpit got ${sockets.size} connections in 30 s`);
      await new Promise((r) => setTimeout(r, 50));
      quietFor = sockets.size > 0 && sockets.size === held ? quietFor + 50 : 0;
      held = sockets.size;
    }
    const droppedBefore = dropped;
    const attacked = await measure(samples);
    return { baseline: delays(baseline), attacked: delays(attacked), tarpitConnections: sockets.size, tarpitDropped: dropped - droppedBefore };
  } finally {
    for (const s of sockets) s.destroy();
    receiver.closeAllConnections();
    await Promise.all([new Promise((r) => receiver.close(r)), new Promise((r) => tarpit.close(r))]);
  }
}
