// Composition root: chooses the implementations (the coordinator; the store through store/open-store.ts,
// which the CLI shares; each agent's provider and tools, as its catalogue entry names them, through
// agents/agent-providers.ts and tools/agent-tool-sets.ts) and wires plugins and routes. Implementations that only some
// configurations need (Redis, PostgreSQL, a model's HTTP client) are imported only when chosen, so a process
// loads what it runs. src/server.ts only starts and stops what this builds.
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyInstance } from 'fastify';
import { serializerCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Redis } from 'ioredis';
import { createActorMetrics } from './actors/actor-metrics.ts';
import { Admission } from './actors/admission.ts';
import { createOperationRunner } from './actors/operations.ts';
import { SessionHost, TURN_GRACE_MS } from './actors/session-host.ts';
import { SessionService } from './actors/session-service.ts';
import { largestTurnOverShare } from './actors/turn-estimate.ts';
import { providersFor } from './agents/agent-providers.ts';
import { loadCatalogue } from './agents/catalogue.ts';
import { FileCache } from './agents/file-cache.ts';
import { ensureBootstrapKey } from './auth/api-keys.ts';
import { SessionTokens, tokenSecret } from './auth/session-tokens.ts';
import { type ClusterMetrics, createClusterMetrics } from './cluster/cluster-metrics.ts';
import { type Coordinator, LocalCoordinator } from './cluster/coordinator.ts';
import type { Config } from './config.ts';
import { apiFamily } from './http/api/family.ts';
import { consoleRoutes } from './http/open/console.ts';
import { demoKeyCount, demoRoutes } from './http/open/demo.ts';
import { demoSetup } from './http/open/demo-setup.ts';
import { operationsRoutes } from './http/open/operations.ts';
import { widgetRoutes } from './http/open/widget.ts';
import { registerOpenApi } from './http/openapi/document.ts';
import { PUBLIC_PREFIX, publicFamily } from './http/public/family.ts';
import { responsesFamily } from './http/responses/family.ts';
import { clientErrorHandler, newRequestId } from './http/server/client-errors.ts';
import { ConnectionDrain } from './http/server/connection-drain.ts';
import { frameworkErrorHandler, registerErrorHandling } from './http/server/error-handler.ts';
import { acceptedHosts, registerHostCheck } from './http/server/host-check.ts';
import { registerMetrics } from './http/server/metrics.ts';
import { requireDeclaredSessions } from './http/server/route-config.ts';
import { registerJsonBodies, validatorCompiler } from './http/server/validation.ts';
import { EventStreams } from './http/turns/event-streams.ts';
import { LiveTurns } from './http/turns/log.ts';
import { ResidentBytes } from './resident-bytes.ts';
import { shardFilter } from './shards.ts';
import { describeStore, keyHintCommand, type StartupFacts } from './startup.ts';
import { openStore } from './store/open-store.ts';
import type { Store } from './store/store.ts';
import { toolsFor } from './tools/agent-tool-sets.ts';
import { registerTraceMetrics } from './tracing/metrics.ts';
import { tracingActive } from './tracing/tracer.ts';
import { WebhookDeliverer } from './webhooks/deliverer.ts';
import { createWebhookMetrics } from './webhooks/webhook-metrics.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The session actors of this process (tests passivate and inspect them). */
    sessionHost: SessionHost;
    /** What the start-up summary tells (src/startup.ts); the key hint is known once the app is ready. */
    startup: StartupFacts;
  }
}

export interface AppDependencies {
  /** A store the caller owns (tests); otherwise one is opened from the config and closed with the app. */
  store?: Store;
  /** The caller prints the start-up facts (app.startup) on a terminal itself: no JSON hint is logged then. */
  terminal?: boolean;
}

/** Cluster mode: a coordinator on Redis leases, forwarding to each shard's owner, shared rate-limit counters. */
async function joinCluster(
  app: FastifyInstance,
  redisUrl: string,
  config: Config,
  store: Store,
  metrics: ClusterMetrics,
): Promise<{ coordinator: Coordinator; redis: Redis }> {
  const [{ RedisCoordinator }, { registerForwarding }, { rateLimitRedis }] = await Promise.all([
    import('./cluster/redis-coordinator.ts'),
    import('./cluster/forwarding.ts'),
    import('./http/server/rate-limit-redis.ts'),
  ]);
  const coordinator = new RedisCoordinator({
    store,
    redisUrl,
    nodeUrl: config.nodeUrl ?? '',
    leaseMs: config.leaseTtlMs,
    metrics,
    log: app.log,
  });
  registerForwarding(app, {
    coordinator,
    metrics,
    bodyLimit: config.limits.bodyBytes,
    nodeHeader: config.nodeHeader,
  });
  const redis = rateLimitRedis(redisUrl, (err) => app.log.warn({ err }, 'rate-limit counters unreachable'));
  return { coordinator, redis };
}

