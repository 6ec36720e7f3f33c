/**
 * Read model `users`: one profile per user of an API key (semantics §5), its personal fields
 * as the log holds them (sealed: src/secrets/personal.ts; the use cases open them). A user
 * whose data was erased (users/data/delete) has no row; `user_data_jobs` counts each
 * deletion job's erased users for users/data/delete/status.
 */
import type { Doc } from '../src/ports/read-store.js';
import { key } from '../src/shared/ids.js';
import { defineProjection } from '../src/runtime/projection.js';
import type { UserEvent } from '../commands/user.js';
import { apiKeyOf } from './organizations.js';

export const USERS = 'users';

export interface UserDoc extends Doc {
  apiKey: string;
  userId: string;
  name: string;
  email: string;
  initial: string;
}

export const userKey = (apiKey: string, userId: string) => key(apiKey, userId);

export const USER_DATA_JOBS = 'user_data_jobs';

export interface UserDataJobDoc extends Doc {
  apiKey: string;
  jobId: string;
  tasksCount: number;
  /** The users erased so far, each once (a replay adds nothing). */
  erased: string[];
  lastTaskCompletedTime: number;
}

export const userDataJobKey = (apiKey: string, jobId: string) => key(apiKey, jobId);


export const usersProjection = defineProjection<UserEvent>({
  name: 'users',
  // The users of an API key: whom a dry run's access changes are reported for (src/usecases/access-changes.ts).
  indexes: [{ collection: USERS, fields: ['apiKey', 'userId'] }],
  handlers: {
    async UserAdded(e, tx) {
      const d = e.data;
      const doc: UserDoc = { _id: userKey(apiKeyOf(e), d.userId), apiKey: apiKeyOf(e), userId: d.userId, name: d.name, email: d.email, initial: d.initial };
      await tx.upsert(USERS, doc);
    },
    async UserProfileUpdated(e, tx) {
      const { userId, ...changes } = e.data;
      await tx.patch(USERS, userKey(apiKeyOf(e), userId), changes);
    },
    async UserErased(e, tx) {
      const apiKey = apiKeyOf(e);
      const { userId, jobId, jobTasks, erasedAt } = e.data;
      await tx.delete(USERS, userKey(apiKey, userId));
      const id = userDataJobKey(apiKey, jobId);
      const job = await tx.get<UserDataJobDoc>(USER_DATA_JOBS, id);
      const erased = job?.erased.includes(userId) ? job.erased : [...(job?.erased ?? []), userId];
      const last = Math.max(job?.lastTaskCompletedTime ?? 0, erasedAt);
      await tx.upsert(USER_DATA_JOBS, { _id: id, apiKey, jobId, tasksCount: jobTasks, erased, lastTaskCompletedTime: last } satisfies UserDataJobDoc);
    },
  },
});
