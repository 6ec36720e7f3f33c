/**
 * A TCP relay on loopback to `host:port` that can stop passing bytes both ways on demand (kept,
 * none lost, as over a link that is down) and pass them on when thawed: a connection whose
 * answer does not come, held deterministically (test/postgres.stall.test.ts,
 * test/postgres.replicas.test.ts).
 */
import net from 'node:net';

/** A relay to `host:port`; `freeze` stops it passing bytes, `thaw` passes on what it kept and goes on. */
export async function relay(host: string, port: number) {
  let frozen = false;
  const held: Array<() => void> = [];
  let opened = 0;
  let closed = 0;
  const sockets = new Set<net.Socket>();
  const pass = (from: net.Socket, to: net.Socket) =>
    from.on('data', (chunk) => {
      if (frozen) held.push(() => to.writable && to.write(chunk));
      else if (to.writable) to.write(chunk);
    });
  const server = net.createServer((client) => {
    opened++;
    const upstream = net.connect(port, host);
    sockets.add(client).add(upstream);
    pass(client, upstream);
    pass(upstream, client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', () => {
      closed++;
      end();
    });
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    freeze: () => void (frozen = true),
    thaw: () => {
      frozen = false;
      for (const f of held.splice(0)) f();
    },
    counts: () => ({ opened, closed }),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
