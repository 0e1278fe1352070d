/**
 * Log injection: whatever a caller controls (here an error code thrown inside MCP `execute`) reaches the log as
 * one line with visible escapes, never a forged second line or a raw terminal escape. Checked on the real
 * stderr sink of `serve` (a child process) and on the log of a real MCP server.
 */
import { describe, expect, it } from 'bun:test';
import { errorLine, escapeLogLine } from '../../src/lib/log.ts';
import { execute, startMcpServer } from '../mcp/harness.ts';

const FORGED = 'boom\n2026-01-01T00:00:00.000Z ERROR forged line\r\u001b[31mred\u001b[0m\u2028tail\u0000';
const SLOW = 30_000;

describe('escapeLogLine', () => {
  it('turns control characters, ESC and line separators into visible escapes; leaves the rest alone', () => {
    expect(escapeLogLine(FORGED)).toBe('boom\\n2026-01-01T00:00:00.000Z ERROR forged line\\r\\x1b[31mred\\x1b[0m\\u2028tail\\u0000');
    expect(escapeLogLine('plain text, ünïcode and a \\ backslash')).toBe('plain text, ünïcode and a \\ backslash');
  });
});

describe('errorLine', () => {
  it("keeps a thrown error's class and first line, never a driver's bound values after `params:`", () => {
    const err = new Error('Failed query: insert into "shopify_webhooks" values ($1, $2)\nparams: shpat_CANARY,{"email":"a@b.c"}');
    expect(errorLine(err)).toBe('Error: Failed query: insert into "shopify_webhooks" values ($1, $2)');
    expect(errorLine(new TypeError('bad params: shpat_CANARY'))).toBe('TypeError: bad ');
    expect(errorLine('shpat_CANARY')).toBe('non-error thrown');
  });
});

describe('the stderr sink of serve', () => {
  it('writes each info, warn and error event as exactly one line with no raw escape', async () => {
    const script = `
      import { stderrLog } from ${JSON.stringify(new URL('../../src/lib/log.ts', import.meta.url).pathname)};
      const log = stderrLog('info');
      const forged = ${JSON.stringify(FORGED)};
      log.info('info ' + forged);
      log.warn('warn ' + forged);
      log.error('error ' + forged);
    `;
    const child = Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'pipe' });
    const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
    expect(code).toBe(0);
    expect(stderr).not.toContain('\u001b');
    expect(stderr).not.toContain('\r');
    expect(stderr).not.toContain('\u2028');
    const lines = stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines.length).toBe(3);
    for (const [i, level] of ['info', 'warn', 'error'].entries()) {
      expect(lines[i]).toContain(`${level} boom\\n2026-01-01T00:00:00.000Z ERROR forged line\\r\\x1b[31mred`);
    }
  });
});

describe('an error code thrown inside MCP execute', () => {
  it(
    'reaches the server log on one line, escaped',
    async () => {
      const s = await startMcpServer();
      try {
        const admin = await s.grant('admin_assistant');
        const client = await s.connect(admin.token);
        const r = await execute(client, `const e = new Error('x'); e.name = 'ApiError'; e.code = ${JSON.stringify(FORGED)}; throw e;`);
        expect(r.isError).toBe(true);
        const line = s.env.log.lines.find((l) => l.includes('mcp execute'));
        expect(line).toBeDefined();
        expect(line).toContain('outcome=boom\\n2026-01-01T00:00:00.000Z ERROR forged line');
        // biome-ignore lint/suspicious/noControlCharactersInRegex: no control character may reach a log line
        expect(line).not.toMatch(/[\u0000-\u001f\u2028]/);
      } finally {
        await s.stop();
      }
    },
    SLOW,
  );
});
