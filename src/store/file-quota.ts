// Upload quotas (docs/internals/decisions.md#upload-quotas): whether a new file fits its conversation's and
// its tenant's room, judged from the usage both stores read in the transaction that would store it.
import { AppError } from '../errors.ts';
import type { Row } from './rows.ts';
import type { FileQuota, NewFile } from './store.ts';

/** The 413 for a file of `size` bytes that does not fit, or null when it does; `usage` is a fileUsage row. */
export function quotaError(
  usage: Row | undefined,
  quota: FileQuota,
  file: NewFile,
  size: number,
): AppError | null {
  // PostgreSQL's count and sum arrive as strings.
  const tenantBytes = Number(usage?.tenant_bytes ?? 0);
  const sessionFiles = Number(usage?.session_files ?? 0);
  const sessionBytes = Number(usage?.session_bytes ?? 0);
  if (
    file.session_id !== null &&
    (sessionFiles + 1 > quota.conversationFiles || sessionBytes + size > quota.conversationBytes)
  ) {
    return new AppError('conversation_file_quota', undefined, {
      context: {
        conversation_id: file.session_id,
        limit_files: quota.conversationFiles,
        used_files: sessionFiles,
        limit_bytes: quota.conversationBytes,
        used_bytes: sessionBytes,
        file_bytes: size,
      },
    });
  }
  if (quota.tenantBytes > 0 && tenantBytes + size > quota.tenantBytes) {
    return new AppError('tenant_file_quota', undefined, {
      context: { limit_bytes: quota.tenantBytes, used_bytes: tenantBytes, file_bytes: size },
    });
  }
  return null;
}