const acceptableRequestId = /^[A-Za-z0-9._:-]{1,128}$/;

export async function buildApp(config: Config, deps: AppDependencies = {}): Promise<FastifyInstance> {
  const catalogue = loadCatalogue(config.agentsFile);
  const providers = await providersFor(catalogue, config);
  const store = deps.store ?? (await openStore(config));
  const tokens = new SessionTokens(tokenSecret(config), config.tokenTtlSeconds);
  await store.migrate();
  const bootstrapKey = config.bootstrapApiKey
    ? await ensureBootstrapKey(store, config.bootstrapApiKey)
    : null;

  const app = Fastify({
    logger: { level: config.logLevel },
    bodyLimit: config.limits.bodyBytes,
    // Ids in paths longer than Fastify's default of 100 are unknown ids (404), not unreadable requests.
    routerOptions: { maxParamLength: 1000 },
    requestIdHeader: false,
    // A caller's own X-Request-Id is kept when it is tame, so ids line up across systems.
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && acceptableRequestId.test(given) ? given : newRequestId();
    },
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    // While draining (preClose) requests are still served and forwarded to the shards' new owners;
    // Fastify's own bare 503 would refuse them without a Retry-After.
    return503OnClosing: false,
    // A slow client is cut off (finding of issue 15): Node bounds receiving a request, headers then body,
    // and not the reply, so a long event stream is unaffected. Node checks these deadlines every
    // connectionsCheckingInterval (30 s by its default), so check at a tenth of the shorter one, at most 1 s.
    requestTimeout: config.http.requestTimeoutMs,
    keepAliveTimeout: config.http.keepAliveMs,
    http: {
      headersTimeout: config.http.headersTimeoutMs,
      connectionsCheckingInterval: Math.min(
        1000,
        Math.ceil(Math.min(config.http.headersTimeoutMs, config.http.requestTimeoutMs) / 10),
      ),
    },
  }).withTypeProvider<ZodTypeProvider>();
  // Beyond the cap a new connection is closed as it arrives, so descriptors stay for the store and providers.
  app.server.maxConnections = config.http.maxConnections;

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  registerJsonBodies(app);

  registerErrorHandling(app);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  // Before the forwarding hook (joinCluster) and every route: a refused request goes nowhere.
  registerHostCheck(app, acceptedHosts(config.allowedHosts, config.nodeUrl));
  registerMetrics(app);
  if (tracingActive()) registerTraceMetrics(app.metrics);

  const clusterMetrics = createClusterMetrics(app.metrics);
  // Rate-limit counters live in Redis when clustered, so that a limit holds across processes.
  const { coordinator, redis } = config.redisUrl
    ? await joinCluster(app, config.redisUrl, config, store, clusterMetrics)
    : {
        coordinator: new LocalCoordinator(
          store,
          config.nodeUrl ?? `${hostname()}:${process.pid}`,
          clusterMetrics,
        ),
        redis: undefined,
      };
  const metrics = createActorMetrics(app.metrics);
  const demo = demoSetup(config, catalogue, redis);
  const tools = await toolsFor(catalogue, config, app.log);
  metrics.residentMax.set(config.actors.maxResidentBytes);
  const resident = new ResidentBytes({
    maxBytes: config.actors.maxResidentBytes,
    onChange: (bytes, limit) => {
      metrics.residentBytes.set(bytes);
      metrics.residentLimit.set(limit);
    },
  });
  const webhookMetrics = createWebhookMetrics(app.metrics);
  store.configureWebhookOutbox({
    ...config.webhooks.outbox,
    onRefused: (count) => webhookMetrics.refused.inc(count),
  });
  const webhooks = new WebhookDeliverer({
    store,
    shards: () => shardFilter(coordinator.servedShards()),
    serves: (shard) => coordinator.serves(shard),
    retrySchedule: config.webhooks.retryScheduleMs,
    allowPrivate: config.webhooks.allowPrivate,
    metrics: webhookMetrics,
    log: app.log,
  });
  const streams = new EventStreams(config.eventStreams);
  const host = new SessionHost({
    store,
    coordinator,
    queuedWebhookEvents: () => webhooks.wake(),
    sessionEvents: (sessionId) => streams.committed(sessionId),
    run: createOperationRunner({
      store,
      catalogue,
      providers,
      metrics,
      files: {
        cache: new FileCache(config.turnFiles.cacheBytes, resident),
        budgetBytes: config.turnFiles.budgetBytes,
      },
      maxHistoryChars: config.turnHistoryChars,
      tools,
      log: app.log,
    }),
    metrics,
    maxResident: config.actors.maxResident,
    resident,
    idleMs: config.actors.idleMs,
    sweepMs: config.actors.sweepMs,
    retention: demo.retention,
    log: app.log,
  });
  coordinator.bind(host);
  const admission = new Admission({ resident, ...config.admission, metrics });
  const turnBounds = {
    maxHistoryChars: config.turnHistoryChars,
    fileBudgetBytes: config.turnFiles.budgetBytes,
  };
  const overShare = largestTurnOverShare(turnBounds, admission.tenantCap);
  if (overShare) app.log.warn(overShare);
  const sessions = new SessionService({ store, host, coordinator, catalogue, admission, turnBounds });
  app.decorate('sessionHost', host);

  requireDeclaredSessions(app);
  await registerOpenApi(app);
  await app.register(operationsRoutes, { store, coordinator });
  await app.register(widgetRoutes);
  await app.register(consoleRoutes);
  const startup: StartupFacts = {
    store: describeStore(config),
    agents: [...catalogue.keys()],
    demo: demo.serve,
    demoWarning: demo.warning,
    keyHint: null,
  };
  app.decorate('startup', startup);
  if (demo.warning && !deps.terminal) app.log.warn(demo.warning);
  if (demo.serve) {
    const { conversations, provider } = demo;
    await app.register(demoRoutes, {
      store,
      sessions,
      tokens,
      redis,
      config: config.demo,
      conversations,
      provider,
    });
  }
  const turns = new LiveTurns();
  await app.register(apiFamily, { store, config, catalogue, sessions, tokens, redis, turns, streams });
  await app.register(responsesFamily, { store, config, sessions, redis, turns });
  const bounded = demo.bounds;
  await app.register(publicFamily, {
    prefix: PUBLIC_PREFIX,
    store,
    config,
    sessions,
    tokens,
    redis,
    turns,
    streams,
    bounded,
  });

  app.addHook('onReady', async () => {
    if (bootstrapKey?.revoked_at) {
      app.log.warn(`PARLEY_BOOTSTRAP_API_KEY is the revoked key ${bootstrapKey.id}; it stays revoked.`);
    }
    if ((await store.countActiveApiKeys()) === (await demoKeyCount(store))) {
      startup.keyHint = keyHintCommand(config, (await store.getTenant('default')) !== null);
      if (!deps.terminal) {
        // The command is a field of its own too, for `jq -r .command`: the message's JSON escapes none of it.
        app.log.warn(
          { command: startup.keyHint },
          `No API key exists yet. Create one with: ${startup.keyHint} (or start with PARLEY_BOOTSTRAP_API_KEY set).`,
        );
      }
    }
  });
  app.addHook('onReady', async () => {
    await coordinator.start();
    host.start();
    webhooks.start();
  });
  // Nothing a client leaves open holds the stop up: from the drain on, answers ask clients to close their
  // connections, and once the listener is closed each connection goes as soon as its answers are done.
  // Running turns, and the answers that wait on them, share one grace from the start of the stop.
  const connections = new ConnectionDrain(app.server, { flushMs: 1_000 });
  let stopDeadline = Number.POSITIVE_INFINITY;
  // A graceful stop hands every shard over while this process still forwards requests to the new owners,
  // and keeps listening until balancers polling /readyz have stopped sending here: a connection the
  // listener accepted but had not read yet when it closes is reset, and a client cannot tell whether it
  // may retry.
  app.addHook('preClose', async () => {
    stopDeadline = Date.now() + TURN_GRACE_MS;
    connections.drain();
    try {
      // One process has nobody to hand its turns to: it finishes them while still listening, so that a
      // balancer polling /readyz reads 503 meanwhile, not a refused connection (new turns get 503 too).
      await Promise.all([
        coordinator.drain(),
        config.redisUrl ? sleep(config.drainDelayMs) : host.close(TURN_GRACE_MS),
      ]);
    } finally {
      // Fastify closes the listener when this hook returns; the connections follow by themselves.
      void connections.close(stopDeadline);
    }
  });
  app.addHook('onClose', async () => {
    await webhooks.stop();
    // Turns still waiting for room are refused (another process may serve them); running ones finish.
    admission.close();
    await host.close(Math.max(0, stopDeadline - Date.now()));
    await coordinator.stop();
    redis?.disconnect();
    for (const provider of providers.values()) await provider.close?.();
    await Promise.all([...tools.values()].map((t) => t.close()));
    if (!deps.store) await store.close();
  });
  return app;
}
