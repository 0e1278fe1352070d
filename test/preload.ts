// Test preload: keep the environment of the developer's shell out of the tests.
delete process.env.HOOKRELAY_DATA_DIR;
delete process.env.HOOKRELAY_SECRET_KEY;
delete process.env.HOOKRELAY_SHOPIFY_ADMIN_URL;
delete process.env.HOOKRELAY_PUBLIC_URL;
