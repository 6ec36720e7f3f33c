import fs from 'node:fs';
import path from 'node:path';
import { SqliteReadStore } from '../src/adapters/sqlite-read-store.js';
import { readStoreContract } from './contract/read-store.contract.js';
import { tempDir } from './support/app.js';

const dir = tempDir('collab-rs-');
let n = 0;
const s = readStoreContract('embedded SQLite', async () => new SqliteReadStore(path.join(dir, `read-${n++}.db`)));
s.after(() => fs.rmSync(dir, { recursive: true, force: true }));
s.run();
