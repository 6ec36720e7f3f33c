/**
 * A fake mongod on loopback: just enough of the wire protocol for the real driver (the
 * `mongodb` package the adapter uses) to connect, run the commands the read store sends, and
 * meet the errors a real server answers with. It proves what the adapter does with the
 * driver, not what MongoDB does with the data: there is no isolation, no rollback, no
 * snapshot, and queries understand only equality and `$in`. Server semantics stay with the
 * port contract suite (test/contract/read-store.contract.ts) against a real MongoDB.
 *
 * What it speaks:
 * - the handshake: `isMaster` in OP_QUERY (the driver's first message on every connection,
 *   answered with OP_REPLY), then `hello` in OP_MSG from the monitor; the answer makes it a
 *   replica-set primary (default), a secondary, or a standalone server (`replicaSet: null`);
 * - OP_MSG commands: find, insert, update, delete, createIndexes, drop, listCollections,
 *   ping, hello, endSessions, commitTransaction, abortTransaction (others: CommandNotFound);
 * - transactions as far as the driver can tell: a write error inside a transaction (a
 *   duplicate key, as on a real server) aborts it, and every later command of that
 *   transaction, commit and abort included, answers NoSuchTransaction (251) labelled
 *   TransientTransactionError, which is what a real server answers.
 *
 * Tests steer it with `hooks`: a hook sees each command first and may answer it (an error
 * with any code and labels), drop the connection, or delay the answer. Every command is
 * recorded in `commands`. Replies are encoded with the driver's own BSON (re-exported by
 * `mongodb`).
 */
import net from 'node:net';
import { BSON, Long, ObjectId, type Document } from 'mongodb';

const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_MSG = 2013;

export interface Command {
  /** The command's name (its first key), e.g. `find`. */
  name: string;
  db: string;
  /** The command document, document sequences merged in. */
  body: Document;
  /** `<lsid hex>:<txnNumber>` for a command inside a transaction, else null. */
  txn: string | null;
  /** Which connection (counted from 1) sent it. */
  connection: number;
}

type Action = { reply: Document } | { close: true } | { delayMs: number; then?: Action };
export type Hook = (cmd: Command) => Action | undefined;

export interface FakeMongodOptions {
  /** Port to listen on; 0 (default) picks one. */
  port?: number;
  /** Replica set name (default `rs0`); null makes a standalone server (no transactions). */
  replicaSet?: string | null;
  /** Secondary instead of primary (replica sets only). */
  secondary?: boolean;
  /** The set's other members as `host:port` (this server is always one). */
  members?: string[];
  /** The primary's `host:port`, for a secondary. */
  primary?: string;
}

export const errorReply = (code: number, codeName: string, labels: string[] = []): Document => ({
  ok: 0,
  code,
  codeName,
  errmsg: `${codeName} (fake mongod)`,
  ...(labels.length ? { errorLabels: labels } : {}),
});

export class FakeMongod {
  readonly commands: Command[] = [];
  readonly hooks: Hook[] = [];
  /** Documents by namespace (`db.collection`), then `_id` (as JSON). */
  readonly data = new Map<string, Map<string, Document>>();
  /** Indexes created, by namespace. */
  readonly indexes = new Map<string, Document[]>();
  private readonly aborted = new Set<string>();
  private readonly sockets = new Set<net.Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private server: net.Server | null = null;
  private connections = 0;
  port = 0;

  constructor(private readonly options: FakeMongodOptions = {}) {}

