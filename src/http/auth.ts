/**
 * Authentication for the four modes of route.ts. Missing headers: UNAUTHENTICATED; a wrong
 * pair: PERMISSION_DENIED (spec "Authentication" rule 1, applied to API keys too).
 */
import type { FastifyRequest } from 'fastify';
import { timingSafeEqual, createHash } from 'node:crypto';
import { permissionDenied, unauthenticated } from '../errors.js';
import { verifyApiKey, verifyWorkspace } from '../../queries/credentials.js';
import type { Services } from '../services.js';
import type { AuthMode } from './route.js';
import type { Tenant } from './context.js';

export interface Caller {
  actor: string;
  tenant?: Tenant;
  workspaceId?: string;
}

/** A header value as one string; a repeated header or an absurd length counts as malformed. */
function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string' || v.length > 512) throw permissionDenied(`Header ${name} is malformed.`);
  return v;
}

function requireHeaders(req: FastifyRequest, names: [string, string]): [string, string] {
  const values = names.map((n) => header(req, n));
  const missing = names.filter((_, i) => values[i] === undefined);
  if (missing.length > 0) throw unauthenticated(`Missing authentication header(s): ${missing.join(', ')}.`);
  return values as [string, string];
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export async function authenticate(req: FastifyRequest, mode: AuthMode, services: Services): Promise<Caller> {
  switch (mode) {
    case 'open':
      return { actor: 'anonymous' };
    case 'admin': {
      const expected = services.config.adminToken;
      if (!expected) return { actor: 'anonymous' };
      const given = header(req, 'x-service-admin-token');
      if (!given) throw unauthenticated('Missing authentication header(s): x-service-admin-token.');
      if (!timingSafeEqual(digest(given), digest(expected))) throw permissionDenied('Invalid admin token.');
      return { actor: 'admin' };
    }
    case 'workspace': {
      const [id, token] = requireHeaders(req, ['x-service-workspace-id', 'x-service-workspace-auth-token']);
      const ws = await verifyWorkspace(services.read, id, token);
      if (!ws) throw permissionDenied('Invalid workspace credentials.');
      return { actor: `workspace:${ws._id}`, workspaceId: ws._id };
    }
    case 'apiKey': {
      const [apiKey, token] = requireHeaders(req, ['x-service-api-key', 'x-service-auth-token']);
      const key = await verifyApiKey(services.read, apiKey, token);
      if (!key) throw permissionDenied('Invalid API key or auth token.');
      return {
        actor: `apikey:${key._id}`,
        tenant: { apiKey: key._id, workspaceId: key.workspaceId, type: key.type },
      };
    }
  }
}
