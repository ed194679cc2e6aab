// What a session request names, checked before the session's actor is asked: the user it is bound to, the
// content blocks of its messages (each file the caller's, and an image an image), and who may touch a file.
import { AppError, ValidationError } from '../errors.ts';
import type { ContentBlock, SessionRecord, Store, StoredFile, User } from '../store/store.ts';

export type BlockInput = { type?: 'text' | 'image' | 'file'; text?: string; file_id?: string };

/** Who may touch a session beyond its tenant (the API key's agent scope, the token's conversation). */
export type Authorize = (session: SessionRecord) => void;

/**
 * Throws unless the caller may touch the conversation `file` was uploaded in: a file is answered like its
 * session (docs/internals/decisions.md#files-and-scoped-keys). A pool file (no session) is the whole
 * tenant's.
 */
export async function authorizeFile(
  store: Store,
  tenantId: string,
  file: StoredFile,
  authorize: Authorize,
): Promise<void> {
  if (file.session_id === null) return;
  const session = await store.getSession(tenantId, file.session_id);
  if (session) authorize(session);
}

/** The user a lookup names (by id, reference or both, then the same user); 404 user_not_found otherwise. */
export async function lookupUser(
  store: Store,
  tenantId: string,
  lookup: { id?: string; reference?: string },
): Promise<User> {
  const byId = lookup.id !== undefined ? await store.getUser(tenantId, lookup.id) : null;
  const byReference =
    lookup.reference !== undefined
      ? ((await store.listUsers(tenantId, { reference: lookup.reference }, { limit: 1, offset: 0 }))
          .items[0] ?? null)
      : null;
  const user = byId ?? byReference;
  if ((lookup.id !== undefined && !byId) || (lookup.reference !== undefined && !byReference) || !user) {
    throw new AppError('user_not_found', undefined, { context: { ...lookup } });
  }
  if (byId && byReference && byId.id !== byReference.id) {
    throw ValidationError.at(
      ['body', 'user'],
      'The user id and reference name different users',
      'value_error',
    );
  }
  return user;
}

/**
 * Normalised blocks; every file a block names must be the tenant's (or the one session's, when given),
 * one the caller may touch (see authorizeFile), and an image block an image.
 */
export async function contentBlocks(
  store: Store,
  tenantId: string,
  content: string | BlockInput[],
  /** Where the request names the file of block `i` (a send's `body.content.<i>.file_id`), for a refusal. */
  fileAt: (i: number) => (string | number)[],
  authorize: Authorize,
  only: { sessionId?: string } = {},
): Promise<ContentBlock[]> {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Promise.all(
    content.map(async (block, i): Promise<ContentBlock> => {
      if (block.text !== undefined && block.type !== 'image' && block.type !== 'file') {
        return { type: 'text', text: block.text };
      }
      const fileId = block.file_id ?? '';
      const type = block.type === 'image' ? 'image' : 'file';
      const file = await store.getFile(tenantId, fileId);
      if (!file || (only.sessionId !== undefined && file.session_id !== only.sessionId)) {
        throw new AppError('file_not_found', undefined, {
          context: { file_id: fileId, param: fileAt(i).join('.') },
        });
      }
      await authorizeFile(store, tenantId, file, authorize);
      if (type === 'image' && !file.mime_type.startsWith('image/')) {
        throw ValidationError.at(
          fileAt(i),
          `File ${fileId} is ${file.mime_type}, not an image`,
          'value_error',
        );
      }
      return { type, file_id: fileId };
    }),
  );
}
