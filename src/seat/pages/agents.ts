/**
 * Agents: the store's grants, issuing one (tier, lifetime, label; its token shown once), revoking one, and what each
 * did (its audit rows). Issuing and revoking are human-only and no contract operation: they are the admin command's
 * ops functions (src/ops/grants.ts), audited as the human's action (src/ops/human-audit.ts). The next issue's OAuth
 * consent issues through the same function (issueHumanGrant). "Approve a connection" decides an agent's OAuth request
 * by the code its consent page shows (src/seat/consent.ts), with the consent's facts and choices (consent-view.ts).
 */
import { AppError } from '../../contract/errors.ts';
import { CONNECT_CODE_MISSES } from '../../contract/limits.ts';
import { TIER_LABELS, TIER_NAMES } from '../../contract/scopes.ts';
import type { Core } from '../../core.ts';
import { issueHumanGrant, LABEL_MAX_LENGTH, listGrants, revokeGrant, type GrantRequest } from '../../ops/grants.ts';
import { auditAdmin } from '../../ops/human-audit.ts';
import { approveAuthorization, type AuthorizationRequest, denyAuthorization, findAuthorization } from '../../oauth/authorization.ts';
import { choiceFields, choiceOf, type ConsentChoice, decisionButtons, defaultChoice, notDone, refusalOf, requestFacts } from '../consent-view.ts';
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

const DONE: Record<string, string> = {
  revoked: 'The grant was revoked: its next call is refused.',
  connected: "The connection was approved: the agent's app receives its grant when its browser page goes on (within seconds).",
  refused: "The connection was denied: the agent's app is told so.",
};

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
      if (action === 'connect') return await connectRequest(ctx);
      if (action === 'connect-decide') return await connectDecision(ctx);
      if (action === 'revoke') {
        await revokeAgentGrant(ctx.core, ctx.human, field(ctx, 'grantId') ?? '');
        return { redirect: link(ctx, 'done=revoked') };
      }
    } catch (err) {
      const refusal = refusalOf(err);
      if (!refusal) throw err;
      return overview(ctx, notDone(refusal.code, refusal.message), refusal.status);
    }
    return { title: 'Agents', status: 400, html: html`<p role="alert">This form is not one of this page's.</p>`.markup };
  },
};

/**
 * "Approve a connection": the user code an agent's consent page shows (when nobody was signed in there), looked up
 * and shown with the consent's facts and choices. A code that names no pending request is said plainly.
 */
async function connectRequest(ctx: SeatContext): Promise<PageResult> {
  const locked = await codesLocked(ctx);
  if (locked) return locked;
  const code = field(ctx, 'code') ?? '';
  const ar = code ? await findAuthorization(ctx.core, code) : null;
  if (!ar) {
    missedCode(ctx);
    return overview(ctx, notDone('not_found', 'No connection request has this code. Check it on the agent’s page; it lasts 10 minutes.'), 404);
  }
  if (ar.status !== 'pending') return overview(ctx, notDone('conflict', `This connection request is ${ar.status}: there is nothing left to decide.`), 409);
  return connectPage(ctx, ar, defaultChoice(ar));
}

/** Per store: when its window of wrong connection codes began, and how many it has had (CONNECT_CODE_MISSES). */
const codeMisses = new Map<string, { from: number; count: number }>();

/** Counts a code that named no request against the human's store. */
function missedCode(ctx: SeatContext): void {
  const now = ctx.core.clock.now();
  const m = codeMisses.get(ctx.human.store.id);
  if (!m || now - m.from >= CONNECT_CODE_MISSES.windowMs) codeMisses.set(ctx.human.store.id, { from: now, count: 1 });
  else m.count++;
}

/** The 429 page once the store's wrong codes reached their limit in this window; null while it may try. */
async function codesLocked(ctx: SeatContext): Promise<PageResult | null> {
  const m = codeMisses.get(ctx.human.store.id);
  const left = m ? m.from + CONNECT_CODE_MISSES.windowMs - ctx.core.clock.now() : 0;
  if (!m || left <= 0 || m.count < CONNECT_CODE_MISSES.perStore) return null;
  const minutes = Math.ceil(left / 60_000);
  return overview(
    ctx,
    notDone('rate_limited', `${m.count} codes named no connection request; try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`),
    429,
  );
}

