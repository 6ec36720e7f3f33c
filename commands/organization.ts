/**
 * Organization aggregate: the organization's existence, name and disabled flag, AND its
 * folder tree (commands/folder-tree.ts), in one stream per organization:
 * `streamName('organization', apiKey, organizationId)`.
 *
 * Why one stream and not a separate tree aggregate: `createOrganization: true` on
 * folders/add creates the organization and its folders in one atomic append; deleting an
 * organization resets its tree in the same event, so a re-created organization can never
 * see the folders of the deleted one; and every folder decision needs "does the
 * organization exist" anyway. Organization-level writes (rename, disable) are rare, so
 * sharing the stream with folder writes costs nothing measurable.
 */
import { ApiError, assertNever, notFound } from '../src/shared/errors.js';
import type { Command, DomainEvent, Planned, PlanningDecider } from '../src/runtime/decider.js';
import {
  emptyTree,
  evolveTree,
  getFolder,
  planAddFolders,
  planFolderAccess,
  planUpdateFolders,
  subtreeOf,
  type AccessType,
  type FolderChange,
  type FolderEvent,
  type ItemOutcome,
  type NewFolder,
  type Tree,
} from './folder-tree.js';
import { streamName } from '../src/shared/ids.js';

/** The stream of one aggregate of this decider: a name no client id can reach into (src/shared/ids.ts). */
export const organizationStream = (apiKey: string, organizationId: string) => streamName('organization', apiKey, organizationId);

// ---- events ----

export type OrganizationEvent =
  | DomainEvent<'OrganizationCreated', { organizationId: string; organizationName: string; createdAt: number }>
  | DomainEvent<'OrganizationRenamed', { organizationId: string; organizationName: string }>
  | DomainEvent<'OrganizationDisabledStateChanged', { organizationId: string; disabled: boolean }>
  | DomainEvent<'OrganizationDeleted', { organizationId: string; deletedAt: number }>
  | FolderEvent;

// ---- state ----

export type OrganizationState =
  | { status: 'none' }
  | { status: 'active'; organizationName: string; disabled: boolean; tree: Tree };

const initialState = (): OrganizationState => ({ status: 'none' });

// ---- evolve ----

function evolve(state: OrganizationState, event: OrganizationEvent): OrganizationState {
  switch (event.type) {
    case 'OrganizationCreated':
      return state.status === 'none'
        ? { status: 'active', organizationName: event.data.organizationName, disabled: false, tree: emptyTree() }
        : state;
    case 'OrganizationDeleted':
      return { status: 'none' };
    default:
      break;
  }
  if (state.status !== 'active') return state;
  switch (event.type) {
    case 'OrganizationRenamed':
      return { ...state, organizationName: event.data.organizationName };
    case 'OrganizationDisabledStateChanged':
      return { ...state, disabled: event.data.disabled };
    default:
      return { ...state, tree: evolveTree(state.tree, event) };
  }
}

// ---- commands ----

interface OrgRef {
  organizationId: string;
}

export type OrganizationCommand =
  /**
   * `ifMissing`: an existing organization is left as it is (createOrganization: true).
   * `updateExisting`: an existing organization takes the given name (organizations/add: the
   * hosted API documents "If an organization already exists, this will update its metadata").
   */
  | Command<'CreateOrganization', OrgRef & { organizationName?: string; ifMissing?: boolean; updateExisting?: boolean }>
  | Command<'RenameOrganization', OrgRef & { organizationName: string }>
  | Command<'SetOrganizationDisabled', OrgRef & { disabled: boolean }>
  | Command<'DeleteOrganization', OrgRef>
  /** `maxDepth`: the operator's FOLDER_MAX_DEPTH (src/config/config.ts); default DEFAULT_FOLDER_MAX_DEPTH. */
  | Command<'AddFolders', OrgRef & { createOrganization?: boolean; folders: NewFolder[]; maxDepth?: number }>
  | Command<'UpdateFolders', OrgRef & { folders: FolderChange[]; maxDepth?: number }>
  | Command<'SetFolderAccess', OrgRef & { folderIds: string[]; accessType: AccessType | null }>
  | Command<'DeleteFolder', OrgRef & { folderId: string }>;

