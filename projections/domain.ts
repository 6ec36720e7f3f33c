/** The read models of the domain (organizations, folders, documents, grants, users, groups, group grants, document migrations). */
import type { Projection } from '../src/runtime/projection.js';
import { organizationsProjection } from './organizations.js';
import { foldersProjection } from './folders.js';
import { documentsProjection } from './documents.js';
import { grantsProjection } from './grants.js';
import { usersProjection } from './users.js';
import { groupsProjection } from './groups.js';
import { groupGrantsProjection } from './group-grants.js';
import { documentMigrationsProjection } from './document-migrations.js';

export const domainProjections: Projection[] = [
  organizationsProjection,
  foldersProjection,
  documentsProjection,
  grantsProjection,
  usersProjection,
  groupsProjection,
  groupGrantsProjection,
  documentMigrationsProjection,
];
