// The tenant's file pool (server-side family): upload, list with filters, read, download, delete.
import type { MultipartValue } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  authErrors,
  errorEnvelope,
  fileListQuery,
  fileParams,
  fileSchema,
  metadataSchema,
  pageOf,
} from '#schemas';
import { authorizeFile } from '../../actors/session-service.ts';
import { AppError, ValidationError } from '../../errors.ts';
import { newId } from '../../ids.ts';
import type { FileQuota, JsonObject, Store, StoredFile } from '../../store/store.ts';
import { tenantOf } from '../auth/api-key.ts';
import { keyAuthorize } from '../auth/session-target.ts';
import { checkUpload, fieldPart, filePart, registerUploads, requireMultipart } from '../server/uploads.ts';
import { toValidationIssues } from '../server/validation.ts';

const uploadBody = z.strictObject({
  file: filePart,
  metadata: fieldPart.optional().meta({ description: 'A JSON object, stored as the file metadata' }),
});

/** The optional `metadata` part: a JSON object (as text, or parsed when declared JSON), checked like any metadata. */
function parseMetadataPart(part: MultipartValue<unknown> | undefined): JsonObject {
  if (part === undefined) return {};
  if (part.valueTruncated) {
    throw ValidationError.at(['body', 'metadata'], 'The metadata part is too large', 'too_large');
  }
  let value = part.value;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      throw ValidationError.at(
        ['body', 'metadata'],
        'The metadata part must be a JSON object',
        'json_invalid',
      );
    }
  }
  const parsed = metadataSchema.safeParse(value);
  if (!parsed.success) {
    const issues = toValidationIssues(parsed.error.issues, value, 'body');
    throw new ValidationError(issues.map((i) => ({ ...i, loc: ['body', 'metadata', ...i.loc.slice(1)] })));
  }
  return parsed.data;
}

const notFound = (id: string) => new AppError('file_not_found', undefined, { context: { file_id: id } });

/** The tenant's file, answered like its conversation to a key scoped to other agents (403 agent_forbidden). */
async function fileFor(store: Store, request: FastifyRequest, id: string): Promise<StoredFile> {
  const tenantId = tenantOf(request);
  const file = await store.getFile(tenantId, id);
  if (!file) throw notFound(id);
  await authorizeFile(store, tenantId, file, keyAuthorize(request));
  return file;
}

export const filesRoutes: FastifyPluginAsyncZod<{
  store: Store;
  uploadLimitBytes: number;
  fileQuota: FileQuota;
}> = async (app, { store, uploadLimitBytes, fileQuota }) => {
  await registerUploads(app, uploadLimitBytes);
  app.post(
    '/v1/agents/files',
    {
      onRequest: requireMultipart,
      config: { uploadLimitBytes },
      schema: {
        tags: ['files'],
        summary: 'Upload a file to the tenant pool',
        consumes: ['multipart/form-data'],
        body: uploadBody,
        // 413: file_too_large or tenant_file_quota
        response: { 201: fileSchema, 413: errorEnvelope, 415: errorEnvelope, ...authErrors },
      },
    },
    async (request, reply) => {
      const metadata = parseMetadataPart(request.body.metadata);
      const upload = await checkUpload(request.body.file);
      const file = await store.createFile(
        tenantOf(request),
        { id: newId('file'), name: upload.name, mime_type: upload.mime_type, metadata, session_id: null },
        upload.content,
        fileQuota,
      );
      return reply.code(201).send(file);
    },
  );

  app.get(
    '/v1/agents/files',
    {
      schema: {
        tags: ['files'],
        summary: 'List the tenant pool, newest first',
        querystring: fileListQuery,
        response: { 200: pageOf(fileSchema), ...authErrors },
      },
    },
    async (request) => {
      const { limit, offset, ...filter } = request.query;
      // A scoped key sees the pool and its agents' conversations' files only.
      const agents = request.apiKey?.agents ?? [];
      const scope = agents.includes('*') ? {} : { agent_ids: agents };
      return store.listFiles(tenantOf(request), { ...filter, ...scope }, { limit, offset });
    },
  );

  app.get(
    '/v1/agents/files/:file_id',
    {
      schema: {
        tags: ['files'],
        summary: 'Read a file record',
        params: fileParams,
        response: { 200: fileSchema, ...authErrors },
      },
    },
    async (request) => fileFor(store, request, request.params.file_id),
  );

  app.get(
    '/v1/agents/files/:file_id/content',
    {
      schema: {
        tags: ['files'],
        summary: "Download a file's bytes, with its MIME type",
        params: fileParams,
        response: {
          200: {
            description: 'The bytes',
            content: {
              // Served with the file's own media type (its mime_type), whatever that is.
              '*/*': {
                schema: z.custom<Buffer>().meta({ type: 'string', format: 'binary' }),
              },
            },
          },
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      const file = await fileFor(store, request, request.params.file_id);
      const content = await store.readFileContent(tenantOf(request), file.id);
      if (!content) throw notFound(file.id);
      return reply
        .header('content-type', file.mime_type)
        .header('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent(file.name)}`)
        .header('x-content-type-options', 'nosniff')
        .send(content);
    },
  );

  app.delete(
    '/v1/agents/files/:file_id',
    {
      schema: {
        tags: ['files'],
        summary: 'Delete a file from the tenant pool',
        params: fileParams,
        response: { 204: z.null().meta({ description: 'Deleted' }), ...authErrors },
      },
    },
    async (request, reply) => {
      const file = await fileFor(store, request, request.params.file_id);
      if (!(await store.deleteFile(tenantOf(request), file.id))) throw notFound(file.id);
      return reply.code(204).send(null);
    },
  );
};
