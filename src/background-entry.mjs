// Entry of the background worker thread when the service runs from the sources through tsx
// (development and tests; see ENTRY in background.ts): registers tsx's loader in this thread,
// then runs the worker. The compiled service (dist/) starts background-worker.js directly.
import { register } from 'tsx/esm/api';

register();
await import('./background-worker.ts');
