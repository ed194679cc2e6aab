// The Store's files: uploads of a tenant (its pool) or of one conversation, the record and its bytes.
import type { JsonObject, Page, PageRequest } from './common.ts';

export interface StoredFile {
  id: string;
  name: string;
  size: number;
  mime_type: string;
  created_at: string;
  metadata: JsonObject;
  /** The conversation the file was uploaded in, or null for the tenant pool. */
  session_id: string | null;
}

export interface NewFile {
  id: string;
  name: string;
  mime_type: string;
  metadata: JsonObject;
  session_id: string | null;
}

/** The room an upload may take, checked in the transaction that stores it; 0 bytes for the tenant is no limit. */
export interface FileQuota {
  /** Files and bytes kept per conversation; applies to a file with a session_id. */
  conversationFiles: number;
  conversationBytes: number;
  /** Bytes kept per tenant, pool and conversations together. */
  tenantBytes: number;
}

export interface FileFilter {
  /** Case-insensitive prefix of the file name. */
  name?: string;
  mime_type?: string;
  /** ISO 8601 instants; both bounds are exclusive. */
  created_after?: string;
  created_before?: string;
  /** Only the files uploaded in this conversation. */
  session_id?: string;
  /** Only pool files and files of these agents' sessions (the API key's scope); undefined for every agent. */
  agent_ids?: readonly string[];
}

export interface FileStore {
  /**
   * Stores the record and its bytes in one transaction. With a quota, the tenant's and the conversation's
   * stored files are counted in that transaction (uploads of a tenant one at a time), and one that would
   * pass it throws 413 conversation_file_quota or tenant_file_quota, storing nothing.
   */
  createFile(tenantId: string, file: NewFile, content: Buffer, quota?: FileQuota): Promise<StoredFile>;
  getFile(tenantId: string, id: string): Promise<StoredFile | null>;
  /** Newest first. */
  listFiles(tenantId: string, filter: FileFilter, page: PageRequest): Promise<Page<StoredFile>>;
  readFileContent(tenantId: string, id: string): Promise<Buffer | null>;
  /** Removes the record and its bytes; false when there was no such file. */
  deleteFile(tenantId: string, id: string): Promise<boolean>;
}
