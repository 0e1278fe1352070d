/** The fake Shopify Admin GraphQL server (the test fixture) as its own process: every call answered after --delay-ms. */
import { parseArgs } from 'node:util';
import { b, startFakeShopify } from '../../test/fixtures/fake-shopify.ts';

const { values } = parseArgs({ options: { 'delay-ms': { type: 'string', default: '2' }, calls: { type: 'string', default: '100000' } } });
const fake = startFakeShopify();
// The fixture answers from a script, one behaviour per call; queue a slow reply for every call expected.
fake.script(...Array.from({ length: Number(values.calls) }, () => b.slow(Number(values['delay-ms']))));
process.stdout.write(`${JSON.stringify({ ready: true, pid: process.pid, url: fake.url })}\n`);
await new Promise<void>((r) => process.once('SIGTERM', () => r()).once('SIGINT', () => r()));
process.stdout.write(`${JSON.stringify({ requests: fake.requests.length, rejected: fake.rejected.length })}\n`);
await fake.stop();
process.exit(0);
