/** The seat's one HTML template: every interpolated value escaped unless it is markup the template made. */
import { describe, expect, it } from 'bun:test';
import { html, problem, queryOf, trusted } from '../../src/seat/html.ts';

describe('html', () => {
  it('escapes text and attribute values, joins lists, renders nothing for null, undefined and false', () => {
    const name = `"><script>alert(1)</script>'`;
    const out = html`<a title="${name}">${name}</a>${[name, 1, null, undefined, false]}`.markup;
    expect(out).toBe(
      '<a title="&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;&#39;">&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;&#39;</a>&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;&#39;1',
    );
    expect(out).not.toContain('<script');
  });

  it('keeps markup it made (nested templates, trusted constants) and escapes a string that only looks like markup', () => {
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`<p>${inner}${trusted('<br>')}${'<br>'}</p>`.markup).toBe('<p><b>&#60;i&#62;</b><br>&#60;br&#62;</p>');
    // An object that merely has a `text` field is not markup.
    expect(html`${{ text: '<x>' } as unknown as string}`.markup).toBe('[object Object]');
  });

  it('builds query strings of the values given, encoded', () => {
    expect(queryOf({ a: 'x y', b: undefined, c: '', d: '&<' })).toBe('?a=x+y&d=%26%3C');
    expect(queryOf({})).toBe('');
  });

  it('says a contract refusal plainly: its reason, code, recommended action, fields and support code, escaped', () => {
    const page = problem({
      status: 402,
      body: {
        refusal: { code: 'plan_capacity_exhausted', reason: 'Cap <reached>', recommendedAction: 'Ask a human to <upgrade>' },
        error: { code: 'plan_capacity_exhausted', message: 'm', supportCode: 'sup-1', details: [{ path: 'body.x', message: '<bad>' }] },
      },
    }).markup;
    expect(page).toContain('<strong>Cap &#60;reached&#62;</strong> <span class="code">(402 plan_capacity_exhausted)</span>');
    expect(page).toContain('What to do: Ask a human to &#60;upgrade&#62;');
    expect(page).toContain('<li>body.x: &#60;bad&#62;</li>');
    expect(page).toContain('<code>sup-1</code>');
  });
});
