/**
 * `/v2/workspace/domains/add`, `delete`, `get` (API-key mode, as the hosted API): the calling
 * key's allowed domains, the origins whose browser pages may call the user-token routes
 * (src/http/cors.ts). What an entry is and how it is normalized: commands/allowed-domains.ts;
 * what each route does: src/usecases/allowed-domains.ts.
 *
 * Messages and shapes are the hosted API's. One deliberate difference (docs/compatibility.md):
 * when some entries were already there (add) or not there (delete), the hosted API answers
 * `500 INTERNAL` with `domainsAdded`/`domainsRemoved` and `skippedDomains` in
 * `error.details`; here the call succeeds, with the hosted message for that case and the same
 * two lists in `data`, since nothing failed and a client retrying on a 500 would loop.
 */
import { z } from 'zod';
import { MAX_DOMAIN_INPUT, MAX_DOMAINS_PER_CALL, MAX_DOMAINS_PER_KEY } from '../../../commands/allowed-domains.js';
import { addAllowedDomains, listAllowedDomains, removeAllowedDomains } from '../../usecases/allowed-domains.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { text } from '../validation.js';

const domainsInput = () => z.object({ domains: z.array(text(MAX_DOMAIN_INPUT)).min(1).max(MAX_DOMAINS_PER_CALL) });

const entryList = (what: string) => z.array(z.string()).describe(what);

const RULES = [
  'An entry is a domain (`example.com`), a wildcard (`*.example.com`: every subdomain, not the domain itself), `localhost` or an IPv4 address, optionally with `:port` (then only that port; without one, every port).',
  'Entries may be sent as URLs: the scheme, a leading `www.` and a trailing `/` are stripped, and the entry is stored lower case (`"https://www.Example.com/"` is `example.com`, which admits `www.example.com` too).',
  'Entries admit `https` pages only, except `localhost` and `127.0.0.1`, which admit `http` too: `http://example.com` is refused.',
  `At most ${MAX_DOMAINS_PER_CALL} entries per call, each at most ${MAX_DOMAIN_INPUT} characters as sent; a key holds at most ${MAX_DOMAINS_PER_KEY} (beyond it \`RESOURCE_EXHAUSTED\`, nothing added).`,
].map((l) => `- ${l}`).join('\n');

export function allowedDomainRoutes(): AnyRoute[] {
  const add = defineRoute({
    path: '/v2/workspace/domains/add',
    tag: 'API keys',
    doc: {
      summary: 'Add allowed domains to the calling API key',
      description: [
        'Allowed domains are the origins whose browser pages may call the user-token routes with a user token (CORS; docs/api.md).',
        '',
        RULES,
        '- Entries the key already holds are skipped: the answer then says "Skipped existing domains." and lists them in `skippedDomains`.',
        '- An invalid entry refuses the whole call (`INVALID_ARGUMENT` naming it).',
      ].join('\n'),
      example: { domains: ['https://www.example.com', 'https://*.example.org', 'localhost:3000'] },
    },
    mutates: true,
    auth: 'apiKey',
    schema: domainsInput(),
    response: z.object({
      domainsAdded: entryList('The entries added, in stored form.'),
      skippedDomains: entryList('Present when some entries were held already: those, in stored form.').optional(),
    }),
    // NOT_FOUND: the calling key was deleted since it authenticated this request.
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const { added, skipped } = await addAllowedDomains(ctx, data.domains);
      return skipped.length === 0
        ? { message: 'Domain(s) added successfully to allowed domains.', data: { domainsAdded: added } }
        : { message: 'Domain(s) added successfully to allowed domains. Skipped existing domains.', data: { domainsAdded: added, skippedDomains: skipped } };
    },
  });

  const remove = defineRoute({
    path: '/v2/workspace/domains/delete',
    tag: 'API keys',
    doc: {
      summary: 'Remove allowed domains from the calling API key',
      description: [
        'Entries are normalized as `domains/add` does before they are compared (`"https://www.example.com"` removes `example.com`); one the key does not hold is skipped: the answer then says "Skipped non-existing domains." and lists it in `skippedDomains`.',
        `At most ${MAX_DOMAINS_PER_CALL} entries per call, each at most ${MAX_DOMAIN_INPUT} characters.`,
        '',
        'A removed origin gets no CORS headers on the next request; a browser may still use a preflight answer it cached, for at most 10 minutes (`Access-Control-Max-Age`), which lets it send the request but not read the answer.',
      ].join('\n'),
      example: { domains: ['https://www.example.com'] },
    },
    mutates: true,
    auth: 'apiKey',
    schema: domainsInput(),
    response: z.object({
      domainsRemoved: entryList('The entries removed, in stored form.'),
      skippedDomains: entryList('Present when some entries were not held: those, normalized.').optional(),
    }),
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const { removed, skipped } = await removeAllowedDomains(ctx, data.domains);
      return skipped.length === 0
        ? { message: 'Domain(s) removed successfully from allowed domains.', data: { domainsRemoved: removed } }
        : { message: 'Domain(s) removed successfully from allowed domains. Skipped non-existing domains.', data: { domainsRemoved: removed, skippedDomains: skipped } };
    },
  });

  const get = defineRoute({
    path: '/v2/workspace/domains/get',
    tag: 'API keys',
    doc: {
      summary: 'List the calling API key\'s allowed domains',
      description: 'The entries in stored form (`example.com`, `*.example.com`, `localhost:3000`), in the order they were added.',
      example: {},
    },
    mutates: false,
    auth: 'apiKey',
    schema: z.object({}),
    response: z.object({ allowedDomains: entryList('The key\'s entries.') }),
    errors: ['NOT_FOUND'],
    handler: async (_data, ctx) => ({ message: 'Allowed domains retrieved successfully.', data: { allowedDomains: await listAllowedDomains(ctx) } }),
  });

  return [add, remove, get];
}
