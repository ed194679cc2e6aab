// A driver's Store assembled from its resource parts. Each driver (sqlite/, postgres/) has a module per
// resource exporting `part(handle)`: that resource's contract (contract/*.ts) on the driver's connection.
// ComposedStore puts the parts' methods on the store itself, so that a driver's class writes only what
// belongs to its connection: the lifecycle, and commitSession (how session writes group into transactions).
import type { FileStore } from './contract/files.ts';
import type { MessageStore } from './contract/messages.ts';
import type { SessionStore } from './contract/sessions.ts';
import type { TenantStore } from './contract/tenants.ts';
import type { ToolCallStore } from './contract/tool-calls.ts';
import type { UsageStore } from './contract/usage.ts';
import type { UserStore } from './contract/users.ts';
import type { WebhookStore } from './contract/webhooks.ts';

/** What a driver's resource modules supply: the whole contract but the lifecycle and commitSession. */
export interface StoreParts {
  tenants: TenantStore;
  users: UserStore;
  files: FileStore;
  sessions: Omit<SessionStore, 'commitSession'>;
  /** A turn's tool calls are read beside its messages (both stores keep them by session and turn). */
  messages: MessageStore & ToolCallStore;
  webhooks: WebhookStore;
  usage: UsageStore;
}

/** The modules of a driver's parts, each exporting `part`, built on the driver's handle. */
type PartModules<Handle> = { [K in keyof StoreParts]: { part(handle: Handle): StoreParts[K] } };

/** The methods of all the parts together: the intersection of StoreParts' member types. */
type AllOf<U> = (U extends unknown ? (part: U) => void : never) extends (all: infer I) => void ? I : never;
type PartMethods = AllOf<StoreParts[keyof StoreParts]>;

/**
 * The base class of a driver's store, built on the driver's handle and its part modules: an instance
 * carries every part's methods as its own properties (each still closed over its part, none using `this`).
 * The driver's class adds the lifecycle and commitSession and declares `implements Store`, so that a method
 * of the contract that neither a part nor the class holds fails to compile.
 */
export const ComposedStore = class {
  constructor(handle: unknown, modules: Record<string, { part(handle: unknown): object }>) {
    for (const module of Object.values(modules)) Object.assign(this, module.part(handle));
  }
  // What the class is, typed: the loop above cannot be (it goes over the modules by value).
} as unknown as abstract new <Handle>(
  handle: Handle,
  modules: PartModules<Handle>,
) => PartMethods;
