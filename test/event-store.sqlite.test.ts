import fs from 'node:fs';
import path from 'node:path';
import { SqliteEventStore } from '../src/adapters/sqlite-event-store.js';
import { eventStoreContract } from './contract/event-store.contract.js';
import { tempDir } from './support/app.js';

const dir = tempDir('collab-es-');
let n = 0;
const s = eventStoreContract('embedded SQLite', async () => new SqliteEventStore(path.join(dir, `events-${n++}.db`)));
s.after(() => fs.rmSync(dir, { recursive: true, force: true }));
s.run();
