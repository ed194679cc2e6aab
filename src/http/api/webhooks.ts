// Webhook endpoints of a tenant (docs/internals/decisions.md#webhooks), managed with an API key for every
// agent: register (the secret is shown once), list, read, delete, and each endpoint's deliveries. Deliveries
// are sent by src/webhooks/deliverer.ts from the outbox the changes write.
import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  authErrors,
  createdWebhookSchema,
  errorEnvelope,
  pageOf,
  pageQuery,
  webhookCreate,
  webhookDeliverySchema,
  webhookParams,
  webhookSchema,
} from '#schemas';
import { AppError, ValidationError } from '../../errors.ts';
import { newId } from '../../ids.ts';
import type { Store } from '../../store/store.ts';
import { checkWebhookUrl } from '../../webhooks/address-guard.ts';
import { tenantOf } from '../auth/api-key.ts';

/** A tenant's endpoints at most: each event is queued once per subscribed endpoint, in the change's write. */
export const MAX_WEBHOOKS_PER_TENANT = 20;

export interface WebhookRoutesOptions {
  store: Store;
  /** Whether endpoints may be on private or loopback addresses (PARLEY_WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
}

/** Endpoints hear of every agent's conversations, so only a key for every agent manages them. */
function tenantOfAllAgentsKey(request: FastifyRequest): string {
  const tenantId = tenantOf(request);
  if (!request.apiKey?.agents.includes('*')) {
    throw new AppError(
      'forbidden',
      "Webhooks report the conversations of every agent: manage them with an API key for every agent ('*').",
    );
  }
  return tenantId;
}

const notFound = (id: string) =>
  new AppError('webhook_not_found', undefined, { context: { webhook_id: id } });

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export const webhooksRoutes: FastifyPluginAsyncZod<WebhookRoutesOptions> = async (
  app,
  { store, allowPrivate },
) => {
  app.post(
    '/v1/agents/webhooks',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Register a webhook endpoint',
        body: webhookCreate,
        response: { 201: createdWebhookSchema, 409: errorEnvelope, ...authErrors },
      },
    },
    async (request, reply) => {
      const tenantId = tenantOfAllAgentsKey(request);
      const { url, events, secret } = request.body;
      const refused = await checkWebhookUrl(url, allowPrivate);
      if (refused === 'private') {
        throw ValidationError.at(
          ['body', 'url'],
          'URLs on private or loopback addresses are not allowed',
          'url_private',
        );
      }
      if (refused === 'unresolvable') {
        throw ValidationError.at(['body', 'url'], "The URL's host does not resolve", 'url_unresolvable');
      }
      const signing = secret ?? newSecret();
      const stored = await store.createWebhook(
        tenantId,
        { id: newId('wh'), url, events, secret: signing },
        MAX_WEBHOOKS_PER_TENANT,
      );
      if (!stored) {
        throw new AppError('webhook_limit_reached', undefined, {
          context: { limit: MAX_WEBHOOKS_PER_TENANT },
        });
      }
      return reply.code(201).send({ ...stored, secret: signing });
    },
  );

  app.get(
    '/v1/agents/webhooks',
    {
      schema: {
        tags: ['webhooks'],
        summary: "List the tenant's webhook endpoints, oldest first",
        response: { 200: z.object({ items: z.array(webhookSchema) }), ...authErrors },
      },
    },
    async (request) => ({ items: await store.listWebhooks(tenantOfAllAgentsKey(request)) }),
  );

  app.get(
    '/v1/agents/webhooks/:webhook_id',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Get a webhook endpoint',
        params: webhookParams,
        response: { 200: webhookSchema, ...authErrors },
      },
    },
    async (request) => {
      const webhook = await store.getWebhook(tenantOfAllAgentsKey(request), request.params.webhook_id);
      if (!webhook) throw notFound(request.params.webhook_id);
      return webhook;
    },
  );

  app.delete(
    '/v1/agents/webhooks/:webhook_id',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Delete a webhook endpoint and its deliveries',
        params: webhookParams,
        response: { 204: z.null().meta({ description: 'Deleted' }), ...authErrors },
      },
    },
    async (request, reply) => {
      const deleted = await store.deleteWebhook(tenantOfAllAgentsKey(request), request.params.webhook_id);
      if (!deleted) throw notFound(request.params.webhook_id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/v1/agents/webhooks/:webhook_id/deliveries',
    {
      schema: {
        tags: ['webhooks'],
        summary: "List an endpoint's deliveries, newest first",
        params: webhookParams,
        querystring: z.object(pageQuery),
        response: { 200: pageOf(webhookDeliverySchema), ...authErrors },
      },
    },
    async (request) => {
      const { limit, offset } = request.query;
      const page = await store.listWebhookDeliveries(
        tenantOfAllAgentsKey(request),
        request.params.webhook_id,
        { limit, offset },
      );
      if (!page) throw notFound(request.params.webhook_id);
      return page;
    },
  );
};