/** The decision on a connection, as the human of this page; a refusal shows the choices again with what was wrong. */
async function connectDecision(ctx: SeatContext): Promise<PageResult> {
  const code = field(ctx, 'code') ?? '';
  const chosen = choiceOf(ctx.form);
  const decision = field(ctx, 'decision');
  const locked = await codesLocked(ctx);
  if (locked) return locked;
  try {
    if (decision === 'deny') {
      await denyAuthorization(ctx.core, ctx.human, code);
      return { redirect: link(ctx, 'done=refused') };
    }
    if (decision === 'approve') {
      await approveAuthorization(ctx.core, ctx.human, code, { ...chosen, label: chosen.label || undefined });
      return { redirect: link(ctx, 'done=connected') };
    }
  } catch (err) {
    const refusal = refusalOf(err);
    if (!refusal) throw err;
    const ar = await findAuthorization(ctx.core, code);
    if (!ar) missedCode(ctx);
    const problem = notDone(refusal.code, refusal.message);
    return ar?.status === 'pending' ? connectPage(ctx, ar, chosen, problem, refusal.status) : overview(ctx, problem, refusal.status);
  }
  const ar = await findAuthorization(ctx.core, code);
  // Neither Approve nor Deny: still a look-up of the code, so a code that names nothing counts as a miss here too.
  if (!ar) missedCode(ctx);
  if (ar?.status !== 'pending') return overview(ctx, notDone('not_found', 'No pending connection request has this code.'), 404);
  return connectPage(ctx, ar, chosen, notDone('invalid_input', 'Choose Approve or Deny.'), 400);
}

/** A connection request as this page shows it: the consent's facts and choices, Approve and Deny for its code. */
function connectPage(ctx: SeatContext, ar: AuthorizationRequest, chosen: ConsentChoice, problem?: Html, status?: number): PageResult {
  const form = postForm(ctx, link(ctx), { action: 'connect-decide', code: ar.userCode }, decisionButtons, choiceFields(ar, chosen));
  return {
    title: 'Approve a connection',
    ...(status ? { status } : {}),
    html: html`${problem ?? ''}<p>Code <code>${ar.userCode}</code>: an agent's app asks for access to hookrelay in ${ctx.human.store.shopDomain}. What you approve is a grant you can revoke here at any time.</p>${section(
      ctx,
      'The request',
      requestFacts(ar),
    )}${section(ctx, 'Your decision', form)}<p><a href="${link(ctx)}">Back to Agents</a></p>`.markup,
  };
}

/** A grant's client as the person reads it: its name, unverified, and its metadata document's URL; a dash for none. */
const clientCell = (client: { id: string; name: string } | null) =>
  client ? html`${client.name} <span class="badge warn">unverified</span><br><code>${client.id}</code>` : html`—`;

async function overview(ctx: SeatContext, error?: Html, status?: number): Promise<PageResult> {
  const grants = await listGrants(ctx.core, ctx.human.store.shopDomain);
  const done = DONE[ctx.url.searchParams.get('done') ?? ''];
  const rows = grants.map((g) => [
    html`<a href="${link(ctx, `grant=${encodeURIComponent(g.grantId)}`)}">${g.label}</a>`,
    html`<code>${g.grantId}</code>`,
    clientCell(g.client),
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
  const connectForm = postForm(
    ctx,
    link(ctx),
    { action: 'connect' },
    'Look up the request',
    html`<p>An agent's app that connects by URL shows a code on its consent page when nobody is signed in there.</p><p><label for="c-code">Code shown on the agent's page (e.g. WDJB-MJHT)</label><br><input id="c-code" name="code" autocomplete="off" spellcheck="false" maxlength="20" value="${v('code', '')}" required></p>`,
  );
  return {
    title: 'Agents',
    ...(status ? { status } : {}),
    html: html`<p>Agents act in this store only through a grant you issue: a tier of scopes, for a limited time. Only a person can issue or revoke one.</p>${
      done ? html`<p role="status">${done}</p>` : ''
    }${error ?? ''}${table('Grants', ['Label', 'Id', 'Client', 'Tier', 'State', 'Expires', 'Revoke'], rows)}${section(ctx, 'Approve a connection', connectForm)}${section(ctx, 'Issue a grant', issueForm)}`
      .markup,
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
        ['Client', clientCell(grant.client)],
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
