/**
 * The idle wait of a log follower's loop: sleep until a timeout, or until poked (new events
 * were appended, a lease was won, a request is waiting). A poke that arrives while the loop
 * is busy is remembered, so the next `sleep` returns at once and nothing waits a whole poll
 * interval for work that is already there.
 */
export class Wakeup {
  private wake: (() => void) | null = null;
  private pending = false;

  poke(): void {
    this.pending = true;
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  /** Sleeps `ms` unless poked (or already poked since the last `take`). */
  sleep(ms: number): Promise<void> {
    if (this.pending) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null;
        resolve();
      }, Math.max(0, ms));
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** The loop starts a round of work: pokes before this moment are served by it. */
  take(): void {
    this.pending = false;
  }
}
