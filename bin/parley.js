#!/usr/bin/env node
// The `parley` command (and `npm start`, as `parley serve`). Node strips the TypeScript types itself; the
// compile cache, enabled before the sources load, keeps every start after the first short.
import { enableCompileCache } from 'node:module';

enableCompileCache();
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2));