// ---- decide ----

export const organizationNotFound = () => notFound('Organization does not exist.');
/** The spec's own shape for this one failure: `{ error: { code: "not-found", message } }`. */
const folderNotFound = () => new ApiError('NOT_FOUND', 'Folder not found.', undefined, undefined, { code: 'not-found' });

const created = (organizationId: string, organizationName: string | undefined, now: number): OrganizationEvent => ({
  type: 'OrganizationCreated',
  data: { organizationId, organizationName: organizationName ?? organizationId, createdAt: now },
});

function active(state: OrganizationState) {
  if (state.status !== 'active') throw organizationNotFound();
  return state;
}

export type Outcome = ItemOutcome & Record<string, unknown>;
const single = (events: OrganizationEvent[]): Planned<OrganizationEvent, Outcome> => ({ events, outcomes: new Map() });

/** Events and per-item outcomes (a folders batch answers per folder); `decide` keeps the events. */
export function plan(command: OrganizationCommand, state: OrganizationState): Planned<OrganizationEvent, Outcome> {
  const now = command.metadata.now;
  const { organizationId } = command.data;
  switch (command.type) {
    case 'CreateOrganization':
      if (state.status === 'active') {
        if (command.data.ifMissing) return single([]);
        if (command.data.updateExisting) {
          const name = command.data.organizationName;
          return single(name === undefined || name === state.organizationName ? [] : [{ type: 'OrganizationRenamed', data: { organizationId, organizationName: name } }]);
        }
        throw new ApiError('ALREADY_EXISTS', 'Organization already exists.');
      }
      return single([created(organizationId, command.data.organizationName, now)]);
    case 'RenameOrganization': {
      const s = active(state);
      const name = command.data.organizationName;
      return single(s.organizationName === name ? [] : [{ type: 'OrganizationRenamed', data: { organizationId, organizationName: name } }]);
    }
    case 'SetOrganizationDisabled': {
      const s = active(state);
      const disabled = command.data.disabled;
      return single(s.disabled === disabled ? [] : [{ type: 'OrganizationDisabledStateChanged', data: { organizationId, disabled } }]);
    }
    case 'DeleteOrganization':
      active(state);
      return single([{ type: 'OrganizationDeleted', data: { organizationId, deletedAt: now } }]);
    case 'AddFolders': {
      const { folders, maxDepth } = command.data;
      if (state.status === 'active') return planAddFolders(organizationId, state.tree, folders, now, maxDepth);
      if (!command.data.createOrganization) throw organizationNotFound();
      const p = planAddFolders(organizationId, emptyTree(), folders, now, maxDepth);
      return { ...p, events: [created(organizationId, undefined, now), ...p.events] };
    }
    case 'UpdateFolders':
      return planUpdateFolders(organizationId, active(state).tree, command.data.folders, command.data.maxDepth);
    case 'SetFolderAccess':
      return planFolderAccess(organizationId, active(state).tree, command.data.folderIds, command.data.accessType);
    case 'DeleteFolder': {
      const { tree } = active(state);
      if (!getFolder(tree, command.data.folderId)) throw folderNotFound();
      const folderIds = subtreeOf(tree, command.data.folderId);
      return single([{ type: 'FolderDeleted', data: { organizationId, folderId: command.data.folderId, folderIds, deletedAt: now } }]);
    }
    default:
      return assertNever(command, 'organization command');
  }
}

const decide = (command: OrganizationCommand, state: OrganizationState): OrganizationEvent[] =>
  plan(command, state).events;

export const organizationDecider: PlanningDecider<OrganizationState, OrganizationCommand, OrganizationEvent, Outcome> = {
  name: 'organization',
  initialState,
  evolve,
  decide,
  plan,
};
