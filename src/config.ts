// The only reader of process.env: one zod schema, validated once at start, frozen.
// A bad value stops the start with one line that names the variable.
import { z } from 'zod';
import { type AllowedHosts, isLoopbackHost, parseAllowedHosts } from './hosts.ts';
import { defaultResidentBytes } from './resident-bytes.ts';
import { otelEnvShape, type TracingOptions, tracingOptions } from './tracing/options.ts';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE, parseRetrySchedule } from './webhooks/retry-schedule.ts';

const MiB = 1024 * 1024;

const integer = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

const envSchema = z
  .object({
    PORT: integer(0, 65535).default(3000),
    HOST: z.string().min(1).default('127.0.0.1'),
    PARLEY_DATA_DIR: z.string().min(1).default('./data'),
    DATABASE_URL: optionalString.pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
        .optional(),
    ),
    REDIS_URL: optionalString.pipe(
      z
        .string()
        .regex(/^rediss?:\/\//, 'must be a redis:// URL')
        .optional(),
    ),
    PARLEY_NODE_URL: optionalString.pipe(z.url().optional()),
    PARLEY_TOKEN_SECRET: optionalString.pipe(z.string().min(32, 'must be at least 32 bytes').optional()),
    PARLEY_TOKEN_TTL: integer(1, 86_400).default(900),
    PARLEY_BOOTSTRAP_API_KEY: optionalString.pipe(
      z
        .string()
        .regex(/^[\x21-\x7e]{16,256}$/, 'must be 16 to 256 printable ASCII characters without spaces')
        .optional(),
    ),
    PARLEY_AGENTS_FILE: optionalString,
    PARLEY_CORS_ORIGINS: optionalString,
    PARLEY_RATE_LIMIT_KEY: integer(1, 1_000_000).default(1200),
    PARLEY_RATE_LIMIT_TOKEN: integer(1, 1_000_000).default(120),
    PARLEY_MAX_BODY_BYTES: integer(1024, 64 * MiB).default(MiB),
    PARLEY_MAX_UPLOAD_BYTES: integer(1, 1024 * MiB).default(20 * MiB),
    PARLEY_CONVERSATION_MAX_FILES: integer(1, 1_000_000).default(100),
    PARLEY_CONVERSATION_MAX_FILE_BYTES: integer(1, 2 ** 50).default(200 * MiB),
    PARLEY_TENANT_MAX_FILE_BYTES: integer(0, 2 ** 50).default(10 * 1024 * MiB),
    PARLEY_MAX_TURN_FILE_BYTES: integer(0, 1024 * MiB).default(32 * MiB),
    PARLEY_FILE_CACHE_BYTES: integer(0, 16 * 1024 * MiB).default(64 * MiB),
    PARLEY_MAX_TURN_HISTORY_CHARS: integer(1, 1024 * MiB).default(4_000_000),
    PARLEY_MAX_ACTORS: integer(1, 10_000_000).default(50_000),
    // Unset: from the memory the process may use (resident-bytes.ts, defaultResidentBytes).
    PARLEY_MAX_RESIDENT_BYTES: optionalString
      .transform((v) => (v === undefined ? undefined : Number(v)))
      .pipe(
        z
          .number()
          .int()
          .min(0)
          .max(1024 * 1024 * MiB)
          .optional(),
      ),
    PARLEY_TENANT_RESIDENT_PERCENT: integer(1, 100).default(50),
    PARLEY_ADMISSION_QUEUE: integer(0, 1_000_000).default(128),
    PARLEY_ADMISSION_WAIT_MS: integer(1, 3_600_000).default(30_000),
    PARLEY_ACTOR_IDLE_SECONDS: integer(1, 86_400).default(600),
    PARLEY_SWEEP_SECONDS: integer(1, 3600).default(60),
    PARLEY_SSE_PING_SECONDS: integer(1, 3600).default(15),
    PARLEY_EVENT_STREAMS_PER_CONVERSATION: integer(1, 10_000).default(10),
    PARLEY_MAX_EVENT_STREAMS: integer(1, 1_000_000).default(1000),
    PARLEY_EVENT_STREAM_POLL_MS: integer(50, 60_000).default(1000),
    PARLEY_LEASE_TTL_MS: integer(1000, 600_000).default(10_000),
    PARLEY_DRAIN_DELAY_MS: integer(0, 60_000).default(1000),
    PARLEY_NODE_HEADER: z
      .enum(['true', 'false'], { error: 'must be true or false' })
      .default('false')
      .transform((v) => v === 'true'),
    PARLEY_ALLOWED_HOSTS: optionalString,
    PARLEY_DEMO: optionalString.pipe(
      z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
    ),
    PARLEY_DEMO_CONVERSATIONS_PER_HOUR: integer(1, 1_000_000).default(100),
    PARLEY_DEMO_SENDS_PER_HOUR: integer(1, 10_000_000).default(600),
    PARLEY_DEMO_MAX_MESSAGE_CHARS: integer(1, 1_000_000).default(2000),
    PARLEY_DEMO_MAX_MESSAGES: integer(2, 100_000).default(40),
    PARLEY_DEMO_FILE_BYTES: integer(0, 1024 * MiB).default(16 * MiB),
    PARLEY_DEMO_RETENTION_SECONDS: integer(1, 365 * 86_400).default(86_400),
    PARLEY_WEBHOOK_ALLOW_PRIVATE: optionalString.pipe(
      z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
    ),
    PARLEY_WEBHOOK_RETRY_SCHEDULE: optionalString.transform((v, ctx) => {
      if (v === undefined) return DEFAULT_WEBHOOK_RETRY_SCHEDULE;
      const parsed = parseRetrySchedule(v);
      if (typeof parsed === 'string') {
        ctx.addIssue({ code: 'custom', message: parsed });
        return z.NEVER;
      }
      return parsed;
    }),
    PARLEY_WEBHOOK_OUTBOX_MAX_DELIVERIES: integer(1, 100_000_000).default(10_000),
    PARLEY_WEBHOOK_OUTBOX_MAX_BYTES: integer(1024, 1024 ** 4).default(64 * MiB),
    PARLEY_REQUEST_TIMEOUT_MS: integer(1, 3_600_000).default(30_000),
    PARLEY_HEADERS_TIMEOUT_MS: integer(1, 3_600_000).default(10_000),
    PARLEY_KEEP_ALIVE_TIMEOUT_MS: integer(1, 3_600_000).default(72_000),
    PARLEY_MAX_CONNECTIONS: integer(1, 1_000_000).default(3000),
    OPENAI_API_KEY: optionalString,
    OPENAI_BASE_URL: optionalString.pipe(z.url().optional()),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    // OpenTelemetry's own variables (tracing/options.ts).
    ...otelEnvShape,
  })
  // Node refuses to start a server whose headers may take longer than the whole request.
  .refine((e) => e.PARLEY_HEADERS_TIMEOUT_MS <= e.PARLEY_REQUEST_TIMEOUT_MS, {
    path: ['PARLEY_HEADERS_TIMEOUT_MS'],
    message: 'must not exceed PARLEY_REQUEST_TIMEOUT_MS',
  })
  .refine((e) => !e.REDIS_URL || e.PARLEY_NODE_URL, {
    path: ['PARLEY_NODE_URL'],
    message:
      "is required with REDIS_URL: this process's URL, where the other processes forward its sessions' requests",
  });