  static async start(options: FakeMongodOptions = {}): Promise<FakeMongod> {
    const f = new FakeMongod(options);
    await f.listen(options.port ?? 0);
    return f;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** A connection string for this server alone; `query` without the `?`. */
  url(db = 'collab', query = ''): string {
    const rs = this.options.replicaSet === null ? '' : `replicaSet=${this.options.replicaSet ?? 'rs0'}`;
    const q = [rs, query].filter(Boolean).join('&');
    return `mongodb://${this.address}/${db}${q ? `?${q}` : ''}`;
  }

  async listen(port: number): Promise<void> {
    const server = net.createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
  }

  /** Stops listening and drops every connection. */
  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const s of this.sockets) s.destroy();
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((r) => server.close(() => r()));
  }

  /** The documents of `collection` in database `db`. */
  collection(db: string, collection: string): Map<string, Document> {
    const ns = `${db}.${collection}`;
    let c = this.data.get(ns);
    if (!c) this.data.set(ns, (c = new Map()));
    return c;
  }

  /** The commands named `name` recorded so far. */
  named(name: string): Command[] {
    return this.commands.filter((c) => c.name === name);
  }

  private accept(socket: net.Socket) {
    const id = ++this.connections;
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 4 && buf.length >= buf.readInt32LE(0)) {
        const len = buf.readInt32LE(0);
        const msg = buf.subarray(0, len);
        buf = buf.subarray(len);
        this.onMessage(socket, id, msg);
      }
    });
  }

  private onMessage(socket: net.Socket, connection: number, msg: Buffer) {
    const requestId = msg.readInt32LE(4);
    const opCode = msg.readInt32LE(12);
    if (opCode === OP_QUERY) {
      // flags, full collection name, skip, return, query document.
      let o = 20;
      const nameEnd = msg.indexOf(0, o);
      const ns = msg.toString('utf8', o, nameEnd);
      o = nameEnd + 1 + 8;
      const body = BSON.deserialize(msg.subarray(o, o + msg.readInt32LE(o)));
      const cmd = this.command(body, ns.split('.')[0]!, connection);
      this.answer(socket, cmd, (doc) => socket.write(frame(requestId, OP_REPLY, replyBody(doc))));
      return;
    }
    if (opCode !== OP_MSG) {
      socket.destroy();
      return;
    }
    const flags = msg.readUInt32LE(16);
    const end = msg.length - (flags & 1 ? 4 : 0);
    let o = 20;
    let body: Document = {};
    const sequences: Record<string, Document[]> = {};
    while (o < end) {
      const kind = msg[o]!;
      o += 1;
      if (kind === 0) {
        const size = msg.readInt32LE(o);
        body = BSON.deserialize(msg.subarray(o, o + size));
        o += size;
      } else {
        const size = msg.readInt32LE(o);
        const sectionEnd = o + size;
        const idEnd = msg.indexOf(0, o + 4);
        const ident = msg.toString('utf8', o + 4, idEnd);
        let p = idEnd + 1;
        const docs: Document[] = [];
        while (p < sectionEnd) {
          const dsize = msg.readInt32LE(p);
          docs.push(BSON.deserialize(msg.subarray(p, p + dsize)));
          p += dsize;
        }
        sequences[ident] = docs;
        o = sectionEnd;
      }
    }
    const cmd = this.command({ ...body, ...sequences }, String(body.$db ?? 'admin'), connection);
    this.answer(socket, cmd, (doc) => {
      const payload = BSON.serialize(doc);
      const head = Buffer.alloc(5);
      head.writeUInt32LE(0, 0);
      head[4] = 0;
      socket.write(frame(requestId, OP_MSG, Buffer.concat([head, payload])));
    });
  }

  private command(body: Document, db: string, connection: number): Command {
    const name = Object.keys(body)[0] ?? '';
    const lsid = body.lsid?.id;
    const txn = body.autocommit === false && lsid ? `${Buffer.from(lsid.buffer ?? lsid).toString('hex')}:${String(body.txnNumber)}` : null;
    const cmd = { name, db, body, txn, connection };
    this.commands.push(cmd);
    return cmd;
  }

  private answer(socket: net.Socket, cmd: Command, send: (doc: Document) => void) {
    const act = (action: Action | undefined): void => {
      if (!action) return send(this.execute(cmd));
      if ('close' in action) return void socket.destroy();
      if ('reply' in action) return send(action.reply);
      const t = setTimeout(() => {
        this.timers.delete(t);
        if (!socket.destroyed) act(action.then);
      }, action.delayMs);
      this.timers.add(t);
    };
    let action: Action | undefined;
    for (const hook of this.hooks) {
      action = hook(cmd);
      if (action) break;
    }
    act(action);
  }

  private hello(): Document {
    const rs = this.options.replicaSet === null ? null : (this.options.replicaSet ?? 'rs0');
    const primary = !this.options.secondary;
    const doc: Document = {
      helloOk: true,
      ismaster: primary,
      isWritablePrimary: primary,
      maxBsonObjectSize: 16 * 1024 * 1024,
      maxMessageSizeBytes: 48_000_000,
      maxWriteBatchSize: 100_000,
      localTime: new Date(),
      logicalSessionTimeoutMinutes: 30,
      connectionId: this.connections,
      minWireVersion: 0,
      maxWireVersion: 21,
      readOnly: false,
      ok: 1,
    };
    if (rs) {
      Object.assign(doc, {
        setName: rs,
        setVersion: 1,
        hosts: [this.address, ...(this.options.members ?? [])],
        me: this.address,
        secondary: !primary,
      });
      if (primary) Object.assign(doc, { primary: this.address, electionId: new ObjectId('7fffffff0000000000000001') });
      else if (this.options.primary) doc.primary = this.options.primary;
    }
    return doc;
  }

  /** The default answers: a tiny in-memory server. */
  private execute(cmd: Command): Document {
    const { name, body, db, txn } = cmd;
    if (txn && this.aborted.has(txn)) return errorReply(251, 'NoSuchTransaction', ['TransientTransactionError']);
    switch (name) {
      case 'isMaster':
      case 'ismaster':
      case 'hello':
        return this.hello();
      case 'ping':
      case 'endSessions':
      case 'killCursors':
      case 'commitTransaction':
      case 'abortTransaction':
        return { ok: 1 };
      case 'find': {
        const docs = [...this.collection(db, body.find).values()].filter((d) => matches(d, body.filter ?? {}));
        const limited = body.limit ? docs.slice(0, Math.abs(Number(body.limit))) : docs;
        return { cursor: { id: Long.ZERO, ns: `${db}.${body.find}`, firstBatch: limited }, ok: 1 };
      }
      case 'insert': {
        const c = this.collection(db, body.insert);
        const writeErrors: Document[] = [];
        let n = 0;
        (body.documents as Document[]).forEach((d, index) => {
          const key = JSON.stringify(d._id);
          if (c.has(key)) {
            writeErrors.push({ index, code: 11000, errmsg: `E11000 duplicate key error collection: ${db}.${body.insert} index: _id_ dup key: { _id: ${key} }` });
          } else {
            c.set(key, d);
            n++;
          }
        });
        if (writeErrors.length && txn) this.aborted.add(txn);
        return { n, ...(writeErrors.length ? { writeErrors } : {}), ok: 1 };
      }
      case 'update': {
        const c = this.collection(db, body.update);
        let n = 0;
        let nModified = 0;
        const upserted: Document[] = [];
        (body.updates as Document[]).forEach((u, index) => {
          const hits = [...c.values()].filter((d) => matches(d, u.q));
          for (const d of u.multi ? hits : hits.slice(0, 1)) {
            const next = applyUpdate(d, u.u);
            n++;
            if (JSON.stringify(next) !== JSON.stringify(d)) nModified++;
            c.set(JSON.stringify(d._id), next);
          }
          if (hits.length === 0 && u.upsert) {
            const seed: Document = {};
            for (const [k, v] of Object.entries(u.q as Document)) if (!isOperator(v)) seed[k] = v;
            const doc = applyUpdate(seed, u.u);
            if (doc._id === undefined) doc._id = new ObjectId();
            c.set(JSON.stringify(doc._id), doc);
            upserted.push({ index, _id: doc._id });
            n++;
          }
        });
        return { n, nModified, ...(upserted.length ? { upserted } : {}), ok: 1 };
      }
      case 'delete': {
        const c = this.collection(db, body.delete);
        let n = 0;
        for (const del of body.deletes as Document[]) {
          const hits = [...c.entries()].filter(([, d]) => matches(d, del.q));
          for (const [k] of del.limit ? hits.slice(0, 1) : hits) {
            c.delete(k);
            n++;
          }
        }
        return { n, ok: 1 };
      }
      case 'createIndexes': {
        const ns = `${db}.${body.createIndexes}`;
        const list = this.indexes.get(ns) ?? [];
        list.push(...(body.indexes as Document[]));
        this.indexes.set(ns, list);
        this.collection(db, body.createIndexes);
        return { ok: 1 };
      }
      case 'drop':
        this.data.delete(`${db}.${body.drop}`);
        return { ok: 1 };
      case 'listCollections': {
        const names = [...this.data.keys()].filter((ns) => ns.startsWith(`${db}.`)).map((ns) => ({ name: ns.slice(db.length + 1), type: 'collection' }));
        return { cursor: { id: Long.ZERO, ns: `${db}.$cmd.listCollections`, firstBatch: names }, ok: 1 };
      }
      default:
        return errorReply(59, 'CommandNotFound');
    }
  }
}

