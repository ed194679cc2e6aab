// The API-key family's resources beside sessions: agents, users, files and webhooks, one method per route. ParleyClient
// (parley-client.ts) extends this with sessions, their turns and conversations; split only to keep each file
// short, the two are one client.
import { seg, type Transport } from './transport.ts';
import type {
  Agent,
  CreatedWebhook,
  FileListQuery,
  FilePage,
  FileRecord,
  PageQuery,
  User,
  UserFields,
  UserListQuery,
  UserPage,
  Webhook,
  WebhookCreate,
  WebhookDeliveryPage,
} from './types.ts';

export type Signal = { signal?: AbortSignal | undefined };

export class KeyResources {
  /** The client's requests, with its API key. */
  protected readonly t: Transport;

  constructor(transport: Transport) {
    this.t = transport;
  }

  // Agents

  /** GET /v1/agents: the agents this key may use, with their tools, approvals and handoff settings. */
  async agents(o: Signal = {}): Promise<Agent[]> {
    const list: { items: Agent[] } = await this.t.json({
      method: 'GET',
      path: '/v1/agents',
      idempotent: true,
      ...o,
    });
    return list.items;
  }

  // Users

  /** POST /v1/agents/users */
  createUser(body: UserFields = {}, o: Signal = {}): Promise<User> {
    return this.t.json({ method: 'POST', path: '/v1/agents/users', json: body, idempotent: false, ...o });
  }

  /** GET /v1/agents/users (newest first) */
  listUsers(query: UserListQuery = {}, o: Signal = {}): Promise<UserPage> {
    return this.t.json({ method: 'GET', path: '/v1/agents/users', query, idempotent: true, ...o });
  }

  /** GET /v1/agents/users/{user_id} */
  getUser(userId: string, o: Signal = {}): Promise<User> {
    return this.t.json({ method: 'GET', path: `/v1/agents/users/${seg(userId)}`, idempotent: true, ...o });
  }

  /** PATCH /v1/agents/users/{user_id}: each given field replaces the stored value. */
  updateUser(userId: string, body: UserFields, o: Signal = {}): Promise<User> {
    return this.t.json({
      method: 'PATCH',
      path: `/v1/agents/users/${seg(userId)}`,
      json: body,
      idempotent: true,
      ...o,
    });
  }

  /** DELETE /v1/agents/users/{user_id} (soft: frees the reference) */
  async deleteUser(userId: string, o: Signal = {}): Promise<void> {
    await this.noContent({ method: 'DELETE', path: `/v1/agents/users/${seg(userId)}`, ...o });
  }

  // Files

  /** POST /v1/agents/files: multipart `file`, with an optional `metadata` JSON object. */
  uploadFile(
    file: Blob,
    options: { filename?: string; metadata?: Record<string, unknown> } & Signal = {},
  ): Promise<FileRecord> {
    const form = new FormData();
    const name = options.filename ?? ('name' in file && typeof file.name === 'string' ? file.name : 'file');
    form.append('file', file, name);
    if (options.metadata !== undefined) form.append('metadata', JSON.stringify(options.metadata));
    return this.t.json({
      method: 'POST',
      path: '/v1/agents/files',
      form,
      idempotent: false,
      signal: options.signal,
    });
  }

  /** GET /v1/agents/files (newest first) */
  listFiles(query: FileListQuery = {}, o: Signal = {}): Promise<FilePage> {
    return this.t.json({ method: 'GET', path: '/v1/agents/files', query, idempotent: true, ...o });
  }

  /** GET /v1/agents/files/{file_id} */
  getFile(fileId: string, o: Signal = {}): Promise<FileRecord> {
    return this.t.json({ method: 'GET', path: `/v1/agents/files/${seg(fileId)}`, idempotent: true, ...o });
  }

  /** GET /v1/agents/files/{file_id}/content: the bytes, typed with the file's MIME type. */
  async downloadFile(fileId: string, o: Signal = {}): Promise<Blob> {
    const response = await this.t.request({
      method: 'GET',
      path: `/v1/agents/files/${seg(fileId)}/content`,
      accept: '*/*',
      idempotent: true,
      ...o,
    });
    return response.blob();
  }

  /** DELETE /v1/agents/files/{file_id} */
  async deleteFile(fileId: string, o: Signal = {}): Promise<void> {
    await this.noContent({ method: 'DELETE', path: `/v1/agents/files/${seg(fileId)}`, ...o });
  }

  // Webhooks (a key for every agent)

  /** POST /v1/agents/webhooks: the endpoint with its signing secret, shown only in this answer. */
  createWebhook(body: WebhookCreate, o: Signal = {}): Promise<CreatedWebhook> {
    return this.t.json({ method: 'POST', path: '/v1/agents/webhooks', json: body, idempotent: false, ...o });
  }

  /** GET /v1/agents/webhooks (oldest first) */
  async listWebhooks(o: Signal = {}): Promise<Webhook[]> {
    const page: { items: Webhook[] } = await this.t.json({
      method: 'GET',
      path: '/v1/agents/webhooks',
      idempotent: true,
      ...o,
    });
    return page.items;
  }

  /** GET /v1/agents/webhooks/{webhook_id} */
  getWebhook(webhookId: string, o: Signal = {}): Promise<Webhook> {
    return this.t.json({
      method: 'GET',
      path: `/v1/agents/webhooks/${seg(webhookId)}`,
      idempotent: true,
      ...o,
    });
  }

  /** DELETE /v1/agents/webhooks/{webhook_id} (its deliveries go with it) */
  async deleteWebhook(webhookId: string, o: Signal = {}): Promise<void> {
    await this.noContent({ method: 'DELETE', path: `/v1/agents/webhooks/${seg(webhookId)}`, ...o });
  }

  /** GET /v1/agents/webhooks/{webhook_id}/deliveries (newest first) */
  listWebhookDeliveries(
    webhookId: string,
    query: PageQuery = {},
    o: Signal = {},
  ): Promise<WebhookDeliveryPage> {
    return this.t.json({
      method: 'GET',
      path: `/v1/agents/webhooks/${seg(webhookId)}/deliveries`,
      query,
      idempotent: true,
      ...o,
    });
  }

  /** A request answered 204: its (empty) body is released. */
  protected async noContent(spec: { method: 'DELETE'; path: string } & Signal): Promise<void> {
    const response = await this.t.request({ ...spec, idempotent: true });
    await response.body?.cancel();
  }
}
