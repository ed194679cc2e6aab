// Whether the demo page is served, what is said about it at start, and the bounds its conversations live
// under (docs/guides/embedding.md#the-demo-page). By default it is served only where nobody else can reach it
// and it costs nothing: one SQLite process listening on loopback, whose `demo` agent is `scripted`. Anywhere
// else PARLEY_DEMO=true serves it, with a warning. The bounds hold whether or not the page is served now.
import type { Redis } from 'ioredis';
import type { Catalogue } from '../../agents/catalogue.ts';
import type { Config } from '../../config.ts';
import type { FileQuota } from '../../store/store.ts';
import { HourlyCap } from '../server/hourly-cap.ts';
import { DEMO_AGENT, DEMO_TENANT } from './demo.ts';

/** Files one demo conversation keeps at most; its bytes are an eighth of the tenant's. */
export const DEMO_CONVERSATION_FILES = 10;

export interface DemoSetup {
  serve: boolean;
  /** The `demo` agent's provider (`scripted`, or a model's), which the page names. */
  provider: string | undefined;
  /** Said at start (a warning): the page is served where it exposes something, or not served though asked. */
  warning: string | null;
  /** The conversations the page starts, every client together, an hour. */
  conversations: HourlyCap;
  /** The bounds of the demo tenant's conversations on the public family (public/tenant-bounds.ts). */
  bounds: {
    tenantId: string;
    maxMessageChars: number;
    maxMessages: number;
    sends: HourlyCap;
    fileQuota: FileQuota;
  };
  /** Demo conversations are deleted by the sweep this long after they started. */
  retention: { tenantId: string; afterMs: number };
}

export function demoSetup(config: Config, catalogue: Catalogue, redis: Redis | undefined): DemoSetup {
  const { demo } = config;
  const agent = catalogue.get(DEMO_AGENT);
  const serve =
    agent !== undefined &&
    (demo.serve === 'on' || (demo.serve === 'default' && agent.provider === 'scripted'));
  let warning: string | null = null;
  if (demo.serve === 'on' && !agent) {
    warning = `PARLEY_DEMO is on, but the catalogue has no agent "${DEMO_AGENT}": /demo is not served.`;
  } else if (serve && demo.serve === 'on') {
    const risks = [
      ...(config.loopback
        ? []
        : [`anyone who reaches ${config.host}:${config.port} may start conversations`]),
      ...(agent?.provider === 'scripted' ? [] : [`each demo send is a call to the ${agent?.provider} model`]),
    ];
    if (risks.length > 0) {
      warning = `PARLEY_DEMO=true serves /demo: ${risks.join(', and ')} (at most ${demo.conversationsPerHour} conversations and ${demo.sendsPerHour} sends an hour in all).`;
    }
  }
  const fileBytes = demo.fileBytes;
  return {
    serve,
    provider: agent?.provider,
    warning,
    conversations: new HourlyCap({
      name: 'demo_conversations',
      limit: demo.conversationsPerHour,
      ...(redis ? { redis } : {}),
    }),
    bounds: {
      tenantId: DEMO_TENANT,
      maxMessageChars: demo.maxMessageChars,
      maxMessages: demo.maxMessages,
      sends: new HourlyCap({ name: 'demo_sends', limit: demo.sendsPerHour, ...(redis ? { redis } : {}) }),
      // No room at all when the tenant has none: every upload is refused.
      fileQuota: {
        conversationFiles:
          fileBytes === 0 ? 0 : Math.min(config.fileQuota.conversationFiles, DEMO_CONVERSATION_FILES),
        conversationBytes: Math.min(config.fileQuota.conversationBytes, Math.ceil(fileBytes / 8)),
        tenantBytes: fileBytes,
      },
    },
    retention: { tenantId: DEMO_TENANT, afterMs: demo.retentionMs },
  };
}
