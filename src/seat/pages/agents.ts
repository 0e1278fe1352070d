/**
 * Agents: the store's grants, issuing one (tier, lifetime, label; its token shown once), revoking one, and what each
 * did (its audit rows). Issuing and revoking are human-only and no contract operation: they are the admin command's
 * ops functions (src/ops/grants.ts), audited as the human's action (src/ops/human-audit.ts). The next issue's OAuth
 * consent issues through the same function (issueHumanGrant).
 */
import { AppError, ERROR_CODES } from '../../contract/errors.ts';
import { TIER_LABELS, TIER_NAMES } from '../../contract/scopes.ts';
import type { Core } from '../../core.ts';
import { issueHumanGrant, LABEL_MAX_LENGTH, listGrants, revokeGrant, type GrantRequest } from '../../ops/grants.ts';
import { auditAdmin } from '../../ops/human-audit.ts';
import { field, html, postForm, section, shownOnce, table, when, type Html } from '../html.ts';
import type { Human, PageResult, SeatContext, SeatPage } from '../types.ts';
import { auditSection } from './audit.ts';

/**
 * Issues a grant of the human's store, as the human: this page's form (the OAuth consent issues through the same
 * function, src/oauth/authorization.ts). Checked, issued and audited by issueHumanGrant; throws AppError.
 */
export function issueAgentGrant(core: Core, human: Human, req: GrantRequest) {
  return issueHumanGrant(core, human, req);
}

/**
 * Revokes a grant of the human's store only (an id of another store's grant is not found), audited as the human's.
 * A grant already revoked is left as it is, with no second row: a form sent twice is one change.
 */
export async function revokeAgentGrant(core: Core, human: Human, grantId: string) {
  const { store } = human;
  const grant = (await listGrants(core, store.shopDomain)).find((g) => g.grantId === grantId);
  if (grant?.state === 'revoked') return grant;
  return auditAdmin(
    core,
    human.actor,
    'revokeGrant',
    async () => {
      if (!grant) throw new AppError('not_found', 'No such grant in this store.');
      return revokeGrant(core, grantId);
    },
    (g) => ({ storeId: store.id, targetId: g.grantId, transition: 'revoked' }),
    async () => store.id,
    human.face,
  );
}

const DONE: Record<string, string> = { revoked: 'The grant was revoked: its next call is refused.' };

const link = (ctx: SeatContext, query = '') => `${ctx.base}/agents${query ? `?${query}` : ''}`;

export const page: SeatPage = {
  path: '/agents',
  title: 'Agents',
  async get(ctx) {
    const grantId = ctx.url.searchParams.get('grant');
    if (grantId) return grantHistory(ctx, grantId);
    return overview(ctx);
  },
  async post(ctx) {
    const action = field(ctx, 'action');
    try {
      if (action === 'issue') {
        const g = await issueAgentGrant(ctx.core, ctx.human, { tier: field(ctx, 'tier') ?? '', ttl: field(ctx, 'ttl') ?? '', label: field(ctx, 'label') });
        return issued(ctx, g);
      }
      if (action === 'revoke') {
        await revokeAgentGrant(ctx.core, ctx.human, field(ctx, 'grantId') ?? '');
        return { redirect: link(ctx, 'done=revoked') };
      }
    } catch (err) {
      if (!(err instanceof AppError) || err.code === 'internal_error') throw err;
      return overview(ctx, html`<div role="alert"><p><strong>Not done</strong> (${err.code}): ${err.message}</p></div>`, ERROR_CODES[err.code].status);
    }
    return { title: 'Agents', status: 400, html: html`<p role="alert">This form is not one of this page's.</p>`.markup };
  },
};

