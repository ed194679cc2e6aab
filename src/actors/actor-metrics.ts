// Metrics of the session runtime: resident actors, activations, passivations, the admission of turns by
// memory, turns and their latency (also by agent, with tokens and time to first token), and the model
// providers' latency. Registered on the app's own registry (see http/server/metrics.ts).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export function createActorMetrics(registry: Registry) {
  return {
    resident: new Gauge({
      name: 'parley_actors_resident',
      help: 'Session actors held in memory by this process',
      registers: [registry],
    }),
    residentBytes: new Gauge({
      name: 'parley_resident_bytes',
      help: 'Bytes of session histories and file contents this process keeps between requests (estimated)',
      registers: [registry],
    }),
    residentLimit: new Gauge({
      name: 'parley_resident_limit_bytes',
      help: 'Room allowed now for those bytes: PARLEY_MAX_RESIDENT_BYTES, less what running turns reserved and what the rest of the process takes beyond its share',
      registers: [registry],
    }),
    residentMax: new Gauge({
      name: 'parley_resident_max_bytes',
      help: 'PARLEY_MAX_RESIDENT_BYTES as set, or as computed from the memory the process may use',
      registers: [registry],
    }),
    admissionWaiting: new Gauge({
      name: 'parley_admission_waiting',
      help: 'Turns waiting for room under PARLEY_MAX_RESIDENT_BYTES',
      registers: [registry],
    }),
    admissionReserved: new Gauge({
      name: 'parley_admission_reserved_bytes',
      help: 'Bytes running turns reserved under PARLEY_MAX_RESIDENT_BYTES (estimated from above)',
      registers: [registry],
    }),
    admissionRefused: new Counter({
      name: 'parley_admission_refused_total',
      help: 'Turns refused with 503 server_busy, by reason (queue_full, tenant_queue_full, waited_too_long)',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    admissionWait: new Histogram({
      name: 'parley_admission_wait_seconds',
      help: 'Time a turn waited for room before it started (0 for most)',
      buckets: latencyBuckets,
      registers: [registry],
    }),
    activations: new Counter({
      name: 'parley_actor_activations_total',
      help: 'Session actors loaded from the store',
      registers: [registry],
    }),
    passivations: new Counter({
      name: 'parley_actor_passivations_total',
      help: 'Session actors dropped from memory, by reason',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    turns: new Counter({
      name: 'parley_turns_total',
      help: 'Turns (sends and runs), by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    agentTurns: new Counter({
      name: 'parley_agent_turns_total',
      help: 'Turns (sends and runs), by agent and outcome',
      labelNames: ['agent', 'outcome'] as const,
      registers: [registry],
    }),
    tokens: new Counter({
      name: 'parley_tokens_total',
      help: "Model tokens of turns' replies as the provider counted them, by agent and direction (input, output)",
      labelNames: ['agent', 'direction'] as const,
      registers: [registry],
    }),
    modelTokens: new Counter({
      name: 'parley_model_tokens_total',
      help: 'Model tokens of committed replies, by agent, model and kind (input, output, cached_input, reasoning)',
      labelNames: ['agent', 'model', 'kind'] as const,
      registers: [registry],
    }),
    modelCost: new Counter({
      name: 'parley_model_cost_usd_total',
      help: "What committed replies' model calls cost, in US dollars from the agent's pricing, by agent and model",
      labelNames: ['agent', 'model'] as const,
      registers: [registry],
    }),
    budgetRefusals: new Counter({
      name: 'parley_budget_refusals_total',
      help: 'Model calls refused because the budget holding the session was spent, by agent',
      labelNames: ['agent'] as const,
      registers: [registry],
    }),
    timeToFirstToken: new Histogram({
      name: 'parley_time_to_first_token_seconds',
      help: "Time from the start of a turn to the first text of the model's reply, by agent",
      labelNames: ['agent'] as const,
      buckets: latencyBuckets,
      registers: [registry],
    }),
    turnDuration: new Histogram({
      name: 'parley_turn_duration_seconds',
      help: 'Time from the start of a turn to its committed reply',
      buckets: latencyBuckets,
      registers: [registry],
    }),
    providerDuration: new Histogram({
      name: 'parley_provider_duration_seconds',
      help: 'Model call latency, by provider and outcome',
      labelNames: ['provider', 'outcome'] as const,
      buckets: latencyBuckets,
      registers: [registry],
    }),
    toolCalls: new Counter({
      name: 'parley_tool_calls_total',
      help: 'Tool calls, by tool (unknown for a name the agent does not have) and outcome (ok, error)',
      labelNames: ['tool', 'outcome'] as const,
      registers: [registry],
    }),
    toolDuration: new Histogram({
      name: 'parley_tool_duration_seconds',
      help: 'Tool call latency, by tool',
      labelNames: ['tool'] as const,
      buckets: latencyBuckets,
      registers: [registry],
    }),
  };
}

export type ActorMetrics = ReturnType<typeof createActorMetrics>;
