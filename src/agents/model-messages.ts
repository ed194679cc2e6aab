// The conversation as the model sees it: stored messages with their files read from the tenant pool.
// A file deleted since it was sent becomes a placeholder, so old turns stay readable.
import type { MessageRecord, Store } from '../store/store.ts';
import type { ModelMessage, ModelPart } from './provider.ts';

export async function toModelMessages(
  store: Store,
  tenantId: string,
  messages: readonly MessageRecord[],
): Promise<ModelMessage[]> {
  const parts = new Map<string, Promise<ModelPart>>();
  const filePart = (fileId: string, kind: 'image' | 'file'): Promise<ModelPart> => {
    let part = parts.get(fileId);
    if (!part) {
      part = (async (): Promise<ModelPart> => {
        const [file, data] = await Promise.all([
          store.getFile(tenantId, fileId),
          store.readFileContent(tenantId, fileId),
        ]);
        if (!file || !data) return { type: 'text', text: `[${kind} ${fileId} is no longer available]` };
        return kind === 'image' && file.mime_type.startsWith('image/')
          ? { type: 'image', mime_type: file.mime_type, data }
          : { type: 'file', name: file.name, mime_type: file.mime_type, data };
      })();
      parts.set(fileId, part);
    }
    return part;
  };
  return Promise.all(
    messages.map(async (m) => ({
      role: m.role,
      content: await Promise.all(
        m.content.map((b) =>
          b.type === 'text' ? { type: 'text' as const, text: b.text } : filePart(b.file_id, b.type),
        ),
      ),
    })),
  );
}
