/** Read model `users`: one profile per user of an API key (semantics §5). */
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


export const usersProjection = defineProjection<UserEvent>({
  name: 'users',
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
  },
});
