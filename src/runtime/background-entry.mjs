// Entry of the background worker thread (src/runtime/background.ts): registers tsx's loader in
// this thread (the service runs TypeScript without a build step), then runs the worker.
import { register } from 'tsx/esm/api';

register();
await import('./background-worker.ts');
