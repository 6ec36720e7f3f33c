/** Every route of the domain: organizations, folders, documents, users, groups, permissions. */
import type { Services } from '../../services.js';
import type { AnyRoute } from '../route.js';
import { organizationRoutes } from './organizations.js';
import { folderRoutes } from './folders.js';
import { documentRoutes } from './documents.js';

export function domainRoutes(services: Services): AnyRoute[] {
  return [...organizationRoutes(services), ...folderRoutes(services), ...documentRoutes(services)];
}
