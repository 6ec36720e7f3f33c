/**
 * An organization's folder tree, as every use case that checks a folder or needs the
 * organization to exist reads it (documents, users, groups).
 */
import { organizationDecider, organizationNotFound, organizationStream } from '../../commands/organization.js';
import type { Tree } from '../../commands/folder-tree.js';
import type { Services } from '../composition/services.js';

/** The tree of an active organization; NOT_FOUND when it does not exist or was deleted. */
export async function organizationTree(services: Pick<Services, 'commands'>, apiKey: string, organizationId: string): Promise<Tree> {
  const { state } = await services.commands.load(organizationDecider, organizationStream(apiKey, organizationId));
  if (state.status !== 'active') throw organizationNotFound();
  return state.tree;
}
