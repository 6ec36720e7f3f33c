/**
 * A Server-Sent Events reader over fetch streaming, for the change stream's tests
 * (test/changes.stream.test.ts): what a browser front end does with `fetch` and a user token.
 * It keeps every event and comment line as they arrive; `close()` aborts the request.
 */
export interface SseEvent {
  id?: string;
  event: string;
  data: any;
}

export class SseClient {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  /** Ids that came alone, without an event (a stream from `now` starts with one). */
  readonly ids: string[] = [];
  /** The answer's body when it was no stream (a refusal's JSON envelope). */
  body: any;
  /** Resolves when the stream ends, whoever ended it. */
  ended: Promise<void> = Promise.resolve();
  private constructor(
    readonly status: number,
    readonly headers: Headers,
    private readonly controller: AbortController,
  ) {}

  static async open(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
    const controller = new AbortController();
    const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
    const c = new SseClient(res.status, res.headers, controller);
    if (res.status !== 200 || !res.body) {
      c.body = await res.json();
      return c;
    }
    c.ended = c.read(res.body);
    return c;
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          this.take(block);
        }
      }
    } catch {
      // Aborted by close(), or the server cut it.
    }
  }

  private take(block: string): void {
    const e: Partial<SseEvent> & { data?: string } = {};
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
      else if (line.startsWith('id: ')) e.id = line.slice(4);
      else if (line.startsWith('event: ')) e.event = line.slice(7);
      else if (line.startsWith('data: ')) e.data = (e.data ?? '') + line.slice(6);
    }
    if (e.data === undefined && e.id !== undefined) this.ids.push(e.id);
    if (e.data !== undefined) this.events.push({ ...(e.id !== undefined ? { id: e.id } : {}), event: e.event ?? 'message', data: JSON.parse(e.data) });
  }

  /** The `change` events so far. */
  get changes(): SseEvent[] {
    return this.events.filter((e) => e.event === 'change');
  }

  close(): Promise<void> {
    this.controller.abort();
    return this.ended;
  }
}