async function overview(ctx: SeatContext, error?: Html, status?: number): Promise<PageResult> {
  const grants = await listGrants(ctx.core, ctx.human.store.shopDomain);
  const done = DONE[ctx.url.searchParams.get('done') ?? ''];
  const rows = grants.map((g) => [
    html`<a href="${link(ctx, `grant=${encodeURIComponent(g.grantId)}`)}">${g.label}</a>`,
    html`<code>${g.grantId}</code>`,
    g.tier,
    g.state,
    when(g.expiresAt),
    g.state === 'active' ? postForm(ctx, link(ctx), { action: 'revoke', grantId: g.grantId }, 'Revoke') : when(g.revokedAt),
  ]);
  const v = (name: string, fallback: string) => (error ? (field(ctx, name) ?? fallback) : fallback);
  const issueForm = postForm(
    ctx,
    link(ctx),
    { action: 'issue' },
    'Issue grant',
    html`<fieldset><legend>Tier</legend>${TIER_NAMES.map(
      (t) =>
        html`<p><input type="radio" id="t-${t}" name="tier" value="${t}"${t === v('tier', 'observer') ? html` checked` : ''}> <label for="t-${t}">${TIER_LABELS[t]}</label></p>`,
    )}</fieldset><p><label for="g-ttl">Lifetime (e.g. 8h, 7d; at most 90d)</label><br><input id="g-ttl" name="ttl" value="${v('ttl', '8h')}" required></p><p><label for="g-label">Label: who or what it is for</label><br><input id="g-label" name="label" maxlength="${LABEL_MAX_LENGTH}" value="${v('label', '')}"></p>`,
  );
  return {
    title: 'Agents',
    ...(status ? { status } : {}),
    html: html`<p>Agents act in this store only through a grant you issue: a tier of scopes, for a limited time. Only a person can issue or revoke one.</p>${
      done ? html`<p role="status">${done}</p>` : ''
    }${error ?? ''}${table('Grants', ['Label', 'Id', 'Tier', 'State', 'Expires', 'Revoke'], rows)}${section(ctx, 'Issue a grant', issueForm)}`.markup,
  };
}

function issued(ctx: SeatContext, g: Awaited<ReturnType<typeof issueAgentGrant>>): PageResult {
  return {
    title: 'Grant issued',
    status: 201,
    // The token is in this answer only (never redirected to, never in a URL); every seat answer is no-store.
    html: html`${section(
      ctx,
      `${g.tier} grant`,
      html`<p><strong>Copy the token now: it is shown this once and cannot be read again.</strong> Give it to the agent as its bearer token; it expires ${when(g.expiresAt)}.</p>${shownOnce(
        ctx,
        'token',
        'Grant token',
        g.token,
      )}<p>Scopes: ${g.scopes.join(', ')}.</p>`,
    )}<p><a href="${link(ctx, `grant=${encodeURIComponent(g.grantId)}`)}">What this grant does</a> · <a href="${link(ctx)}">All grants</a></p>`.markup,
  };
}

async function grantHistory(ctx: SeatContext, grantId: string): Promise<PageResult> {
  const grant = (await listGrants(ctx.core, ctx.human.store.shopDomain)).find((g) => g.grantId === grantId);
  if (!grant)
    return {
      title: 'Grant',
      status: 404,
      html: html`<p role="alert">No such grant in this store.</p><p><a href="${link(ctx)}">All grants</a></p>`.markup,
    };
  const cursor = ctx.url.searchParams.get('cursor') ?? '';
  const { body, status } = await auditSection(ctx, { grantId, cursor }, (q) => link(ctx, `grant=${encodeURIComponent(grantId)}&${q}`));
  return {
    title: grant.label,
    status,
    html: html`${table(
      'Grant',
      ['Field', 'Value'],
      [
        ['Id', html`<code>${grant.grantId}</code>`],
        ['Tier', grant.tier],
        ['Scopes', grant.scopes.join(', ')],
        ['State', grant.state],
        ['Issued', when(grant.createdAt)],
        ['Expires', when(grant.expiresAt)],
      ],
    )}${grant.state === 'active' ? postForm(ctx, link(ctx), { action: 'revoke', grantId: grant.grantId }, 'Revoke') : ''}${section(ctx, 'What it did', body)}<p><a href="${link(ctx)}">All grants</a></p>`
      .markup,
  };
}
