// Test preload: keep the environment of the developer's shell out of the tests, and give tests that start
// servers or processes room on a loaded CI machine (bunfig.toml has no test timeout key; the default is 5 s).
import { afterAll, setDefaultTimeout } from 'bun:test';
import { dropTestSchemas } from './fixtures/storage.ts';

setDefaultTimeout(20_000);
// The PostgreSQL pass leaves hundreds of schemas: dropping them on a loaded CI machine once took past 20 s.
afterAll(dropTestSchemas, 180_000);
delete process.env.HOOKRELAY_DATA_DIR;
delete process.env.HOOKRELAY_SECRET_KEY;
delete process.env.HOOKRELAY_SHOPIFY_ADMIN_URL;
delete process.env.HOOKRELAY_PUBLIC_URL;
delete process.env.HOOKRELAY_SHOPIFY_APP_SECRET;
delete process.env.SHOPIFY_API_SECRET;
delete process.env.HOOKRELAY_MCP_CODE_MODE;
delete process.env.HOOKRELAY_MCP_ALLOWED_ORIGINS;