export interface Config {
  readonly port: number;
  readonly host: string;
  /** Whether HOST is a loopback address or name: the service is then reachable from this machine only. */
  readonly loopback: boolean;
  /** Which `Host` a request may name (PARLEY_ALLOWED_HOSTS; null for any); the others get 421. */
  readonly allowedHosts: AllowedHosts;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  readonly redisUrl: string | undefined;
  readonly nodeUrl: string | undefined;
  readonly tokenSecret: string | undefined;
  readonly tokenTtlSeconds: number;
  readonly bootstrapApiKey: string | undefined;
  readonly agentsFile: string | undefined;
  readonly corsOrigins: readonly string[];
  readonly rateLimit: { readonly perApiKey: number; readonly perSessionToken: number };
  readonly limits: { readonly bodyBytes: number; readonly uploadBytes: number };
  /** Uploads kept per conversation (files and bytes) and per tenant (bytes; 0 for no limit). */
  readonly fileQuota: {
    readonly conversationFiles: number;
    readonly conversationBytes: number;
    readonly tenantBytes: number;
  };
  /** Bytes of files one turn attaches (newest first), and bytes of files a process keeps between turns. */
  readonly turnFiles: { readonly budgetBytes: number; readonly cacheBytes: number };
  readonly turnHistoryChars: number;
  readonly actors: {
    readonly maxResident: number;
    /** The bytes of running turns and of what is kept between requests (docs/internals/decisions.md#resident-memory). */
    readonly maxResidentBytes: number;
    readonly idleMs: number;
    readonly sweepMs: number;
  };
  /**
   * Turns that do not fit under maxResidentBytes wait (at most maxWaiting of them, each at most maxWaitMs); one
   * tenant's turns hold at most tenantShare of the bound and of the waiting places.
   */
  readonly admission: {
    readonly tenantShare: number;
    readonly maxWaiting: number;
    readonly maxWaitMs: number;
  };
  /** Between `: ping` comments on an open event stream. */
  readonly ssePingMs: number;
  /** Conversation event streams (docs/guides/humans.md#the-conversation-event-stream): how many, how often read. */
  readonly eventStreams: { readonly perConversation: number; readonly max: number; readonly pollMs: number };
  /** Shard lease and membership TTL in cluster mode. */
  readonly leaseTtlMs: number;
  /** Cluster mode: how long a stopping process keeps serving after readiness fails, for balancers to notice. */
  readonly drainDelayMs: number;
  /** Cluster mode: whether every answer names the process that served it (x-parley-node: host and PID). */
  readonly nodeHeader: boolean;
  /** The demo page (docs/guides/embedding.md#the-demo-page) and its bounds. */
  readonly demo: DemoConfig;
  /**
   * Webhooks (docs/internals/decisions.md#webhooks): whether endpoints may be on private or loopback
   * addresses (on by default for one SQLite node listening on loopback), the waits between a delivery's
   * attempts (after the last one it is failed), and each tenant's cap on its pending deliveries and bytes.
   */
  readonly webhooks: {
    readonly allowPrivate: boolean;
    readonly retryScheduleMs: readonly number[];
    readonly outbox: { readonly maxPendingDeliveries: number; readonly maxPendingBytes: number };
  };
  /**
   * Receiving a request (headers, then body) is bounded; a streamed reply is not. Idle keep-alive sockets
   * close after keepAliveMs; connections beyond maxConnections are closed as they arrive.
   */
  readonly http: {
    readonly requestTimeoutMs: number;
    readonly headersTimeoutMs: number;
    readonly keepAliveMs: number;
    readonly maxConnections: number;
  };
  readonly openai: { readonly apiKey: string | undefined; readonly baseUrl: string | undefined };
  /** Variables named `*_API_KEY` (but the bootstrap key), for agents that name theirs with `api_key_env`. */
  readonly providerKeys: Readonly<Record<string, string>>;
  /**
   * Variables an agent's tools may name (`secret_env`, `headers_env`): every set one but Parley's own
   * (`PARLEY_*`, `OTEL_*`, DATABASE_URL, REDIS_URL), so that an agents file cannot send those to a tool.
   */
  readonly toolEnv: Readonly<Record<string, string>>;
  readonly logLevel: string;
  /** Traces over OTLP/HTTP (the standard OTEL_* variables); null without an endpoint: tracing is off. */
  readonly tracing: TracingOptions | null;
}

