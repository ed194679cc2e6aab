// End-users of a tenant (server-side family): create, read, list, partial update, soft delete.
// `reference` is the integrator's own label, unique among the tenant's live users.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  authErrors,
  errorEnvelope,
  pageOf,
  userFields,
  userListQuery,
  userParams,
  userSchema,
} from '#schemas';
import { AppError } from '../../errors.ts';
import { newId } from '../../ids.ts';
import type { Store, UserFields } from '../../store/store.ts';
import { userDeletedEvent } from '../../webhooks/webhook-events.ts';
import { tenantOf } from '../auth/api-key.ts';
import { withUsage } from './usage.ts';

/** Request fields → store fields; an explicit null metadata/info resets it to `{}`. */
function toStoreFields(body: z.infer<typeof userFields>): UserFields {
  const { metadata, info, ...scalars } = body;
  return {
    ...scalars,
    ...(metadata !== undefined ? { metadata: metadata ?? {} } : {}),
    ...(info !== undefined ? { info: info ?? {} } : {}),
  };
}

const notFound = (id: string) => new AppError('user_not_found', undefined, { context: { user_id: id } });

export const usersRoutes: FastifyPluginAsyncZod<{ store: Store }> = async (app, { store }) => {
  app.post(
    '/v1/agents/users',
    {
      schema: {
        tags: ['users'],
        summary: 'Create an end-user',
        body: userFields,
        response: { 201: userSchema, 409: errorEnvelope, ...authErrors },
      },
    },
    async (request, reply) => {
      const user = await store.createUser(tenantOf(request), newId('usr'), toStoreFields(request.body));
      return reply.code(201).send(withUsage([user], new Map())[0]);
    },
  );

  app.get(
    '/v1/agents/users',
    {
      schema: {
        tags: ['users'],
        summary: 'List end-users, newest first',
        querystring: userListQuery,
        response: { 200: pageOf(userSchema), ...authErrors },
      },
    },
    async (request) => {
      const { limit, offset, reference, email } = request.query;
      const tenantId = tenantOf(request);
      const page = await store.listUsers(tenantId, { reference, email }, { limit, offset });
      const usage = await store.userUsage(
        tenantId,
        page.items.map((u) => u.id),
      );
      return { items: withUsage(page.items, usage), next_offset: page.next_offset };
    },
  );

  app.get(
    '/v1/agents/users/:user_id',
    {
      schema: {
        tags: ['users'],
        summary: 'Read an end-user',
        params: userParams,
        response: { 200: userSchema, ...authErrors },
      },
    },
    async (request) => {
      const tenantId = tenantOf(request);
      const user = await store.getUser(tenantId, request.params.user_id);
      if (!user) throw notFound(request.params.user_id);
      return withUsage([user], await store.userUsage(tenantId, [user.id]))[0];
    },
  );

  app.patch(
    '/v1/agents/users/:user_id',
    {
      schema: {
        tags: ['users'],
        summary: 'Update an end-user; each given field replaces the stored value',
        params: userParams,
        body: userFields,
        response: { 200: userSchema, 409: errorEnvelope, ...authErrors },
      },
    },
    async (request) => {
      const tenant = tenantOf(request);
      const fields = toStoreFields(request.body);
      const user =
        Object.keys(fields).length === 0
          ? await store.getUser(tenant, request.params.user_id)
          : await store.updateUser(tenant, request.params.user_id, fields);
      if (!user) throw notFound(request.params.user_id);
      return withUsage([user], await store.userUsage(tenant, [user.id]))[0];
    },
  );

  app.delete(
    '/v1/agents/users/:user_id',
    {
      schema: {
        tags: ['users'],
        summary: 'Delete an end-user (soft; frees the reference)',
        params: userParams,
        response: { 204: z.null().meta({ description: 'Deleted' }), ...authErrors },
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request);
      const { user_id } = request.params;
      const deleted = await store.deleteUser(tenantId, user_id, (deletedAt) =>
        userDeletedEvent(tenantId, user_id, deletedAt),
      );
      if (!deleted) throw notFound(user_id);
      return reply.code(204).send(null);
    },
  );
};
