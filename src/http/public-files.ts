// Files inside one conversation, with its session token: upload one (it joins the tenant pool, tagged with
// the conversation) and list the conversation's files. The front-end never sees file metadata.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { SessionService } from '../actors/session-service.ts';
import type { Config } from '../config.ts';
import { newId } from '../ids.ts';
import type { Store, StoredFile } from '../store/store.ts';
import { conversationParams } from './conversations.ts';
import { fileSchema } from './files.ts';
import { authErrors, errorEnvelope, pageOf, pageQuery } from './schemas.ts';
import { tokenOf } from './session-token-auth.ts';
import { checkUpload, filePart, registerUploads, requireMultipart } from './uploads.ts';

const conversationFile = fileSchema
  .omit({ metadata: true, session_id: true })
  .meta({ id: 'ConversationFile' });

const toConversationFile = ({ metadata: _m, session_id: _s, ...file }: StoredFile) => file;

export const publicFilesRoutes: FastifyPluginAsyncZod<{
  store: Store;
  config: Config;
  sessions: SessionService;
}> = async (app, { store, config, sessions }) => {
  const uploadLimitBytes = config.limits.uploadBytes;
  await registerUploads(app, uploadLimitBytes);

  app.post(
    '/:conversation_id/files',
    {
      onRequest: requireMultipart,
      config: { uploadLimitBytes },
      schema: {
        tags: ['public'],
        summary: 'Upload a file to use in image and file blocks of this conversation',
        consumes: ['multipart/form-data'],
        params: conversationParams,
        body: z.strictObject({ file: filePart }),
        response: {
          201: conversationFile,
          409: errorEnvelope,
          413: errorEnvelope,
          415: errorEnvelope,
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      const token = tokenOf(request);
      await sessions.activeSession(token.tenantId, token.conversationId, () => {});
      const upload = await checkUpload(request.body.file);
      const file = await store.createFile(
        token.tenantId,
        {
          id: newId('file'),
          name: upload.name,
          mime_type: upload.mime_type,
          metadata: {},
          session_id: token.conversationId,
        },
        upload.content,
      );
      return reply.code(201).send(toConversationFile(file));
    },
  );

  app.get(
    '/:conversation_id/files',
    {
      schema: {
        tags: ['public'],
        summary: 'List the files uploaded in this conversation, newest first',
        params: conversationParams,
        querystring: z.object(pageQuery),
        response: { 200: pageOf(conversationFile), ...authErrors },
      },
    },
    async (request) => {
      const token = tokenOf(request);
      await sessions.getSession(token.tenantId, token.conversationId, () => {});
      const page = await store.listFiles(token.tenantId, { session_id: token.conversationId }, request.query);
      return { items: page.items.map(toConversationFile), next_offset: page.next_offset };
    },
  );
};