export interface DemoConfig {
  /**
   * Whether GET /demo is served: `on` and `off` as PARLEY_DEMO says; `default` (unset) serves it only for one
   * SQLite process listening on loopback whose `demo` agent is `scripted`, which app.ts knows.
   */
  readonly serve: 'on' | 'off' | 'default';
  /** Across every client (and every process, with Redis): conversations the page starts, and sends in them. */
  readonly conversationsPerHour: number;
  readonly sendsPerHour: number;
  /** Characters of text in one send of a demo conversation, and messages one conversation may hold. */
  readonly maxMessageChars: number;
  readonly maxMessages: number;
  /** Bytes of files the demo tenant keeps, every conversation together (0: no uploads). */
  readonly fileBytes: number;
  /** How long after its start a demo conversation is deleted, with its messages and files. */
  readonly retentionMs: number;
}

const OWN_URLS = new Set(['DATABASE_URL', 'REDIS_URL']);

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads the environment (process.env unless given) once; throws ConfigError naming the first bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const variable = issue?.path.join('.') || 'environment';
    throw new ConfigError(`Invalid configuration: ${variable} ${issue?.message ?? 'is invalid'}`);
  }
  const e = parsed.data;
  const loopback = isLoopbackHost(e.HOST);
  // One process on SQLite, reachable from this machine only: the `npm start` of someone trying Parley out.
  const localTrial = loopback && !e.DATABASE_URL && !e.REDIS_URL;
  return deepFreeze({
    port: e.PORT,
    host: e.HOST,
    loopback,
    allowedHosts: parseAllowedHosts(e.PARLEY_ALLOWED_HOSTS, loopback),
    dataDir: e.PARLEY_DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    nodeUrl: e.PARLEY_NODE_URL,
    tokenSecret: e.PARLEY_TOKEN_SECRET,
    tokenTtlSeconds: e.PARLEY_TOKEN_TTL,
    bootstrapApiKey: e.PARLEY_BOOTSTRAP_API_KEY,
    agentsFile: e.PARLEY_AGENTS_FILE,
    corsOrigins: (e.PARLEY_CORS_ORIGINS ?? '')
      .split(',')
      .map((o) => o.trim())
      .filter(Boolean),
    rateLimit: { perApiKey: e.PARLEY_RATE_LIMIT_KEY, perSessionToken: e.PARLEY_RATE_LIMIT_TOKEN },
    limits: { bodyBytes: e.PARLEY_MAX_BODY_BYTES, uploadBytes: e.PARLEY_MAX_UPLOAD_BYTES },
    fileQuota: {
      conversationFiles: e.PARLEY_CONVERSATION_MAX_FILES,
      conversationBytes: e.PARLEY_CONVERSATION_MAX_FILE_BYTES,
      tenantBytes: e.PARLEY_TENANT_MAX_FILE_BYTES,
    },
    turnFiles: { budgetBytes: e.PARLEY_MAX_TURN_FILE_BYTES, cacheBytes: e.PARLEY_FILE_CACHE_BYTES },
    turnHistoryChars: e.PARLEY_MAX_TURN_HISTORY_CHARS,
    actors: {
      maxResident: e.PARLEY_MAX_ACTORS,
      maxResidentBytes: e.PARLEY_MAX_RESIDENT_BYTES ?? defaultResidentBytes(),
      idleMs: e.PARLEY_ACTOR_IDLE_SECONDS * 1000,
      sweepMs: e.PARLEY_SWEEP_SECONDS * 1000,
    },
    admission: {
      tenantShare: e.PARLEY_TENANT_RESIDENT_PERCENT / 100,
      maxWaiting: e.PARLEY_ADMISSION_QUEUE,
      maxWaitMs: e.PARLEY_ADMISSION_WAIT_MS,
    },
    ssePingMs: e.PARLEY_SSE_PING_SECONDS * 1000,
    eventStreams: {
      perConversation: e.PARLEY_EVENT_STREAMS_PER_CONVERSATION,
      max: e.PARLEY_MAX_EVENT_STREAMS,
      pollMs: e.PARLEY_EVENT_STREAM_POLL_MS,
    },
    leaseTtlMs: e.PARLEY_LEASE_TTL_MS,
    drainDelayMs: e.PARLEY_DRAIN_DELAY_MS,
    nodeHeader: e.PARLEY_NODE_HEADER,
    // Anywhere but a local trial, a page that starts conversations for anyone is opt-in.
    demo: {
      serve:
        e.PARLEY_DEMO === undefined
          ? localTrial
            ? 'default'
            : 'off'
          : e.PARLEY_DEMO === 'true'
            ? 'on'
            : 'off',
      conversationsPerHour: e.PARLEY_DEMO_CONVERSATIONS_PER_HOUR,
      sendsPerHour: e.PARLEY_DEMO_SENDS_PER_HOUR,
      maxMessageChars: e.PARLEY_DEMO_MAX_MESSAGE_CHARS,
      maxMessages: e.PARLEY_DEMO_MAX_MESSAGES,
      fileBytes: e.PARLEY_DEMO_FILE_BYTES,
      retentionMs: e.PARLEY_DEMO_RETENTION_SECONDS * 1000,
    },
    webhooks: {
      // A tenant's endpoints on this machine's own services are a local trial's convenience only.
      allowPrivate:
        e.PARLEY_WEBHOOK_ALLOW_PRIVATE === undefined ? localTrial : e.PARLEY_WEBHOOK_ALLOW_PRIVATE === 'true',
      retryScheduleMs: e.PARLEY_WEBHOOK_RETRY_SCHEDULE,
      outbox: {
        maxPendingDeliveries: e.PARLEY_WEBHOOK_OUTBOX_MAX_DELIVERIES,
        maxPendingBytes: e.PARLEY_WEBHOOK_OUTBOX_MAX_BYTES,
      },
    },
    http: {
      requestTimeoutMs: e.PARLEY_REQUEST_TIMEOUT_MS,
      headersTimeoutMs: e.PARLEY_HEADERS_TIMEOUT_MS,
      keepAliveMs: e.PARLEY_KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: e.PARLEY_MAX_CONNECTIONS,
    },
    openai: { apiKey: e.OPENAI_API_KEY, baseUrl: e.OPENAI_BASE_URL },
    providerKeys: Object.fromEntries(
      Object.entries(env).filter(
        (entry): entry is [string, string] =>
          entry[0].endsWith('_API_KEY') && entry[0] !== 'PARLEY_BOOTSTRAP_API_KEY' && !!entry[1],
      ),
    ),
    toolEnv: Object.fromEntries(
      Object.entries(env).filter(
        (entry): entry is [string, string] =>
          !entry[0].startsWith('PARLEY_') &&
          !entry[0].startsWith('OTEL_') &&
          !OWN_URLS.has(entry[0]) &&
          !!entry[1],
      ),
    ),
    logLevel: e.LOG_LEVEL,
    tracing: tracingOptions(e),
  });
}

function deepFreeze<T extends object>(value: T): T {
  for (const child of Object.values(value)) {
    if (child && typeof child === 'object') deepFreeze(child);
  }
  return Object.freeze(value);
}
