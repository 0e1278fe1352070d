import { describe, expect, it } from 'bun:test';
import { pathOf } from '../../src/server/app.ts';

describe('pathOf', () => {
  it('gives the URL parser’s pathname for plain and unusual request URLs', () => {
    const urls = [
      'http://127.0.0.1:8787/hooks/ep_01kv',
      'http://127.0.0.1:8787/agent/v1/events?limit=25&cursor=abc',
      'http://local/',
      'http://local',
      'http://local?x=1',
      'http://local/agent/v1/../v1/events',
      'http://local/agent/v1/./events',
      'http://local/hooks/%2e%2e/agent/v1/events',
      'http://local/hooks/ep%5F1',
      'http://local/agent\\v1\\events',
      'http://local/agent/v1/openapi.json',
      'https://relay.example.com:443/flow/lifecycle?shop=a',
      // Absolute-form request targets reach fetch as they were sent (test/relay/direct-handoff-edges.test.ts
      // sends one over a raw socket): a query or fragment may come before any slash.
      'http://evil?x=/hooks/ep_1',
      'http://evil?/agent/v1/events',
      'http://evil:8080?x=/agent/v1/events',
      'HTTP://evil?x=/hooks/ep_1',
      'http://u:p@evil?x=/hooks/ep_1',
      'http://evil#/hooks/ep_1',
    ];
    for (const u of urls) expect([u, pathOf(u)]).toEqual([u, new URL(u).pathname]);
  });
});
