// GET /console, the operator console (docs/guides/humans.md#the-operator-console): a page with no inline
// script or style, and GET /console.js, its one ES module (packages/console, the client included), bundled
// by esbuild on the first request as /widget.js is, kept in memory plain and gzipped, each with its ETag. The
// page holds no secret: the operator signs in with an API key, which the module keeps in the tab's
// sessionStorage and sends to this origin only (connect-src 'self'). A failed build answers 503 with
// Retry-After and is not tried again before then.
import { join } from 'node:path';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../errors.ts';
import { pageHeaders, policyHeader } from '../server/page-headers.ts';
import { acceptsGzip, buildWidget, etagMatches, WIDGET_RETRY_MS, type WidgetBundle } from './widget.ts';

export const CONSOLE_ENTRY = join(import.meta.dirname, '../../../packages/console/src/index.ts');

/**
 * Only this origin's module, and requests to this origin (the API). Its styles are a constructed stylesheet
 * the module adopts, which the policy does not govern; nothing else loads.
 */
export const CONSOLE_CSP = policyHeader({ 'script-src': ["'self'"], 'connect-src': ["'self'"] });

export const CONSOLE_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Parley console</title>
<script type="module" src="/console.js"></script>
</head>
<body>
<div id="console"><noscript>The operator console needs JavaScript.</noscript></div>
</body>
</html>
`;

export interface ConsoleRoutesOptions {
  /** The module to bundle (a test's broken one); default the console's. */
  entry?: string;
  /** The clock that times the pause after a failed build (a test's); default Date.now. */
  now?: () => number;
}

export const consoleRoutes: FastifyPluginAsyncZod<ConsoleRoutesOptions> = async (app, options) => {
  const entry = options.entry ?? CONSOLE_ENTRY;
  const now = options.now ?? Date.now;
  let built: Promise<WidgetBundle> | undefined;
  let failedAt: number | undefined;
  const bundle = (): Promise<WidgetBundle> => {
    if (failedAt !== undefined) {
      const waitMs = failedAt + WIDGET_RETRY_MS - now();
      if (waitMs > 0) return Promise.reject(unavailable(waitMs));
      failedAt = undefined;
    }
    built ??= buildWidget(entry).catch((err: unknown) => {
      built = undefined;
      failedAt = now();
      throw unavailable(WIDGET_RETRY_MS, err);
    });
    return built;
  };

  app.get('/console', { schema: { hide: true } }, async (_request, reply) =>
    pageHeaders(reply, CONSOLE_CSP)
      .header('cache-control', 'no-cache')
      .type('text/html; charset=utf-8')
      .send(CONSOLE_PAGE),
  );

  app.get(
    '/console.js',
    {
      schema: {
        hide: true,
        headers: z.object({
          'if-none-match': z.string().optional(),
          'accept-encoding': z.string().optional(),
        }),
      },
    },
    async (request, reply) => {
      const code = await bundle().catch((err: unknown) => {
        reply.header('cache-control', 'no-store');
        throw err;
      });
      const gzip = acceptsGzip(request.headers['accept-encoding']);
      const etag = gzip ? code.gzipEtag : code.etag;
      reply.header('cache-control', 'no-cache').header('vary', 'accept-encoding').header('etag', etag);
      // Same origin only: the console's module is not for other pages.
      reply.header('x-content-type-options', 'nosniff');
      if (etagMatches(request.headers['if-none-match'], etag)) return reply.code(304).send();
      reply.type('text/javascript; charset=utf-8');
      return gzip ? reply.header('content-encoding', 'gzip').send(code.gzip) : reply.send(code.code);
    },
  );
};

/** 503 service_unavailable, to retry after `waitMs`; `cause` (the build's error) is logged with the first. */
function unavailable(waitMs: number, cause?: unknown): AppError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new AppError('service_unavailable', 'The operator console could not be built; retry later.', {
    headers: { 'retry-after': String(seconds) },
    cause,
  });
}
