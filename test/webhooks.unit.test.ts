/** Webhook signatures (Standard Webhooks test vector), triggers, payload redaction. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { signPayload, verifySignature } from '../src/webhooks/signature.js';
import { triggerOf } from '../src/webhooks/triggers.js';
import { processedPayload, rawPayload } from '../src/webhooks/payloads.js';
import { streamName } from '../src/ids.js';
import type { RecordedEvent } from '../src/ports/event-store.js';

const U = suite('webhooks: signatures, triggers, payloads');

U('the Standard Webhooks reference vector signs and verifies', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const sig = signPayload(secret, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
  assert.is(sig, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  const h = { id: 'msg_p5jXN8AQM9LWM0D4loKWxJek', timestamp: '1614265330', signature: `v1,bogus ${sig}` };
  assert.ok(verifySignature(secret, h, '{"test": 2432232314}', 1614265330));
  assert.not.ok(verifySignature(secret, h, '{"test": 2432232314}', 1614265330 + 3600), 'stale timestamp');
  assert.not.ok(verifySignature('whsec_other', h, '{"test": 2432232314}', 1614265330), 'other secret');
  // A plain token is used as UTF-8 bytes.
  assert.match(signPayload('plain-token', 'id', 1, 'b'), /^v1,[A-Za-z0-9+/]+=*$/);
});

U('triggers: areas from stream categories; workspace events are never delivered', () => {
  assert.is(triggerOf(streamName('workspace', 'w')), null);
  assert.is(triggerOf(streamName('agent', 'k', 'a')), 'agent');
  assert.is(triggerOf(streamName('agentGroup', 'k', 'g')), 'agent');
  assert.is(triggerOf(streamName('organization', 'k', 'o')), 'organization');
  assert.is(triggerOf(streamName('document', 'k', 'o', 'd')), 'document');
  assert.is(triggerOf(streamName('grants', 'k', 'o', 'u')), 'user');
  assert.is(triggerOf(streamName('userGroup', 'k', 'o', 'g')), 'group');
  assert.is(triggerOf(streamName('somethingNew', 'k')), 'other');
});

U('payloads redact secrets; processed reads like a sentence', () => {
  const e: RecordedEvent = {
    id: 'e1', stream: streamName('document', 'k', 'org', 'd1'), revision: 3, position: '9', type: 'DocumentAdded',
    data: { organizationId: 'org', documentId: 'd1', documentName: 'Plan', nested: { authToken: 'shh' } },
    metadata: { requestId: 'r', actor: 'apikey:k', time: 5, apiKey: 'k' },
  };
  const raw = rawPayload(e);
  assert.equal(raw.stream, { category: 'document', ids: ['org', 'd1'] });
  assert.equal((raw.data as any).nested, { authToken: '__redacted__' });
  const p = processedPayload(e);
  assert.is(p.message, 'Document added: "Plan" (d1) in organization org.');
  assert.equal(p.resource, { organizationId: 'org', documentId: 'd1' });
});

U.run();
