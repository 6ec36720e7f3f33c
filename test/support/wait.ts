/**
 * Waiting for a condition instead of sleeping a fixed time (a loaded CI machine is slower than
 * any guess). Suites differ in how long a condition may take and how often it is worth asking
 * (a process starting needs seconds, an in-memory notice milliseconds), so each suite makes its
 * own `until` with its default deadline and poll interval:
 *
 *   const until = waiter(15_000, 50);
 *   await until('both processes ready', async () => ...);          // gives up after 15 s
 *   await until('the retry', () => hits === 2, 2000);               // this one after 2 s
 */
export type Until = (what: string | (() => string), cond: () => boolean | Promise<boolean>, timeoutMs?: number) => Promise<void>;

export function waiter(defaultTimeoutMs: number, everyMs: number): Until {
  return async (what, cond, timeoutMs = defaultTimeoutMs) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  };
}
