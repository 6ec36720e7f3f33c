/**
 * The cascade worker: drains the work items the projections queue when a folder or an
 * organization is deleted (projections/cascade-work.ts), one idempotent command per item,
 * then removes the item. Reads never wait for it: the deletion is already invisible.
 */
import { documentDecider, documentStream } from '../../commands/document.js';
import { grantsDecider, grantsStream } from '../../commands/grant.js';
import { groupDecider, groupStream } from '../../commands/group.js';
import { CASCADE_WORK, type WorkItem } from '../../projections/cascade-work.js';
import type { EventMetadata, EventStore } from '../ports/event-store.js';
import type { ReadStore } from '../ports/read-store.js';
import type { CommandHandler } from '../runtime/command-handler.js';
import type { ProjectionRunner, RunnerLogger } from '../runtime/projection-runner.js';
import { Wakeup } from '../runtime/wakeup.js';
import { PARK_AFTER_ATTEMPTS, isStoreFault, park, parkedDoc, parkedId, type ParkedDoc } from '../runtime/parked.js';
import { createHash } from 'node:crypto';

const BATCH = 500;

const PARALLEL = 100;

export class CascadeWorker {
  private running = false;
  private loop: Promise<void> | null = null;
  private readonly wakeup = new Wakeup();
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly events: EventStore,
    private readonly read: ReadStore,
    private readonly commands: CommandHandler,
    private readonly projections: ProjectionRunner,
    private readonly clock: () => number,
    private readonly log: RunnerLogger,
    private readonly pollMs = 250,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.unsubscribe = this.events.onAppended(() => this.wakeup.poke());
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    this.wakeup.poke();
    await this.loop;
  }

  /** Until the read models are caught up and no work is left (tests, shutdown, CLI). */
  async settle(): Promise<void> {
    for (;;) {
      await this.projections.waitFor(await this.events.headPosition(), 10_000);
      if ((await this.drain()) === 0 && (await this.read.count(CASCADE_WORK, {})) === 0) return;
    }
  }

  /**
   * Works one batch of items in queue order; returns how many were done (or parked). An item
   * that fails for any reason but the store is tried again a few times and then parked
   * (src/runtime/parked.ts), so one item no command can carry out never holds up every
   * tenant's deletions behind it. A store fault leaves the batch queued for the next turn.
   */
  async drain(): Promise<number> {
    const items = await this.read.find<WorkItem>(CASCADE_WORK, {}, { sort: 'seq', limit: BATCH });
    const parked: ParkedDoc[] = [];
    for (let i = 0; i < items.length; i += PARALLEL) {
      await Promise.all(
        items.slice(i, i + PARALLEL).map(async (item) => {
          const failed = await this.workOrFail(item);
          if (failed) parked.push(failed);
        }),
      );
    }
    if (items.length > 0) {
      await this.read.transaction(async (tx) => {
        await tx.bulk(items.map((item) => ({ op: 'delete' as const, collection: CASCADE_WORK, id: item._id })));
        for (const doc of parked) await park(tx, doc);
      });
    }
    for (const doc of parked) {
      this.log.error(
        { parkedId: doc._id, error: doc.error, apiKey: doc.apiKey, causationId: doc.eventId },
        'a cascade item cannot be carried out; parked it and went on (collab projections parked)',
      );
    }
    return items.length;
  }

  /** Works `item`, retrying an error that is not the store's; the record to park when it still fails. */
  private async workOrFail(item: WorkItem): Promise<ParkedDoc | null> {
    let last: unknown;
    for (let attempt = 1; attempt <= PARK_AFTER_ATTEMPTS; attempt++) {
      try {
        await this.work(item);
        return null;
      } catch (error) {
        if (isStoreFault(error)) throw error;
        last = error;
        if (attempt < PARK_AFTER_ATTEMPTS) await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
    // The store must answer a plain read before anything is parked (an unrecognised outage).
    await this.read.count(CASCADE_WORK, {});
    const cause = { id: item.causationId, position: item.seq, type: `cascade:${item.kind}`, stream: item.organizationId, metadata: { apiKey: item.apiKey } };
    const doc = parkedDoc('cascade', cause, last, PARK_AFTER_ATTEMPTS, this.clock(), item);
    // One deletion queues many items: each its own parked record.
    doc._id = parkedId('cascade', createHash('sha256').update(item._id).digest('hex').slice(0, 20));
    return doc;
  }

  /**
   * An item is stale when its target was created anew after the deletion (an organization
   * deleted and re-created with the same ids before the worker ran): deleting then would
   * remove what the client just made. Example: documents d, e in organization o;
   * OrganizationDeleted at position 40 queues d and e; o is re-created and d added again at
   * position 57 (a DocumentAdded after 40), so d's item is dropped and e's runs.
   * Anything else after the deletion (a rename of the old d) does not save it: the old
   * incarnation is gone from reads and goes from the write side too. Items already done
   * (a rebuild queues historical work again) need no check: the commands are idempotent.
   */
  private async stale(stream: string, item: WorkItem, created: string): Promise<boolean> {
    const events = await this.events.readStream(stream);
    return events.some((e) => e.type === created && e.position > item.seq);
  }

  private async work(item: WorkItem): Promise<void> {
    const { apiKey, organizationId, targetId } = item;
    const now = this.clock();
    const metadata: EventMetadata = {
      requestId: item.requestId,
      actor: 'system:cascade',
      time: now,
      apiKey,
      causationId: item.causationId,
    };
    switch (item.kind) {
      case 'document': {
        const stream = documentStream(apiKey, organizationId, targetId);
        if (await this.stale(stream, item, 'DocumentAdded')) return;
        await this.commands.handle(documentDecider, stream, {
          type: 'DeleteDocument',
          // Document items come from folder and organization deletions only.
          data: { organizationId, documentId: targetId, reason: item.reason === 'documentDeleted' ? 'request' : item.reason },
          metadata: { now },
        }, metadata);
        return;
      }
      case 'grants': {
        const stream = grantsStream(apiKey, organizationId, targetId);
        if (await this.stale(stream, item, 'GrantAdded')) return;
        await this.commands.handle(grantsDecider, stream, {
          type: 'RevokeAll',
          data: { organizationId, userId: targetId },
          metadata: { now },
        }, metadata);
        return;
      }
      case 'resourceGrants': {
        const stream = grantsStream(apiKey, organizationId, targetId);
        const resource = item.resource!;
        // Stale: the user was granted the re-created resource after the deletion.
        const events = await this.events.readStream(stream);
        const regranted = events.some((e) => e.type === 'GrantAdded' && e.position > item.seq &&
          (e.data as { resourceType: string; resourceId: string }).resourceType === resource.resourceType &&
          (e.data as { resourceId: string }).resourceId === resource.resourceId);
        if (regranted) return;
        await this.commands.handle(grantsDecider, stream, {
          type: 'Revoke',
          data: { organizationId, userId: targetId, resources: [resource] },
          metadata: { now },
        }, metadata);
        return;
      }
      case 'resourceGroupGrants': {
        const stream = groupStream(apiKey, organizationId, targetId);
        const resource = item.resource!;
        // Stale: the group was granted the re-created resource after the deletion. A group
        // deleted meanwhile took its grants with it: the revoke then appends nothing.
        const events = await this.events.readStream(stream);
        const regranted = events.some((e) => e.type === 'GroupAccessGranted' && e.position > item.seq &&
          (e.data as { resourceType: string }).resourceType === resource.resourceType &&
          (e.data as { resourceId: string }).resourceId === resource.resourceId);
        if (regranted) return;
        await this.commands.handle(groupDecider, stream, {
          type: 'RevokeGroupAccess',
          data: { organizationId, groupId: targetId, resources: [resource] },
          metadata: { now },
        }, metadata);
        return;
      }
      case 'group': {
        const stream = groupStream(apiKey, organizationId, targetId);
        if (await this.stale(stream, item, 'UserGroupAdded')) return;
        await this.commands.handle(groupDecider, stream, {
          type: 'DeleteGroup',
          data: { organizationId, groupId: targetId },
          metadata: { now },
        }, metadata);
        return;
      }
    }
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      let done = 0;
      this.wakeup.take();
      try {
        done = await this.drain();
        failures = 0;
      } catch (err) {
        // Items stay queued: log, back off, try again.
        failures++;
        this.log.error({ err }, 'cascade batch failed; retrying');
      }
      if (done === 0 && this.running) await this.wakeup.sleep(failures ? Math.min(5000, 100 * 2 ** failures) : this.pollMs);
    }
  }
}