/** A free loopback port nothing listens on (for a store that must first fail to connect). */
export async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function frame(responseTo: number, opCode: number, body: Buffer): Buffer {
  const head = Buffer.alloc(16);
  head.writeInt32LE(16 + body.length, 0);
  head.writeInt32LE(0, 4);
  head.writeInt32LE(responseTo, 8);
  head.writeInt32LE(opCode, 12);
  return Buffer.concat([head, body]);
}

/** OP_REPLY: flags, cursor id, starting from, number returned, the document. */
function replyBody(doc: Document): Buffer {
  const head = Buffer.alloc(20);
  head.writeInt32LE(1, 16);
  return Buffer.concat([head, BSON.serialize(doc)]);
}

const isOperator = (v: unknown) => v !== null && typeof v === 'object' && Object.keys(v).some((k) => k.startsWith('$'));

function get(doc: Document, path: string): unknown {
  let cur: unknown = doc;
  for (const p of path.split('.')) cur = cur !== null && typeof cur === 'object' ? (cur as Document)[p] : undefined;
  return cur;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function matches(doc: Document, filter: Document): boolean {
  for (const [k, v] of Object.entries(filter)) {
    const actual = get(doc, k);
    if (isOperator(v)) {
      if (!('$in' in v) || Object.keys(v).length !== 1) throw new Error(`fake mongod: unsupported query ${JSON.stringify(filter)}`);
      if (!(v.$in as unknown[]).some((x) => same(actual, x))) return false;
    } else if (v === null) {
      if (actual !== null && actual !== undefined) return false;
    } else if (!same(actual, v)) return false;
  }
  return true;
}

function applyUpdate(doc: Document, u: Document): Document {
  if (!isOperator(u)) return { ...u, _id: doc._id };
  const next: Document = structuredClone(doc);
  for (const [op, fields] of Object.entries(u)) {
    for (const [path, v] of Object.entries(fields as Document)) {
      const parts = path.split('.');
      let cur = next;
      for (const p of parts.slice(0, -1)) cur = cur[p] ??= {};
      const last = parts[parts.length - 1]!;
      if (op === '$set') cur[last] = v;
      else if (op === '$unset') delete cur[last];
      else if (op === '$inc') cur[last] = Number(cur[last] ?? 0) + Number(v);
      else throw new Error(`fake mongod: unsupported update operator ${op}`);
    }
  }
  return next;
}
