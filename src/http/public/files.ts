// Files inside one conversation, with its session token: upload one (it joins the tenant pool, tagged with
// the conversation) and list the conversation's files. The front-end never sees file metadata.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authErrors, conversationFile, conversationParams, errorEnvelope, pageOf, pageQuery } from '#schemas';
import type { SessionService } from '../../actors/session-service.ts';
import type { Config } from '../../config.ts';
import { newId } from '../../ids.ts';
import type { FileQuota, Store } from '../../store/store.ts';
import { toConversationFile } from '../../store/views.ts';
import { tokenSession } from '../auth/session-target.ts';
import { onConversation } from '../server/route-config.ts';
import { checkUpload, filePart, registerUploads, requireMultipart } from '../server/uploads.ts';

export const publicFilesRoutes: FastifyPluginAsyncZod<{
  store: Store;
  config: Config;
  sessions: SessionService;
  /** The upload quota of a tenant's conversations. */
  quotaOf: (tenantId: string) => FileQuota;
}> = async (app, { store, config, sessions, quotaOf }) => {
  const uploadLimitBytes = config.limits.uploadBytes;
  await registerUploads(app, uploadLimitBytes);

  app.post(
    '/:conversation_id/files',
    {
      onRequest: requireMultipart,
      config: { ...onConversation, uploadLimitBytes },
      schema: {
        tags: ['public'],
        summary: 'Upload a file to use in image and file blocks of this conversation',
        consumes: ['multipart/form-data'],
        params: conversationParams,
        body: z.strictObject({ file: filePart }),
        response: {
          201: conversationFile,
          409: errorEnvelope,
          // file_too_large, conversation_file_quota or tenant_file_quota
          413: errorEnvelope,
          415: errorEnvelope,
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      const { tenantId, sessionId, authorize } = tokenSession(request);
      await sessions.activeSession(tenantId, sessionId, authorize);
      const upload = await checkUpload(request.body.file);
      const file = await store.createFile(
        tenantId,
        {
          id: newId('file'),
          name: upload.name,
          mime_type: upload.mime_type,
          metadata: {},
          session_id: sessionId,
        },
        upload.content,
        quotaOf(tenantId),
      );
      return reply.code(201).send(toConversationFile(file));
    },
  );

  app.get(
    '/:conversation_id/files',
    {
      config: onConversation,
      schema: {
        tags: ['public'],
        summary: 'List the files uploaded in this conversation, newest first',
        params: conversationParams,
        querystring: z.object(pageQuery),
        response: { 200: pageOf(conversationFile), ...authErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = tokenSession(request);
      await sessions.getSession(tenantId, sessionId, authorize);
      const page = await store.listFiles(tenantId, { session_id: sessionId }, request.query);
      return { items: page.items.map(toConversationFile), next_offset: page.next_offset };
    },
  );
};
