/** Every route of the domain: organizations, folders, documents (and their migration), users, personal data, groups, permissions, access queries. */
import type { Services } from '../../composition/services.js';
import type { AnyRoute } from '../route.js';
import { organizationRoutes } from './organizations.js';
import { folderRoutes } from './folders.js';
import { documentRoutes } from './documents.js';
import { documentMigrationRoutes } from './document-migration.js';
import { userRoutes } from './users.js';
import { userDataRoutes } from './user-data.js';
import { groupRoutes } from './groups.js';
import { permissionRoutes } from './permissions.js';
import { accessQueryRoutes } from './access-queries.js';

export function domainRoutes(services: Services): AnyRoute[] {
  return [
    ...organizationRoutes(),
    ...folderRoutes(),
    ...documentRoutes(services),
    ...documentMigrationRoutes(),
    ...userRoutes(services),
    ...userDataRoutes(),
    ...groupRoutes(),
    ...permissionRoutes(),
    ...accessQueryRoutes(services),
  ];
}
