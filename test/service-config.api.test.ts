/** /v2/workspace/emailconfig/update and /webhookconfig/update: merge, answer, redaction. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { harness, type Harness, type Tenant } from './support/app.js';
import { API_KEYS } from '../projections/workspaces.js';
import { DEFAULT_EMAIL_TRIGGERS, DEFAULT_WEBHOOK_TRIGGERS } from '../src/webhooks/triggers.js';

const S = suite<{ h: Harness; t: Tenant }>('service config API');
S.before(async (ctx) => {
  ctx.h = await harness();
  ctx.t = await ctx.h.tenant();
});
S.after(async (ctx) => ctx.h.close());

const ok = (res: { status: number; body: any }, message?: string) => {
  assert.is(res.status, 200, JSON.stringify(res.body));
  if (message) assert.is(res.body.result.message, message);
  return res.body.result.data;
};
const fails = (res: { status: number; body: any }, http: number, status: string, message?: RegExp) => {
  assert.is(res.status, http, JSON.stringify(res.body));
  assert.is(res.body.error.status, status);
  if (message) assert.match(res.body.error.message, message);
};
/** A refusal in the hosted API's words, the cause in details.reason. */
const refused = (res: { status: number; body: any }, message: string, reason: RegExp) => {
  assert.is(res.status, 400, JSON.stringify(res.body));
  assert.is(res.body.error.status, 'INVALID_ARGUMENT');
  assert.is(res.body.error.message, message);
  assert.match(res.body.error.details.reason, reason);
};
const BAD_EMAIL = 'Invalid email service configuration.';
const BAD_WEBHOOK = 'Invalid webhook service configuration.';

S('webhook config: first enable seeds triggers, secrets never returned, later updates merge', async ({ h, t }) => {
  const d = ok(await h.post('/v2/workspace/webhookconfig/update', {
    useWebhookService: true,
    webhookServiceConfig: { authToken: 'hook-secret-123', rawNotificationUrl: 'https://hooks.example.com/raw' },
  }, t.headers), 'Webhook configuration updated successfully.');
  assert.equal(d, {
    useWebhookService: true,
    webhookServiceConfig: { authToken: '__redacted__', rawNotificationUrl: 'https://hooks.example.com/raw' },
    triggers: DEFAULT_WEBHOOK_TRIGGERS,
    disabledEndpoints: [],
  });
  const d2 = ok(await h.post('/v2/workspace/webhookconfig/update', { processedNotificationUrl: 'https://hooks.example.com/p', triggers: ['document', 'document', 'agent'] }, t.headers));
  assert.equal(d2.webhookServiceConfig, { authToken: '__redacted__', rawNotificationUrl: 'https://hooks.example.com/raw', processedNotificationUrl: 'https://hooks.example.com/p' });
  assert.equal(d2.triggers, ['document', 'agent']);
  const key = await h.services.read.get<any>(API_KEYS, t.apiKey);
  assert.is(key.settings.useWebhookService, true);
  assert.is(key.settings.webhookServiceConfig.authToken, '__redacted__');
  assert.not.ok(JSON.stringify(key).includes('hook-secret-123'), 'no secret in the read model');
});

S('email config: validate, merge, redact the provider key', async ({ h, t }) => {
  refused(await h.post('/v2/workspace/emailconfig/update', { useEmailService: true, emailServiceConfig: { type: 'sendgrid' } }, t.headers), BAD_EMAIL, /apiKey/);
  const d = ok(await h.post('/v2/workspace/emailconfig/update', { useEmailService: true, emailServiceConfig: { type: 'sendgrid', apiKey: 'SG.secret', fromEmail: 'no-reply@example.com' } }, t.headers), 'Email configuration updated successfully.');
  assert.equal(d, { useEmailService: true, emailServiceConfig: { type: 'sendgrid', apiKey: '__redacted__', fromEmail: 'no-reply@example.com' }, triggers: DEFAULT_EMAIL_TRIGGERS });
  const d2 = ok(await h.post('/v2/workspace/emailconfig/update', { fromCompany: 'ACME', fromEmail: '' }, t.headers));
  assert.equal(d2.emailServiceConfig, { type: 'sendgrid', apiKey: '__redacted__', fromCompany: 'ACME' });
  const d3 = ok(await h.post('/v2/workspace/emailconfig/update', { useEmailService: false }, t.headers));
  assert.is(d3.useEmailService, false);
});

S('bad input gets the failure envelope: the hosted message, the cause in details', async ({ h, t }) => {
  refused(await h.post('/v2/workspace/webhookconfig/update', { rawNotificationUrl: 'ftp://x' }, t.headers), BAD_WEBHOOK, /data\.rawNotificationUrl must be an http\(s\) URL/);
  refused(await h.post('/v2/workspace/webhookconfig/update', { triggers: ['everything'] }, t.headers), BAD_WEBHOOK, /data\.triggers\[0\] must be one of/);
  refused(await h.post('/v2/workspace/webhookconfig/update', { useWebhookService: 'yes' }, t.headers), BAD_WEBHOOK, /data\.useWebhookService must be a boolean/);
  refused(await h.post('/v2/workspace/webhookconfig/update', {}, t.headers), BAD_WEBHOOK, /At least one of useWebhookService or webhookServiceConfig/);
  refused(await h.post('/v2/workspace/emailconfig/update', { emailServiceConfig: { fromEmail: 'nope' } }, t.headers), BAD_EMAIL, /data\.emailServiceConfig\.fromEmail must be a valid email/);
  refused(await h.post('/v2/workspace/emailconfig/update', {}, t.headers), BAD_EMAIL, /At least one of useEmailService or emailServiceConfig/);
  const fields = (await h.post('/v2/workspace/emailconfig/update', { emailServiceConfig: { fromEmail: 'nope' } }, t.headers)).body.error.details.fields;
  assert.equal(fields, [{ field: 'data.emailServiceConfig.fromEmail', code: 'invalid_format' }]);
  const other = await h.tenant();
  refused(await h.post('/v2/workspace/webhookconfig/update', { useWebhookService: true }, other.headers), BAD_WEBHOOK, /rawNotificationUrl or processedNotificationUrl/);
  fails(await h.post('/v2/workspace/webhookconfig/update', {}, {}), 401, 'UNAUTHENTICATED');
  // workspace credentials are not API-key credentials
  fails(await h.post('/v2/workspace/webhookconfig/update', {}, t.workspaceHeaders), 401, 'UNAUTHENTICATED');
  // a body without data is still refused before anything else
  const noData = await h.raw('/v2/workspace/emailconfig/update', '{}', t.headers);
  assert.is(noData.status, 400);
});

S.run();
